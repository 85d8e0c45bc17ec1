/**
 * `router route MODEL [--account A] [--format F]`: how a call for MODEL (by account A,
 * default the caller) would be served now (`GET /x-route`), without making it: whether
 * the account may call it, MODEL_MAPPER and LEVEL_MAPPER, the Levels in the order a
 * call tries them with their switch-over state, and each Level's candidate keys.
 */
import { UsageError } from "./flags.ts";
import { remoteCommand, requirePositional, stringFlag } from "./client.ts";
import { formatRecord, formatTable, print, printJson } from "./output.ts";
import type { RouteExplanation } from "../wire/route.ts";

/** The client APIs a route can be explained for (`openai` is Chat Completions). */
const FORMATS = ["openai", "responses", "anthropic", "gemini"];

/** `rpm 7, tpm 1000`: the members that are set. */
const members = (object: Record<string, unknown>, skip: string[] = []) =>
  Object.entries(object)
    .filter(([name, value]) => !skip.includes(name) && value !== null && value !== undefined)
    .map(([name, value]) => `${name} ${typeof value === "object" ? JSON.stringify(value) : String(value)}`)
    .join(", ") || "none";

export const routeCommand = remoteCommand({
  name: "route",
  description: "Explain how a call for MODEL would be served now, without making it (owners and managers)",
  args: {
    model: { type: "positional", description: "The model a client would ask for (required)", required: false },
    account: { type: "string", description: "The calling account (ID, name or email; default you)", valueHint: "account" },
    format: { type: "string", description: `The client's API: ${FORMATS.join(", ")} (default openai, Chat Completions)`, valueHint: "format" },
  },
  check(args) {
    requirePositional(args, "model");
    const format = stringFlag(args, "format");
    if (format !== undefined && !FORMATS.includes(format)) throw new UsageError(`--format must be one of ${FORMATS.join(", ")}, got "${format}"`);
  },
  async run({ args, client, json }) {
    const { body: r } = await client.request<RouteExplanation>("GET", "/x-route", {
      query: { model: requirePositional(args, "model"), account: stringFlag(args, "account"), format: stringFlag(args, "format") },
    });
    if (json) return printJson(r);
    print(
      formatRecord([
        ["Model", r.model],
        ["Account", `${r.account.Name} #${r.account.ID}`],
        ["Allowed", r.allowed ? "yes" : `no: refused by ${r.refused_by?.rule}: ${r.refused_by?.message}`],
        ["MODEL_MAPPER", r.model_mapper ? `${r.model_mapper.pattern} -> ${r.model_mapper.target}` : "no entry matches"],
        ["Effective model", r.effective_model],
        ["LEVEL_MAPPER", r.level_mapper ? `${r.level_mapper.pattern} -> Level ${r.level_mapper.level}` : "no entry matches (Level 1)"],
        ["Level", r.level],
        ["Served now", r.served ? "yes" : "no key can take the call now"],
        ["Price", r.price ? members(r.price) : "no ChatPricing entry"],
        ["Limits", r.limits.length ? r.limits.map((l) => `${l.applies_to}: ${members(l, ["applies_to"])}`).join("; ") : "none"],
      ]),
    );
    for (const level of r.levels) {
      const state = level.switched ? `switched over${level.backup !== null ? ` to Level ${level.backup}` : ""}` : `not switched${level.backup !== null ? ` (backup Level ${level.backup})` : ""}`;
      print(`\nLevel ${level.level}: ${state}`);
      const withKeys = level.keys.some((k) => k.ID !== undefined);
      print(
        formatTable(
          level.keys.map((k, i) => ({ ...k, n: i + 1 })),
          [
            { header: "#", value: (k) => k.n, align: "right" },
            ...(withKeys ? [{ header: "KEY", value: (k: { ID?: number; Name?: string }) => `${k.Name || "-"} #${k.ID}`, max: 30 }] : []),
            { header: "STATE", value: (k) => k.state },
            { header: "PICKED", value: (k) => (k.would_serve ? "<- this one" : "") },
            { header: "WHY", value: (k) => k.why, max: 70 },
          ],
          "no key in this Level",
        ),
      );
    }
  },
});

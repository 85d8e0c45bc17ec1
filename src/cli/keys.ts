/**
 * `router keys list|add|update|rm|sleep|wake|test`: the upstream provider keys
 * (`/x-keys`, owner only). A provider secret is never printed: lists ask the server
 * for the summary form (PartialKey only), and the full records that writes answer
 * with lose `SecretKey` before anything is shown, `--json` included. Secrets come in
 * from a file or stdin, so they stay out of shell history.
 */
import { readFileSync } from "node:fs";
import type { KeyTestResult, ProviderKeyDeleted, ProviderKeyRecord, ProviderKeySummary } from "../wire/provider-keys.ts";
import { UsageError } from "./flags.ts";
import {
  commandGroup,
  idArgument,
  intFlag,
  jsonObjectFlag,
  readStdin,
  remoteCommand,
  stringFlag,
  checkPageInfo,
  pageInfoArg,
  type Args,
} from "./client.ts";
import { formatRecord, formatTable, pageFooter, print, printJson, printJsonList, time } from "./output.ts";
import { confirmDeletion, yesArg } from "./confirm.ts";

/** A key as the server answers it: the summary, or a full record whose secret is dropped before printing. */
type KeySummary = ProviderKeySummary & Partial<ProviderKeyRecord>;

/**
 * Writes are answered with the full record unless they ask for another form: the CLI
 * asks for the record without the opened secret (`edit`), so it never travels back, not
 * even to be dropped before printing.
 */
const WITHOUT_SECRET = { fields: "edit" } as const;

const idArg = { id: { type: "positional", description: "Provider key ID (required)", required: false } } as const;

/** The record without its secret: what every command shows. */
function withoutSecret(record: KeySummary): KeySummary {
  const { SecretKey: _secret, ...rest } = record;
  return rest;
}

function showKey(record: KeySummary, json: boolean): void {
  const safe = withoutSecret(record);
  if (json) return printJson(safe);
  const sleeping = safe.Sleeping ? `yes${safe.SleepReason ? ` (${safe.SleepReason}${safe.SleepUntil ? ` until ${time(safe.SleepUntil)}` : ""})` : ""}` : "no";
  print(
    formatRecord([
      ["ID", safe.ID],
      ["Name", safe.Name],
      ["Level", safe.Level],
      ["Provider", safe.Provider],
      ["Key", safe.PartialKey],
      ["Status", safe.Status ? "enabled" : "disabled"],
      ["Sleeping", sleeping],
      ["Auto-sleep", safe.NoSleep ? "off" : "on"],
      ["Config", safe.config],
      ["Created", time(safe.CreatedAt)],
    ]),
  );
}

const secretArgs = {
  "secret-file": { type: "string", description: "File holding the provider secret (a Vertex service-account JSON file as is)", valueHint: "file" },
  secret: { type: "string", description: "The secret, or - to read it from stdin (a value here stays in shell history)", valueHint: "value|-" },
} as const;

/** The secret from --secret-file, stdin (`--secret -`) or, with a warning, the command line. */
function readSecret(args: Args): string | undefined {
  const file = stringFlag(args, "secret-file");
  const inline = stringFlag(args, "secret");
  if (file !== undefined && inline !== undefined) throw new UsageError("use either --secret-file or --secret, not both");
  let text: string;
  if (file !== undefined) {
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      throw new UsageError(`--secret-file: cannot read ${file}: ${(error as Error).message}`);
    }
  } else if (inline === "-") {
    text = readStdin();
  } else if (inline !== undefined) {
    process.stderr.write("router: warning: --secret leaves the secret in your shell history; prefer --secret-file FILE or --secret - (stdin)\n");
    return inline;
  } else {
    return undefined;
  }
  // A file or a pipe usually ends with a line break that is no part of the secret.
  const secret = text.replace(/[\r\n]+$/, "");
  if (secret === "") throw new UsageError("the provider secret is empty");
  return secret;
}

/** `config` from --config (JSON or @file), with `--type` as its provider_type. */
function configOf(args: Args): Record<string, unknown> | undefined {
  const config = jsonObjectFlag(args, "config");
  const type = stringFlag(args, "type");
  if (type === undefined) return config;
  return { ...config, provider_type: type };
}

const commonWriteArgs = {
  provider: { type: "string", description: "Upstream base URL, https:// (e.g. https://api.openai.com)", valueHint: "url" },
  level: { type: "string", description: "Level the key serves", valueHint: "n" },
  name: { type: "string", description: "A label for the key" },
  type: { type: "string", description: "Provider type: standard, azure or vertex (sets config.provider_type)", valueHint: "type" },
  config: { type: "string", description: "The key's config object as JSON, or @file", valueHint: "json|@file" },
  "auto-sleep": { type: "boolean", description: "Sleep automatically after repeated upstream errors (--no-auto-sleep: never)" },
  ...secretArgs,
} as const;

const listArgs = {
  level: { type: "string", description: "Only keys of this Level", valueHint: "n" },
  provider: { type: "string", description: "Only keys of this upstream URL", valueHint: "url" },
  page: { type: "string", description: "Page, from 1", valueHint: "n" },
  size: { type: "string", description: "Keys per page (default 20, at most 100)", valueHint: "n" },
  ...pageInfoArg,
} as const;

const list = remoteCommand({
  name: "list",
  description: "List provider keys (secrets shown masked)",
  args: listArgs,
  check: (args) => void [intFlag(args, "level"), intFlag(args, "page"), intFlag(args, "size"), checkPageInfo(args)],
  async run({ args, client, json }) {
    const { body, headers } = await client.request<KeySummary[]>("GET", "/x-keys", {
      query: { fields: "summary", level: intFlag(args, "level"), provider: stringFlag(args, "provider"), page: intFlag(args, "page"), size: intFlag(args, "size") },
    });
    if (json) return printJsonList(body.map(withoutSecret), headers, checkPageInfo(args));
    print(
      formatTable(
        body,
        [
          { header: "ID", value: (k) => k.ID, align: "right" },
          { header: "NAME", value: (k) => k.Name, max: 24 },
          { header: "LEVEL", value: (k) => k.Level, align: "right" },
          { header: "PROVIDER", value: (k) => k.Provider, max: 40 },
          { header: "KEY", value: (k) => k.PartialKey, max: 24 },
          { header: "STATUS", value: (k) => (k.Status ? "enabled" : "disabled") },
          { header: "SLEEPING", value: (k) => k.Sleeping },
          { header: "AUTO-SLEEP", value: (k) => (k.NoSleep ? "off" : "on") },
          { header: "CREATED", value: (k) => time(k.CreatedAt) },
        ],
        "no provider keys",
      ),
    );
    const footer = pageFooter(headers);
    if (footer) print(footer);
  },
});

const add = remoteCommand({
  name: "add",
  description: "Add a provider key: --provider URL --level N --secret-file FILE (or --secret - for stdin)",
  args: { ...commonWriteArgs, disable: { type: "boolean", description: "Add the key disabled" } },
  check(args) {
    if (stringFlag(args, "provider") === undefined) throw new UsageError("--provider is required; see --help");
    if (intFlag(args, "level") === undefined) throw new UsageError("--level is required; see --help");
    if (stringFlag(args, "secret-file") === undefined && stringFlag(args, "secret") === undefined) {
      throw new UsageError("the secret is required: --secret-file FILE, or --secret - to read it from stdin");
    }
    configOf(args);
  },
  async run({ args, client, json }) {
    const body: Record<string, unknown> = {
      Provider: stringFlag(args, "provider"),
      Level: intFlag(args, "level"),
      SecretKey: readSecret(args),
      Status: args.disable !== true,
    };
    const name = stringFlag(args, "name");
    if (name !== undefined) body.Name = name;
    if (typeof args["auto-sleep"] === "boolean") body.NoSleep = !args["auto-sleep"];
    const config = configOf(args);
    if (config !== undefined) body.config = config;
    const { body: record } = await client.request<KeySummary>("POST", "/x-keys", { body, query: WITHOUT_SECRET });
    if (json) return printJson(withoutSecret(record));
    print(`added provider key ${record.ID}`);
    showKey(record, false);
  },
});

const update = remoteCommand({
  name: "update",
  description: "Change a provider key's fields (only those given)",
  args: {
    ...idArg,
    ...commonWriteArgs,
    enable: { type: "boolean", description: "Enable the key" },
    disable: { type: "boolean", description: "Disable the key (kept, but no call is routed to it)" },
  },
  check(args) {
    idArgument(args);
    intFlag(args, "level");
    if (args.enable === true && args.disable === true) throw new UsageError("use either --enable or --disable, not both");
    configOf(args);
  },
  async run({ args, client, json }) {
    const body: Record<string, unknown> = {};
    const provider = stringFlag(args, "provider");
    if (provider !== undefined) body.Provider = provider;
    const level = intFlag(args, "level");
    if (level !== undefined) body.Level = level;
    const name = stringFlag(args, "name");
    if (name !== undefined) body.Name = name;
    if (args.enable === true) body.Status = true;
    if (args.disable === true) body.Status = false;
    if (typeof args["auto-sleep"] === "boolean") body.NoSleep = !args["auto-sleep"];
    const config = configOf(args);
    if (config !== undefined) body.config = config;
    const secret = readSecret(args);
    if (secret !== undefined) body.SecretKey = secret;
    if (Object.keys(body).length === 0) throw new UsageError("nothing to change; see --help for the fields");
    const { body: record } = await client.request<KeySummary>("PUT", `/x-keys/${idArgument(args)}`, { body, query: WITHOUT_SECRET });
    if (json) return printJson(withoutSecret(record));
    print(`updated provider key ${record.ID}`);
    showKey(record, false);
  },
});

const rm = remoteCommand({
  name: "rm",
  description: "Delete a provider key",
  args: { ...idArg, force: { type: "boolean", description: "Delete even the last enabled key of a Level that models are routed to" }, ...yesArg },
  check: (args) => void idArgument(args),
  async run({ args, client, json }) {
    const id = idArgument(args);
    await confirmDeletion(`provider key ${id}`, args);
    const { body } = await client.request<ProviderKeyDeleted>("DELETE", `/x-keys/${id}`, { query: { force: args.force === true ? "true" : undefined } });
    if (json) return printJson(body);
    print(`deleted provider key ${body.id}`);
  },
});

function sleepCommand(action: "sleep" | "wake") {
  return remoteCommand({
    name: action,
    description: action === "sleep" ? "Put a provider key to sleep until woken" : "Wake a sleeping provider key (manual, auth or error sleep)",
    args: idArg,
    check: (args) => void idArgument(args),
    async run({ args, client, json }) {
      const { body } = await client.request<KeySummary>("POST", `/x-keys/${idArgument(args)}/${action}`, { query: WITHOUT_SECRET });
      if (json) return printJson(withoutSecret(body));
      print(`provider key ${body.ID} is ${body.Sleeping ? "sleeping" : "awake"}`);
    },
  });
}

/** `POST /x-keys/{id}/test`: the cheapest call the key allows. A key that fails exits 1, for scripts. */
const test = remoteCommand({
  name: "test",
  description: "Test a provider key with the cheapest call it allows (a model list); exit 1 when it fails",
  args: idArg,
  check: (args) => void idArgument(args),
  async run({ args, client, json }) {
    const { body } = await client.request<KeyTestResult>("POST", `/x-keys/${idArgument(args)}/test`);
    if (json) printJson(body);
    else print(formatRecord([["OK", body.ok], ["Status", body.status ?? "no answer"], ["Message", body.message]], 300));
    if (!body.ok) process.exitCode = 1;
  },
});

export const keysCommand = commandGroup("keys", "Manage upstream provider keys (owner)", {
  list,
  add,
  update,
  rm,
  sleep: sleepCommand("sleep"),
  wake: sleepCommand("wake"),
  test,
});

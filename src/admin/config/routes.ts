import { Elysia } from "elysia";
import type { Clock } from "../../core/clock.ts";
import type { Principal } from "../../accounts/principal.ts";
import type { ServeConfig } from "../../config.ts";
import { badRequest } from "../../core/errors.ts";
import type { InvalidationBus } from "../../core/invalidation.ts";
import type { Logger } from "../../core/log.ts";
import type { AuthPluginDeps } from "../../http/auth-deps.ts";
import { readBodyBytes, readJsonObject } from "../../http/body.ts";
import { clientIp } from "../../http/client-ip.ts";
import { authPlugin } from "../../http/plugins.ts";
import type { Tenant } from "../../tenancy/tenants.ts";
import type { AddressGuard } from "../../upstreams/address-policy.ts";
import type { State } from "../../state/state.ts";
import { checkMailHost } from "./test-mail.ts";
import type { OperationLog } from "../oplog/writer.ts";
import { ConfigResetBody, type ConfigExport } from "../../wire/config.ts";
import { bodyCheck } from "../../wire/check.ts";
import { itemDef } from "./items.ts";
import type { ConfigChange } from "./service.ts";
import { sendTestMail } from "./test-mail.ts";

/** What a body-less `DELETE /x-config` removes (spec 4.4: "Remove PRICING (restore defaults)"). */
export const DEFAULT_RESET_ITEMS: readonly string[] = ["PRICING"];

/** What the config routes use beyond the caller's tenant: audit (both logs) and telling caches of a change. */
export interface ConfigRouteDeps {
  config: Pick<ServeConfig, "maxBody" | "trustProxy">;
  /** Where the router may connect for a tenant (the upstream address policy): its mail server too. */
  addressGuard: Pick<AddressGuard, "check">;
  /** Counts test mails (sendTestMail). */
  state: Pick<State, "counts">;
  oplog: OperationLog;
  log: Logger;
  bus: InvalidationBus;
  clock: Clock;
}

/**
 * `/x-config`, owner only: export (GET), partial update (PUT) and reset (DELETE)
 * of the system configuration items (spec 2.4). Every response carries the full
 * export after the operation. Validation lives in the item table, reached through
 * the config service, which checks every item before writing any; a change is
 * visible to the next request because the service rebuilds its compiled forms.
 */
export function configRoutes(deps: ConfigRouteDeps & AuthPluginDeps) {
  const exported = (tenant: Pick<Tenant, "settings">): ConfigExport => ({ configs: tenant.settings.exportAll() });

  /** In the form GET /x-config exports (objects for JSON items); secrets arrive masked from the service. */
  const shown = (item: string, text: string | null): unknown => (text === null ? null : itemDef(item).exported(text));

  /**
   * Per item whose stored value changed: one operation-log row (`config.update` or
   * `config.reset`, details `{item, before, after}`) and one log line without the value.
   */
  const logChanges = async (action: "config.update" | "config.reset", changes: readonly ConfigChange[], principal: Principal, tenant: Pick<Tenant, "tenantId">, request: Request) => {
    const ip = clientIp(request, deps.config.trustProxy) ?? null;
    for (const change of changes) {
      await deps.oplog.write({
        tenantId: tenant.tenantId,
        actorId: principal.account.id,
        action,
        details: { item: change.item, before: shown(change.item, change.before), after: shown(change.item, change.after) },
        ip,
      });
      deps.log.info("config changed", { item: change.item, by: principal.account.id });
    }
  };

  return new Elysia()
    .use(authPlugin(deps))
    .get("/x-config", ({ tenant }) => exported(tenant), { owner: true })
    .put(
      "/x-config",
      async ({ request, principal, tenant }) => {
        const values = await readJsonObject(request, deps.config.maxBody);
        if (Object.keys(values).length === 0) {
          throw badRequest("Request body names no configuration item; send an object of item names to values");
        }
        if (typeof values.EMAIL_SMTP === "string") await checkMailHost(deps.addressGuard, values.EMAIL_SMTP.trim());
        await logChanges("config.update", await tenant.settings.update(values), principal, tenant, request);
        await deps.bus.publish({ kind: "config", tenantId: tenant.tenantId });
        return exported(tenant);
      },
      { owner: true, parse: "none" },
    )
    .delete(
      "/x-config",
      async ({ request, principal, tenant }) => {
        const items = await readResetItems(request, deps.config.maxBody);
        await logChanges("config.reset", await tenant.settings.reset(items), principal, tenant, request);
        await deps.bus.publish({ kind: "config", tenantId: tenant.tenantId });
        return exported(tenant);
      },
      { owner: true, parse: "none" },
    )
    .post("/x-config/test-mail", ({ request, principal, tenant }) => sendTestMail(deps, tenant, request, principal), { owner: true, parse: "none" });
}

/**
 * The items a DELETE resets: an absent (or blank) body means the default items;
 * otherwise the body must be exactly `{"keys": [<item name>, ...]}` with at least
 * one name. Names are checked against the item table by the service.
 */
const checkResetBody = bodyCheck(ConfigResetBody);

async function readResetItems(request: Request, limit: number): Promise<string[]> {
  const text = new TextDecoder().decode(await readBodyBytes(request, limit));
  if (text.trim() === "") return [...DEFAULT_RESET_ITEMS];
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw badRequest(`Request body is not valid JSON: ${(error as Error).message}`);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw badRequest('Request body must be a JSON object: {"keys": [<item name>, ...]}');
  }
  const { keys } = checkResetBody(body);
  // Blank names the model's minLength lets through ("  ") are no names either.
  if (keys.some((key) => key.trim() === "")) throw badRequest('"keys" must contain only non-empty item names', "keys");
  return [...new Set(keys)];
}

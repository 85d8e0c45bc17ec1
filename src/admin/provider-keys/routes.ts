import { Elysia } from "elysia";
import type { ServeConfig } from "../../config.ts";
import { badRequest, conflict, notFound } from "../../core/errors.ts";
import type { InvalidationBus } from "../../core/invalidation.ts";
import type { Logger } from "../../core/log.ts";
import type { AuthPluginDeps } from "../../http/auth-deps.ts";
import { readJsonObject } from "../../http/body.ts";
import { pageParams, paginationHeaders, positiveIntParam } from "../../http/pagination.ts";
import { metaOf } from "../../http/context.ts";
import { authPlugin } from "../../http/plugins.ts";
import { clientIp } from "../../http/client-ip.ts";
import type { Principal } from "../../accounts/principal.ts";
import type { ProviderConfig } from "../../routing/provider-config.ts";
import type { KeyHealthStore, ProviderKeyRow } from "../../store/store.ts";
import type { Clock } from "../../core/clock.ts";
import { createKeyHealthReader, keyHealthFigures } from "../../metering/key-health.ts";
import type { UsageRecorder } from "../../metering/usage-recorder.ts";
import { nanosToCredits } from "../../accounts/records.ts";
import type { ProviderKeyHealth } from "../../wire/provider-keys.ts";
import { KEY_RECORD_FORMS, type KeyRecordForm } from "../../wire/constants.ts";
import type { Tenant } from "../../tenancy/tenants.ts";
import type { AddressGuard } from "../../upstreams/address-policy.ts";
import type { OperationLog } from "../oplog/writer.ts";
import { editRecord, fullRecord, overviewRecord, summaryRecord } from "./records.ts";
import { testKey } from "./key-test.ts";
import type { Adapters } from "../../upstreams/index.ts";
import { selfAddress, validateCreate, validateUpdate } from "./validation.ts";

/** Models no LEVEL_MAPPER rule matches are served by Level 1. */
const DEFAULT_LEVEL = 1;

function idParam(raw: string): number {
  const id = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id) || id < 1) throw badRequest("Key id must be a positive integer", "id");
  return id;
}

/**
 * Which form of the record a request asks for (spec 2.1; `overview` for lists that show
 * more, `edit` for a form that shows everything but the secret), in a read's answer or a
 * write's (a console saving a key need not have the opened secret sent back).
 */
type RecordForm = KeyRecordForm;
function formWanted(query: URLSearchParams): RecordForm {
  const fields = query.get("fields");
  if (fields === null || fields === "") return "full";
  const form = KEY_RECORD_FORMS.find((name) => name === fields);
  if (form) return form;
  throw badRequest('fields must be "summary", "overview", "edit" or "full"', "fields");
}

/**
 * What the key routes use beyond the caller's tenant: the router's own address and the
 * upstream address policy (where a secret may be sent), audit (both logs), and telling
 * the key pools of a change.
 */
export interface ProviderKeyRouteDeps {
  config: Pick<ServeConfig, "host" | "port" | "baseUrl" | "maxBody" | "trustProxy">;
  /** Where the keys' health figures are read (every instance adds to them), on the business day of `clock`. */
  store: { keyHealth: Pick<KeyHealthStore, "ofTenant"> };
  clock: Clock;
  usageRecorder: Pick<UsageRecorder, "keyHealthWrites">;
  addressGuard: AddressGuard;
  adapters: Adapters;
  upstreamTls: { ca: string[] } | undefined;
  log: Logger;
  oplog: OperationLog;
  bus: InvalidationBus;
}

/** The parts of the caller's tenant these routes touch. */
type KeyTenant = Pick<Tenant, "tenantId" | "providerKeys" | "pool" | "settings">;

/**
 * `/x-keys`, owner only (spec 4.1, 5.3): list, read, create, update, delete,
 * manual sleep and wake of Provider Keys. Every successful write reloads the key
 * pool so the next request is scheduled with the change (spec 3). Log lines name
 * keys by id and Level only, never by secret.
 */
export function providerKeyRoutes(deps: ProviderKeyRouteDeps & AuthPluginDeps) {
  const healthRows = createKeyHealthReader({ store: deps.store, clock: deps.clock, writes: deps.usageRecorder.keyHealthWrites });
  /** The tenant's keys' health, read once for a page of records (the summary form has none). */
  const healthOf = async (tenant: KeyTenant, form: RecordForm) => {
    if (form === "summary") return undefined;
    const rows = await healthRows(tenant.tenantId);
    const today = deps.clock.businessDate(deps.clock.now());
    return (row: ProviderKeyRow) => keyHealthFigures(rows.get(row.id), today, nanosToCredits);
  };
  const renderWith = (tenant: KeyTenant, row: ProviderKeyRow, form: RecordForm, health: ((row: ProviderKeyRow) => ProviderKeyHealth) | undefined) => {
    const partialKey = tenant.providerKeys.partialKeyOf(row);
    if (form === "summary" || !health) return summaryRecord(row, partialKey);
    if (form === "overview") return overviewRecord(row, partialKey, () => tenant.providerKeys.secretOf(row), health(row));
    if (form === "edit") return editRecord(row, partialKey, health(row));
    return fullRecord(row, partialKey, tenant.providerKeys.secretOf(row), health(row));
  };
  const render = async (tenant: KeyTenant, row: ProviderKeyRow, form: RecordForm) => renderWith(tenant, row, form, await healthOf(tenant, form));
  // Another tenant's key id is as unknown as one that never existed.
  const existing = async (tenant: KeyTenant, rawId: string): Promise<ProviderKeyRow> => {
    const id = idParam(rawId);
    const row = await tenant.providerKeys.get(id);
    if (!row) throw notFound(`Provider key ${id} does not exist`);
    return row;
  };
  // The bound port from the serving socket covers `--port 0`, where config.port says 0.
  const checks = (request: Request) => ({ self: selfAddress(deps.config, metaOf(request)?.server?.port), guard: deps.addressGuard });
  const query = (request: Request) => new URL(request.url).searchParams;

  /**
   * Refuses to delete the last enabled key of a Level that is still routed to:
   * the default Level, or one a LEVEL_MAPPER rule names. Requests for its models
   * would otherwise fail until a key is added; `force` accepts that.
   */
  const assertNotLastRouted = async (tenant: KeyTenant, row: ProviderKeyRow) => {
    if (!row.status) return;
    const routed = row.level === DEFAULT_LEVEL || tenant.settings.routing().levelMap.some((rule) => rule.level === row.level);
    if (!routed) return;
    const othersEnabled = (await tenant.providerKeys.all()).some((key) => key.id !== row.id && key.level === row.level && key.status);
    if (othersEnabled) return;
    const why = row.level === DEFAULT_LEVEL ? "Level 1 serves every model no LEVEL_MAPPER rule matches" : "LEVEL_MAPPER routes models to it";
    throw conflict(
      `Provider key ${row.id} is the last enabled key of Level ${row.level} and ${why}; ` +
        "add or enable another key first, or repeat with ?force=true to delete it anyway",
      "force",
    );
  };

  /** Every key write goes to the server log and the operation log: ids, Levels and field names, never a secret. */
  const audit = async (
    tenant: KeyTenant,
    action: string,
    principal: Principal,
    request: Request,
    keyId: number,
    details: Record<string, string | number | boolean | undefined>,
  ) => {
    deps.log.info(action, { key: keyId, ...details, by: principal.account.id });
    await deps.oplog.write({
      tenantId: tenant.tenantId,
      actorId: principal.account.id,
      action,
      details: { key: keyId, ...details },
      ip: clientIp(request, deps.config.trustProxy),
    });
  };

  /** Manual sleep lasts until woken; waking also clears an automatic sleep and its back-off. */
  const setSleep = async (tenant: KeyTenant, rawId: string, sleeping: boolean, principal: Principal, request: Request) => {
    const form = formWanted(query(request));
    const row = await existing(tenant, rawId);
    await tenant.pool.setManualSleep(row.id, sleeping);
    await deps.bus.publish({ kind: "keys", tenantId: tenant.tenantId });
    await audit(tenant, sleeping ? "key.sleep" : "key.wake", principal, request, row.id, { level: row.level });
    return render(tenant, (await tenant.providerKeys.get(row.id))!, form);
  };

  return new Elysia()
    .use(authPlugin(deps))
    .get(
      "/x-keys",
      async ({ request, set, tenant }) => {
        const q = query(request);
        const form = formWanted(q);
        const { page, size } = pageParams(q);
        const filter = { id: positiveIntParam(q, "id"), level: positiveIntParam(q, "level"), provider: q.get("provider") || undefined };
        const { rows, total } = await tenant.providerKeys.list(filter, page, size);
        Object.assign(set.headers, paginationHeaders(total, page, size));
        const health = await healthOf(tenant, form);
        return rows.map((row) => renderWith(tenant, row, form, health));
      },
      { owner: true },
    )
    .get("/x-keys/:id", async ({ request, params, tenant }) => render(tenant, await existing(tenant, params.id), formWanted(query(request))), {
      owner: true,
    })
    .post(
      "/x-keys",
      async ({ request, set, principal, tenant }) => {
        // The answer's form is read first: a bad one refuses the request before anything is written.
        const form = formWanted(query(request));
        const input = await validateCreate(await readJsonObject(request, deps.config.maxBody), checks(request));
        const row = await tenant.providerKeys.create(input);
        await deps.bus.publish({ kind: "keys", tenantId: tenant.tenantId });
        await audit(tenant, "key.create", principal, request, row.id, { level: row.level, type: input.config?.provider_type ?? "standard" });
        set.status = 201;
        return render(tenant, row, form);
      },
      { owner: true, parse: "none" },
    )
    .put(
      "/x-keys/:id",
      async ({ request, params, principal, tenant }) => {
        const form = formWanted(query(request));
        const row = await existing(tenant, params.id);
        const current = { config: JSON.parse(row.config) as ProviderConfig, secret: tenant.providerKeys.secretOf(row) };
        const input = await validateUpdate(await readJsonObject(request, deps.config.maxBody), current, checks(request));
        // No field named (`{}`, the empty subset): nothing to write, reload or log, as for
        // the other management writes that change nothing.
        if (Object.keys(input).length === 0) return render(tenant, row, form);
        const updated = await tenant.providerKeys.update(row.id, input);
        if (!updated) throw notFound(`Provider key ${row.id} does not exist`);
        // A key taken out for its address comes back once its URLs are changed (and passed the policy above).
        if (row.sleepReason === "address" && (input.provider !== undefined || input.config !== undefined || input.secret !== undefined)) {
          await tenant.pool.setManualSleep(row.id, false);
        }
        await deps.bus.publish({ kind: "keys", tenantId: tenant.tenantId });
        await audit(tenant, "key.update", principal, request, row.id, { level: updated.level, fields: Object.keys(input).join(",") });
        return render(tenant, updated, form);
      },
      { owner: true, parse: "none" },
    )
    .delete(
      "/x-keys/:id",
      async ({ request, params, principal, tenant }) => {
        const row = await existing(tenant, params.id);
        const force = query(request).get("force");
        if (force !== null && force !== "true" && force !== "false") throw badRequest('force must be "true" or "false"', "force");
        if (force !== "true") await assertNotLastRouted(tenant, row);
        if (!(await tenant.providerKeys.delete(row.id))) throw notFound(`Provider key ${row.id} does not exist`);
        await deps.bus.publish({ kind: "keys", tenantId: tenant.tenantId });
        await audit(tenant, "key.delete", principal, request, row.id, { level: row.level, forced: force === "true" });
        return { id: row.id, object: "provider_key", deleted: true };
      },
      { owner: true, parse: "none" },
    )
    .post("/x-keys/:id/sleep", ({ params, principal, request, tenant }) => setSleep(tenant, params.id, true, principal, request), {
      owner: true,
      parse: "none",
    })
    .post("/x-keys/:id/wake", ({ params, principal, request, tenant }) => setSleep(tenant, params.id, false, principal, request), {
      owner: true,
      parse: "none",
    })
    .post(
      "/x-keys/:id/test",
      async ({ params, principal, request, tenant }) => {
        const row = await existing(tenant, params.id);
        const key = tenant.pool.get(row.id);
        // A key the pool does not hold yet (a write another process made) is read again first.
        if (!key) await tenant.pool.reload();
        const result = await testKey(tenant.pool.get(row.id)!, deps);
        await audit(tenant, "key.test", principal, request, row.id, { ok: result.ok, status: result.status ?? undefined });
        return result;
      },
      { owner: true, parse: "none" },
    );
}

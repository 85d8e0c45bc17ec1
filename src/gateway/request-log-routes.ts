/**
 * The request log (docs/api.md, "Request log"): `GET /x-requests` lists model calls
 * newest first, `GET /x-requests/{request_id}` gives one in full. Scope: an owner reads
 * its tenant, a manager its subtree (attempts without key id and name), any other
 * account its own calls. An account's own calls are readable wherever its Resources
 * allow the dashboard, so accounts made before the log need no new Resources.
 */
import { Elysia } from "elysia";
import { canManage, resourceAllowed } from "../accounts/access.ts";
import { nanosToCredits } from "../accounts/records.ts";
import type { AccountsService } from "../accounts/service.ts";
import type { ServeConfig } from "../config.ts";
import type { Clock } from "../core/clock.ts";
import { forbidden, notFound } from "../core/errors.ts";
import { familyOfRequest } from "../formats/registry.ts";
import { checkAccess } from "../http/access.ts";
import { clientIp } from "../http/client-ip.ts";
import { paginationHeaders } from "../http/pagination.ts";
import type { AuthenticateDeps, Caller } from "../http/plugins.ts";
import type { AttemptFact } from "../metering/request-log.ts";
import type { AccountIdentity, AccountRow, RequestLogFilter, RequestLogRow, Store } from "../store/store.ts";
import type { RequestAttempt, RequestRecord } from "../wire/requests.ts";
import { readRequestLogQuery } from "./request-log-query.ts";

export interface RequestLogRouteDeps extends AuthenticateDeps {
  readonly config: Pick<ServeConfig, "trustProxy" | "requestLogDays">;
  readonly store: Pick<Store, "requests" | "accounts">;
  readonly clock: Clock;
  readonly accountsService: Pick<AccountsService, "resolve">;
}

/** The path an account's Resources are checked against when they do not name /x-requests itself. */
const DASHBOARD_PATH = "/dashboard/requests";

/** How much of the log a caller reads. */
type View = "tenant" | "subtree" | "own";

const viewOf = (account: AccountRow): View => (account.isOwner ? "tenant" : canManage(account) ? "subtree" : "own");

/** Authenticates as the other routes do, checking Resources against /x-requests, or the dashboard when they do not allow it. */
async function callerOf(deps: RequestLogRouteDeps, request: Request, path: string): Promise<Caller> {
  const principal = await deps.auth.require(request, familyOfRequest(request, path));
  const tenant = await deps.tenantOf(principal.account);
  // The dashboard's path stands in for the account's own Resources only: the system
  // RESOURCES, which no account's Resources can widen, is checked on the path itself.
  const checked = resourceAllowed(principal.account, path) ? path : DASHBOARD_PATH;
  checkAccess(principal, path, () => clientIp(request, deps.config.trustProxy), tenant.settings.resources(), checked);
  // Said once the caller is known to be allowed: an empty list would look like a router nobody calls.
  if (deps.config.requestLogDays === 0) throw notFound("The request log is off on this router (--request-log-days 0): no call is recorded", "request_log_off");
  return { principal, tenant };
}

function attemptsOf(text: string, withKeys: boolean): RequestAttempt[] {
  let facts: AttemptFact[];
  try {
    facts = JSON.parse(text) as AttemptFact[];
  } catch {
    return [];
  }
  return facts.map((fact) => ({
    ...(withKeys ? { key_id: fact.keyId, key_name: fact.keyName } : {}),
    level: fact.level,
    status: fact.status ?? null,
    error: fact.error ?? null,
    message: fact.message ?? null,
    duration_ms: fact.durationMs,
    answered: fact.answered,
    translated_to: fact.translatedTo ?? null,
  }));
}

export function requestRecord(row: RequestLogRow, who: AccountIdentity | undefined, withKeys: boolean): RequestRecord {
  return {
    request_id: row.requestId,
    time: new Date(row.createdAt).toISOString(),
    account: { id: row.accountId, name: who?.name ?? null, email: who?.email ?? null },
    family: row.family,
    endpoint: row.endpoint,
    requested_model: row.requestedModel,
    effective_model: row.effectiveModel,
    stream: row.stream,
    status: row.status,
    error: row.error,
    attempts: attemptsOf(row.attempts, withKeys),
    ttfb_ms: row.ttfbMs,
    duration_ms: row.durationMs,
    tokens: { prompt: row.promptTokens, completion: row.completionTokens, cache_read: row.cacheReadTokens, cache_write: row.cacheWriteTokens, reasoning: row.reasoningTokens },
    cost: nanosToCredits(row.costNanos),
    source: row.source,
    client_ip: row.clientIp,
    user_agent: row.userAgent,
  };
}

export function requestLogRoutes(deps: RequestLogRouteDeps) {
  /** The caller's scope as a filter, narrowed to one account when `account` names one within it. */
  const scopeOf = async (caller: Caller, account: string | undefined): Promise<Omit<RequestLogFilter, "tenantId">> => {
    const self = caller.principal.account;
    const view = viewOf(self);
    if (account !== undefined && account !== String(self.id) && account !== self.name && account.toLowerCase() !== self.email) {
      // Others do not exist for an account that sees its own calls only, nor outside a manager's subtree.
      if (view === "own") throw notFound(`Account ${JSON.stringify(account)} not found`, "account_not_found");
      return { accountId: (await deps.accountsService.resolve(self, account, "subtree")).id };
    }
    if (account !== undefined || view === "own") return { accountId: self.id };
    return view === "subtree" ? { under: self.path } : {};
  };

  const render = async (caller: Caller, rows: RequestLogRow[]): Promise<RequestRecord[]> => {
    const names = await deps.store.accounts.identities([...new Set(rows.map((row) => row.accountId))]);
    const withKeys = caller.principal.account.isOwner;
    return rows.map((row) => requestRecord(row, names.get(row.accountId), withKeys));
  };

  return new Elysia()
    .get("/x-requests", async ({ request, set, path }) => {
      const caller = await callerOf(deps, request, path);
      const query = readRequestLogQuery(deps.clock, new URL(request.url).searchParams);
      if (!caller.principal.account.isOwner) {
        // Keys and Levels are the owner's to see: a filter on them would tell them apart.
        if (query.filter.keyId !== undefined) throw forbidden("The key_id filter is for owners", "owner_only");
        if (query.filter.level !== undefined) throw forbidden("The level filter is for owners", "owner_only");
      }
      const scope = await scopeOf(caller, query.account);
      const { rows, total } = await deps.store.requests.list({ tenantId: caller.tenant.tenantId, ...query.filter, ...scope }, query.page, query.size);
      Object.assign(set.headers, paginationHeaders(total, query.page, query.size));
      return render(caller, rows);
    })
    .get("/x-requests/:request_id", async ({ request, params, path }) => {
      const caller = await callerOf(deps, request, path);
      const self = caller.principal.account;
      const row = await deps.store.requests.get(caller.tenant.tenantId, params.request_id);
      // Quoted as JSON: the id is the client's text, and a control character must not reach a terminal or a log reader as it is.
      const missing = () => notFound(`Request ${JSON.stringify(params.request_id)} not found`, "request_not_found");
      if (!row) throw missing();
      const view = viewOf(self);
      if (view === "own" && row.accountId !== self.id) throw missing();
      if (view === "subtree" && row.accountId !== self.id) {
        const owner = await deps.store.accounts.anyById(row.accountId);
        if (!owner?.path.startsWith(self.path)) throw missing();
      }
      return (await render(caller, [row]))[0]!;
    });
}

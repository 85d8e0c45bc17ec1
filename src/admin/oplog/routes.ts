import { Elysia } from "elysia";
import type { Clock } from "../../core/clock.ts";
import type { AuthPluginDeps } from "../../http/auth-deps.ts";
import { authPlugin } from "../../http/plugins.ts";
import type { OperationLogRow, Store } from "../../store/store.ts";
import type { LogPage, LogRow } from "../../wire/oplog.ts";
import { listOperations, readLogQuery } from "./query.ts";

/** Details are stored as JSON text; a row that does not parse (it never should) is shown as the text. */
function parseDetails(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export function operationRecord(row: OperationLogRow): LogRow {
  return {
    id: row.id,
    time: new Date(row.at).toISOString(),
    action: row.action,
    operator_id: row.actorId,
    target_id: row.targetId,
    details: parseDetails(row.details),
    ip: row.ip,
  };
}

/** What the operation-log route reads: the log's rows, and the clock that turns business dates into times. */
export interface OperationLogRouteDeps {
  store: Pick<Store, "operations">;
  clock: Clock;
}

/**
 * `GET /dashboard/logs` (owner only): the operation log, newest first, 24 rows a
 * page by default (`size` up to 100, `page` 1-based), filtered by `action` (exact,
 * or with `*` wildcards), `target` (account ID), `since` and `until` (inclusive).
 */
export function operationLogRoutes(deps: OperationLogRouteDeps & AuthPluginDeps) {
  return new Elysia().use(authPlugin(deps)).get(
    "/dashboard/logs",
    async ({ request, tenant }): Promise<LogPage> => {
      const query = readLogQuery(deps.clock, new URL(request.url).searchParams);
      const { rows, total } = await listOperations(deps.store, tenant.tenantId, query);
      return {
        logs: rows.map(operationRecord),
        total,
        page: query.page,
        size: query.size,
        has_more: query.page * query.size < total,
      };
    },
    { owner: true },
  );
}

import { and, count, desc, eq, lt, sql, type SQL } from "drizzle-orm";
import { accounts } from "../schema/accounts.ts";
import { requestLog } from "../schema/request-log.ts";
import type { RequestLogFilter, RequestLogStore } from "../store.ts";
import { requestLogWhere } from "../request-log-filter.ts";
import type { Connection } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";
import { requestLogInsert } from "./grouped-insert.ts";
import { appendRequestLogValues, flatValues } from "../row-values.ts";

const whereOf = (filter: RequestLogFilter, byAccount = false): SQL => requestLogWhere(requestLog, accounts, filter, { byAccount });

/**
 * Up to this many rows in its time bounds, a subtree's page is read through the account
 * index and sorted (a few ms). Past it, the tenant's newest-first index finds a page
 * sooner while the page lies well within the matches (it reads about (offset + size) ×
 * tenant rows / matches); a page near the end of a sparse subtree's matches is read
 * through the account index whatever the subtree's size, as the tenant's index would then
 * walk on to the subtree's oldest match.
 */
export const SUBTREE_SORT_ROWS = 20_000;

/** Filters that need the row itself, not an index. */
const rowLevel = (filter: RequestLogFilter) =>
  filter.model !== undefined || filter.statusFrom !== undefined || filter.statusTo !== undefined || filter.keyId !== undefined || filter.level !== undefined;

export function sqliteRequestLog({ db, sqlite }: Pick<Connection, "db" | "sqlite">): Synchronous<RequestLogStore> {
  const insert = requestLogInsert(sqlite);
  /**
   * A manager's subtree, counted through the account index in one pass: how many of its
   * rows lie in the time bounds and how many of them match (the subtree's rows are read,
   * for their tenant, and no other).
   */
  const subtreeCount = (filter: RequestLogFilter): { rows: number; matched: number } => {
    const { tenantId, under, since, until, requestId } = filter;
    const scope = whereOf({ tenantId, under, since, until, requestId }, true);
    if (!rowLevel(filter)) {
      const rows = db.select({ n: count() }).from(requestLog).where(scope).get()?.n ?? 0;
      return { rows, matched: rows };
    }
    const matches = sql<number>`coalesce(sum(CASE WHEN ${whereOf(filter, true)} THEN 1 ELSE 0 END), 0)`;
    const counted = db.select({ rows: count(), matched: matches }).from(requestLog).where(scope).get();
    return { rows: counted?.rows ?? 0, matched: Number(counted?.matched ?? 0) };
  };
  return {
    append: (rows) => insert(flatValues(rows, appendRequestLogValues)),
    list(filter, page, size) {
      const offset = (page - 1) * size;
      let total: number;
      let byAccount = false;
      if (filter.under === undefined) {
        total = db.select({ n: count() }).from(requestLog).where(whereOf(filter)).get()?.n ?? 0;
      } else {
        // SQLite would walk every row of the tenant for a subtree's (request-log-filter.ts).
        const counted = subtreeCount(filter);
        total = counted.matched;
        byAccount = counted.rows <= SUBTREE_SORT_ROWS || 4 * (offset + size) >= total;
      }
      // A page past the last match reads nothing (the query would walk every candidate row to find none).
      if (offset >= total) return { rows: [], total };
      const rows = db
        .select()
        .from(requestLog)
        .where(whereOf(filter, byAccount))
        .orderBy(desc(requestLog.createdAt), desc(requestLog.requestId))
        .limit(size)
        .offset(offset)
        .all();
      return { rows, total };
    },
    get: (tenantId, requestId) =>
      db
        .select()
        .from(requestLog)
        .where(and(eq(requestLog.tenantId, tenantId), eq(requestLog.requestId, requestId)))
        .get(),
    prune(before) {
      // drizzle's bun:sqlite run() types its result as void; the driver's own holds the count.
      const result = db.delete(requestLog).where(lt(requestLog.createdAt, before)).run() as unknown as { changes: number };
      return result.changes;
    },
  };
}

import { and, count, desc, eq, gte, inArray, like, lt, lte, or, sql, type SQL } from "drizzle-orm";
import { accounts } from "../schema/accounts.ts";
import { requestLog } from "../schema/request-log.ts";
import type { RequestLogFilter, RequestLogStore } from "../store.ts";
import type { Db } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";

/** Rows per INSERT: 24 columns each stays far below SQLite's bound on bound parameters. */
const ROWS_PER_STATEMENT = 100;

/** Every path with the prefix `/1/4/` lies in [`/1/4/`, `/1/40`): an index range scan on accounts.path. */
const pathUpperBound = (path: string) => `${path.slice(0, -1)}0`;

function whereOf(filter: RequestLogFilter): SQL {
  const parts: SQL[] = [eq(requestLog.tenantId, filter.tenantId)];
  if (filter.accountId !== undefined) parts.push(eq(requestLog.accountId, filter.accountId));
  if (filter.under !== undefined) {
    const members = sql`${accounts.path} >= ${filter.under} AND ${accounts.path} < ${pathUpperBound(filter.under)}`;
    parts.push(inArray(requestLog.accountId, sql`(SELECT ${accounts.id} FROM ${accounts} WHERE ${members})`));
  }
  if (filter.model !== undefined) parts.push(or(eq(requestLog.requestedModel, filter.model), eq(requestLog.effectiveModel, filter.model))!);
  if (filter.statusFrom !== undefined) parts.push(gte(requestLog.status, filter.statusFrom));
  if (filter.statusTo !== undefined) parts.push(lte(requestLog.status, filter.statusTo));
  if (filter.keyId !== undefined) parts.push(like(requestLog.keyIds, `%,${filter.keyId},%`));
  if (filter.level !== undefined) parts.push(like(requestLog.levels, `%,${filter.level},%`));
  if (filter.since !== undefined) parts.push(gte(requestLog.createdAt, filter.since));
  if (filter.until !== undefined) parts.push(lte(requestLog.createdAt, filter.until));
  if (filter.requestId !== undefined) parts.push(eq(requestLog.requestId, filter.requestId));
  return and(...parts)!;
}

export function sqliteRequestLog(db: Db): Synchronous<RequestLogStore> {
  return {
    append(rows) {
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        db.insert(requestLog).values(rows.slice(i, i + ROWS_PER_STATEMENT)).onConflictDoNothing().run();
      }
    },
    list(filter, page, size) {
      const where = whereOf(filter);
      const total = db.select({ n: count() }).from(requestLog).where(where).get()?.n ?? 0;
      const rows = db
        .select()
        .from(requestLog)
        .where(where)
        .orderBy(desc(requestLog.createdAt), desc(requestLog.requestId))
        .limit(size)
        .offset((page - 1) * size)
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

import { and, count, desc, eq, gte, inArray, like, lt, lte, or, sql, type SQL } from "drizzle-orm";
import type { RequestLogFilter, RequestLogStore } from "../store.ts";
import type { Scope } from "./db.ts";
import { accounts } from "./schema/accounts.ts";
import { requestLog } from "./schema/request-log.ts";

/** Rows per INSERT: 24 parameters each stays far below PostgreSQL's 65,535. */
const ROWS_PER_STATEMENT = 500;

/** Every path with the prefix `/1/4/` lies in [`/1/4/`, `/1/40`) (paths are digits and slashes, so any collation agrees). */
const pathUpperBound = (path: string) => `${path.slice(0, -1)}0`;

function whereOf(filter: RequestLogFilter): SQL {
  const parts: SQL[] = [eq(requestLog.tenantId, filter.tenantId)];
  if (filter.accountId !== undefined) parts.push(eq(requestLog.accountId, filter.accountId));
  if (filter.under !== undefined) {
    parts.push(inArray(requestLog.accountId, sql`(SELECT ${accounts.id} FROM ${accounts} WHERE ${accounts.path} LIKE ${`${filter.under}%`})`));
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

export function postgresRequestLog({ db }: Scope): RequestLogStore {
  return {
    async append(rows) {
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        await db.insert(requestLog).values(rows.slice(i, i + ROWS_PER_STATEMENT)).onConflictDoNothing();
      }
    },
    async list(filter, page, size) {
      const where = whereOf(filter);
      const [total, rows] = await Promise.all([
        db.select({ n: count() }).from(requestLog).where(where),
        db
          .select()
          .from(requestLog)
          .where(where)
          .orderBy(desc(requestLog.createdAt), desc(requestLog.requestId))
          .limit(size)
          .offset((page - 1) * size),
      ]);
      return { rows, total: total[0]?.n ?? 0 };
    },
    get: async (tenantId, requestId) =>
      (await db.select().from(requestLog).where(and(eq(requestLog.tenantId, tenantId), eq(requestLog.requestId, requestId))))[0],
    async prune(before) {
      const removed = await db.delete(requestLog).where(lt(requestLog.createdAt, before)).returning({ id: requestLog.requestId });
      return removed.length;
    },
  };
}

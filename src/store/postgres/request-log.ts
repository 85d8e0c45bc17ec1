import { and, count, desc, eq, lt, type SQL } from "drizzle-orm";
import type { RequestLogFilter, RequestLogStore } from "../store.ts";
import { requestLogWhere } from "../request-log-filter.ts";
import type { Scope } from "./db.ts";
import { appendRequestLogValues, memoized, multiRowInsert, REQUEST_LOG_COLUMNS } from "../row-values.ts";
import { groupedInsert } from "./grouped-insert.ts";
import { accounts } from "./schema/accounts.ts";
import { requestLog } from "./schema/request-log.ts";

/** Rows per INSERT: 24 parameters each stays far below PostgreSQL's 65,535. */
const ROWS_PER_STATEMENT = 500;

const whereOf = (filter: RequestLogFilter): SQL => requestLogWhere(requestLog, accounts, filter);

const insertRows = memoized((rows) => multiRowInsert("request_log", REQUEST_LOG_COLUMNS, rows, "$", " ON CONFLICT DO NOTHING"));

export function postgresRequestLog({ db, sql: client }: Scope): RequestLogStore {
  return {
    append: (rows) => groupedInsert(client, rows, ROWS_PER_STATEMENT, insertRows, appendRequestLogValues),
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

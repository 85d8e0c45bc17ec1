import { and, count, desc, eq, lt, type SQL } from "drizzle-orm";
import type { RequestLogFilter, RequestLogStore } from "../store.ts";
import { requestLogWhere } from "../request-log-filter.ts";
import type { Scope } from "./db.ts";
import { appendRequestLogValues, REQUEST_LOG_COLUMNS } from "../row-values.ts";
import { jsonInsert } from "./json-insert.ts";
import { accounts } from "./schema/accounts.ts";
import { requestLog } from "./schema/request-log.ts";

/** The list's condition (exported for the test that reads its plan). */
export const postgresRequestLogWhere = (filter: RequestLogFilter): SQL => requestLogWhere(requestLog, accounts, filter, { pathPattern: true });
const whereOf = postgresRequestLogWhere;

const insertRows = jsonInsert(requestLog, REQUEST_LOG_COLUMNS, appendRequestLogValues, " ON CONFLICT DO NOTHING");

export function postgresRequestLog({ db, sql: client }: Scope): RequestLogStore {
  return {
    append: async (rows) => void (await insertRows(client, rows)),
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

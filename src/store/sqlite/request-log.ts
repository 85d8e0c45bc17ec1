import { and, count, desc, eq, lt, type SQL } from "drizzle-orm";
import { accounts } from "../schema/accounts.ts";
import { requestLog } from "../schema/request-log.ts";
import type { RequestLogFilter, RequestLogStore } from "../store.ts";
import { requestLogWhere } from "../request-log-filter.ts";
import type { Connection } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";
import { requestLogInsert } from "./grouped-insert.ts";
import { appendRequestLogValues, flatValues } from "../row-values.ts";

const whereOf = (filter: RequestLogFilter): SQL => requestLogWhere(requestLog, accounts, filter);

export function sqliteRequestLog({ db, sqlite }: Pick<Connection, "db" | "sqlite">): Synchronous<RequestLogStore> {
  const insert = requestLogInsert(sqlite);
  return {
    append: (rows) => insert(flatValues(rows, appendRequestLogValues)),
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

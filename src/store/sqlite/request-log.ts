import { and, count, desc, eq, lt, type SQL } from "drizzle-orm";
import { appendRequestLogValues, multiRowInsert, REQUEST_LOG_COLUMNS, type SqlValue } from "../row-values.ts";
import { accounts } from "../schema/accounts.ts";
import { requestLog } from "../schema/request-log.ts";
import type { RequestLogFilter, RequestLogStore } from "../store.ts";
import { requestLogWhere } from "../request-log-filter.ts";
import type { Connection } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";

/** Rows per prepared INSERT (25 parameters each, far below SQLite's bound). */
const ROWS_PER_STATEMENT = 32;

const whereOf = (filter: RequestLogFilter): SQL => requestLogWhere(requestLog, accounts, filter);

export function sqliteRequestLog({ db, sqlite }: Pick<Connection, "db" | "sqlite">): Synchronous<RequestLogStore> {
  // Prepared once on the raw connection, as the usage rows' (the query builder made and
  // parsed a new statement per batch: 59 µs a call in the profile).
  const insert = (count: number) =>
    sqlite.prepare<unknown, SqlValue[]>(multiRowInsert("request_log", REQUEST_LOG_COLUMNS, count, "?", " ON CONFLICT DO NOTHING"));
  const insertOne = insert(1);
  const insertGroup = insert(ROWS_PER_STATEMENT);
  return {
    append(rows) {
      let i = 0;
      for (; i + ROWS_PER_STATEMENT <= rows.length; i += ROWS_PER_STATEMENT) {
        const values: SqlValue[] = [];
        for (let j = i; j < i + ROWS_PER_STATEMENT; j++) appendRequestLogValues(values, rows[j]!);
        insertGroup.run(...values);
      }
      for (; i < rows.length; i++) insertOne.run(...appendRequestLogValues([], rows[i]!));
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

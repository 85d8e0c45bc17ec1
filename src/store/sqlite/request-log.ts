import { and, count, desc, eq, lt, type SQL } from "drizzle-orm";
import { accounts } from "../schema/accounts.ts";
import { requestLog, type NewRequestLogRow } from "../schema/request-log.ts";
import type { RequestLogFilter, RequestLogStore } from "../store.ts";
import { requestLogWhere } from "../request-log-filter.ts";
import type { Connection } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";

/** The columns of a row, in the order the prepared INSERTs bind them. */
const COLUMNS = [
  "request_id", "tenant_id", "account_id", "created_at", "family", "endpoint", "requested_model", "effective_model", "stream", "status",
  "attempts", "key_ids", "levels", "ttfb_ms", "duration_ms", "prompt_tokens", "completion_tokens", "cache_read_tokens",
  "cache_write_tokens", "reasoning_tokens", "cost_nanos", "source", "client_ip", "user_agent", "error",
] as const;

type SqlValue = string | number | null;

/** Rows per prepared INSERT (25 parameters each, far below SQLite's bound). */
const ROWS_PER_STATEMENT = 32;

function appendValues(out: SqlValue[], row: NewRequestLogRow): SqlValue[] {
  out.push(
    row.requestId, row.tenantId ?? 0, row.accountId, row.createdAt, row.family, row.endpoint, row.requestedModel ?? null,
    row.effectiveModel ?? null, row.stream ? 1 : 0, row.status, row.attempts ?? "[]", row.keyIds ?? ",", row.levels ?? ",",
    row.ttfbMs ?? null, row.durationMs, row.promptTokens ?? 0, row.completionTokens ?? 0, row.cacheReadTokens ?? 0,
    row.cacheWriteTokens ?? 0, row.reasoningTokens ?? 0, row.costNanos ?? 0, row.source, row.clientIp ?? null, row.userAgent ?? null,
    row.error ?? null,
  );
  return out;
}

const whereOf = (filter: RequestLogFilter): SQL => requestLogWhere(requestLog, accounts, filter);

export function sqliteRequestLog({ db, sqlite }: Connection): Synchronous<RequestLogStore> {
  // Prepared once on the raw connection, as the usage rows' (the query builder made and
  // parsed a new statement per batch: 59 µs a call in the profile).
  const insert = (count: number) =>
    sqlite.prepare<unknown, SqlValue[]>(
      `INSERT OR IGNORE INTO request_log (${COLUMNS.join(", ")}) VALUES ${Array.from({ length: count }, () => `(${COLUMNS.map(() => "?").join(", ")})`).join(", ")}`,
    );
  const insertOne = insert(1);
  const insertGroup = insert(ROWS_PER_STATEMENT);
  return {
    append(rows) {
      let i = 0;
      for (; i + ROWS_PER_STATEMENT <= rows.length; i += ROWS_PER_STATEMENT) {
        const values: SqlValue[] = [];
        for (let j = i; j < i + ROWS_PER_STATEMENT; j++) appendValues(values, rows[j]!);
        insertGroup.run(...values);
      }
      for (; i < rows.length; i++) insertOne.run(...appendValues([], rows[i]!));
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

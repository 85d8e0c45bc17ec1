import { and, count, desc, eq, gte, inArray, like, lt, lte, or, sql, type SQL } from "drizzle-orm";
import { accounts } from "../schema/accounts.ts";
import { requestLog, type NewRequestLogRow } from "../schema/request-log.ts";
import type { RequestLogFilter, RequestLogStore } from "../store.ts";
import type { Connection } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";

/** The columns of a row, in the order the prepared INSERTs bind them. */
const COLUMNS = [
  "request_id", "tenant_id", "account_id", "created_at", "family", "endpoint", "requested_model", "effective_model", "stream", "status",
  "attempts", "key_ids", "levels", "ttfb_ms", "duration_ms", "prompt_tokens", "completion_tokens", "cache_read_tokens",
  "cache_write_tokens", "reasoning_tokens", "cost_nanos", "source", "client_ip", "user_agent",
] as const;

type SqlValue = string | number | null;

/** Rows per prepared INSERT (24 parameters each, far below SQLite's bound). */
const ROWS_PER_STATEMENT = 32;

function appendValues(out: SqlValue[], row: NewRequestLogRow): SqlValue[] {
  out.push(
    row.requestId, row.tenantId ?? 0, row.accountId, row.createdAt, row.family, row.endpoint, row.requestedModel ?? null,
    row.effectiveModel ?? null, row.stream ? 1 : 0, row.status, row.attempts ?? "[]", row.keyIds ?? ",", row.levels ?? ",",
    row.ttfbMs ?? null, row.durationMs, row.promptTokens ?? 0, row.completionTokens ?? 0, row.cacheReadTokens ?? 0,
    row.cacheWriteTokens ?? 0, row.reasoningTokens ?? 0, row.costNanos ?? 0, row.source, row.clientIp ?? null, row.userAgent ?? null,
  );
  return out;
}

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

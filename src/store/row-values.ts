import type { NewRequestLogRow, NewUsageEventRow } from "./store.ts";

/**
 * The hot rows (a usage row and a request-log row per call) as positional values for
 * hand-written multi-row INSERTs, the same in both dialects: the query builders cost
 * more per row than the databases did (SQLite: 59 µs a call; PostgreSQL: drizzle's
 * entity checks were a tenth of the router's CPU in the scale-out profile). Defaults are
 * the tables' own.
 */
export type SqlValue = string | number | boolean | null;

export const USAGE_EVENT_COLUMNS = [
  "request_id", "account_id", "day", "created_at", "endpoint", "requested_model", "effective_model", "level", "key_id", "status",
  "stream", "prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "source",
  "latency_ms", "cost_nanos", "extra",
] as const;

export function appendUsageEventValues(out: SqlValue[], row: NewUsageEventRow): SqlValue[] {
  out.push(
    row.requestId, row.accountId, row.day, row.createdAt, row.endpoint, row.requestedModel ?? null, row.effectiveModel ?? null,
    row.level ?? null, row.keyId ?? null, row.status, row.stream ?? false, row.promptTokens ?? 0, row.completionTokens ?? 0,
    row.cacheReadTokens ?? 0, row.cacheWriteTokens ?? 0, row.reasoningTokens ?? 0, row.source, row.latencyMs, row.costNanos ?? 0,
    row.extra ?? null,
  );
  return out;
}

/** Usage rows back from their flat values (`flatValues` with `appendUsageEventValues`): what crosses to the upkeep thread. */
export function usageEventRows(values: readonly SqlValue[]): NewUsageEventRow[] {
  const width = USAGE_EVENT_COLUMNS.length;
  const rows: NewUsageEventRow[] = [];
  for (let i = 0; i + width <= values.length; i += width) {
    // Each value is the column's own type: these are the values appendUsageEventValues made.
    const v = (k: number) => values[i + k] as never;
    rows.push({
      requestId: v(0), accountId: v(1), day: v(2), createdAt: v(3), endpoint: v(4), requestedModel: v(5),
      effectiveModel: v(6), level: v(7), keyId: v(8), status: v(9), stream: v(10), promptTokens: v(11),
      completionTokens: v(12), cacheReadTokens: v(13), cacheWriteTokens: v(14), reasoningTokens: v(15), source: v(16),
      latencyMs: v(17), costNanos: v(18), extra: v(19),
    });
  }
  return rows;
}

export const REQUEST_LOG_COLUMNS = [
  "request_id", "tenant_id", "account_id", "created_at", "family", "endpoint", "requested_model", "effective_model", "stream", "status",
  "attempts", "key_ids", "levels", "ttfb_ms", "duration_ms", "prompt_tokens", "completion_tokens", "cache_read_tokens",
  "cache_write_tokens", "reasoning_tokens", "cost_nanos", "source", "client_ip", "user_agent", "error",
] as const;

export function appendRequestLogValues(out: SqlValue[], row: NewRequestLogRow): SqlValue[] {
  out.push(
    row.requestId, row.tenantId ?? 0, row.accountId, row.createdAt, row.family, row.endpoint, row.requestedModel ?? null,
    row.effectiveModel ?? null, row.stream ?? false, row.status, row.attempts ?? "[]", row.keyIds ?? ",", row.levels ?? ",",
    row.ttfbMs ?? null, row.durationMs, row.promptTokens ?? 0, row.completionTokens ?? 0, row.cacheReadTokens ?? 0,
    row.cacheWriteTokens ?? 0, row.reasoningTokens ?? 0, row.costNanos ?? 0, row.source, row.clientIp ?? null, row.userAgent ?? null,
    row.error ?? null,
  );
  return out;
}

/** Rows as one flat array of their values in column order: what the grouped INSERTs bind, and what crosses to the upkeep thread (no object per row). */
export function flatValues<Row>(rows: readonly Row[], append: (out: SqlValue[], row: Row) => SqlValue[]): SqlValue[] {
  const values: SqlValue[] = [];
  for (const row of rows) append(values, row);
  return values;
}

/** `INSERT INTO table (columns) VALUES (…), (…)` for `rows` rows, with `?` (SQLite) or `$n` (PostgreSQL) placeholders. */
export function multiRowInsert(table: string, columns: readonly string[], rows: number, style: "?" | "$", tail = ""): string {
  let n = 0;
  const tuple = () => `(${columns.map(() => (style === "?" ? "?" : `$${++n}`)).join(", ")})`;
  return `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${Array.from({ length: rows }, tuple).join(", ")}${tail}`;
}

/** A statement text per row count, made once (a batch's size varies; a handful of sizes recur). */
export function memoized(make: (rows: number) => string): (rows: number) => string {
  const made = new Map<number, string>();
  return (rows) => {
    let text = made.get(rows);
    if (text === undefined) {
      text = make(rows);
      // Bounded: batch sizes are bounded, but a statement per size is kept only for the common ones.
      if (made.size < 64) made.set(rows, text);
    }
    return text;
  };
}

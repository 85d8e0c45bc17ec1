/**
 * The statements a batch of usage rows runs on SQLite, prepared once on a raw connection
 * and loading no query builder: the serving thread's repositories (usage.ts, credit.ts,
 * key-health.ts) and the usage writer on the upkeep thread (usage-write-service.ts) run
 * the same ones.
 */
import type { Database } from "bun:sqlite";
import { rowsWritten, USAGE_IDENTITY_COLUMNS, type NewKeyHealthRow, type NewUsageEventRow, type RollupRow } from "../store.ts";
import { appendUsageEventValues, flatValues, USAGE_EVENT_COLUMNS, type SqlValue } from "../row-values.ts";
import { groupedInsert } from "./grouped-insert.ts";

/** The newest usage row's id (0 when there is none): the ledger's version (`CreditState.flushed`). */
export function newestUsageId(sqlite: Database): () => number {
  const newest = sqlite.prepare<{ id: number | null }, []>("SELECT max(id) AS id FROM usage_events");
  return () => newest.get()?.id ?? 0;
}

/**
 * Inserts usage rows given as flat values (`flatValues`), each once (a row whose identity
 * is stored already is kept as it is), and resolves which of `rows` went in.
 */
export function usageEventInserter(sqlite: Database): (rows: readonly NewUsageEventRow[], values?: readonly SqlValue[]) => NewUsageEventRow[] {
  const insertEvents = groupedInsert(sqlite, "usage_events", USAGE_EVENT_COLUMNS, " ON CONFLICT DO NOTHING");
  const newestId = newestUsageId(sqlite);
  const writtenAfter = sqlite.prepare<unknown[], [number]>(`SELECT ${USAGE_IDENTITY_COLUMNS} FROM usage_events WHERE id > ?`);
  // Without RETURNING (its rows cost about 0.5 µs each): the count says whether every row
  // went in; when some did not, the rows written are those after the newest id before
  // (ids only grow, and the write holds the database alone).
  const insert = sqlite.transaction((rows: readonly NewUsageEventRow[], values: readonly SqlValue[]) => {
    const before = newestId();
    if (insertEvents(values) === rows.length) return rows.slice();
    return rowsWritten(rows, writtenAfter.values(before));
  });
  return (rows, values) => (rows.length === 0 ? [] : insert(rows, values ?? flatValues(rows, appendUsageEventValues)));
}

/** Adds a batch's daily rollups (`dailyRollups`) to `usage_daily`. */
export function rollupAdder(sqlite: Database): (rollups: Iterable<RollupRow>) => void {
  const upsertRollup = sqlite.prepare<unknown, SqlValue[]>(
    `INSERT INTO usage_daily (account_id, day, model, requests, prompt_tokens, completion_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens, cost_nanos)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (account_id, day, model) DO UPDATE SET
       requests = requests + excluded.requests,
       prompt_tokens = prompt_tokens + excluded.prompt_tokens,
       completion_tokens = completion_tokens + excluded.completion_tokens,
       reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,
       cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
       cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
       cost_nanos = cost_nanos + excluded.cost_nanos`,
  );
  return sqlite.transaction((rollups: Iterable<RollupRow>) => {
    for (const sum of rollups) {
      upsertRollup.run(sum.accountId, sum.day, sum.model, sum.requests, sum.prompt, sum.completion, sum.reasoning, sum.cacheRead, sum.cacheWrite, sum.costNanos);
    }
  });
}

/**
 * Charges an account: draws its spendable grants, the earliest expiry first, and books
 * what they do not cover as debt (a grant of 0 with a negative remainder).
 */
export function creditConsumer(sqlite: Database): (accountId: number, amount: number, now: number) => void {
  const spendable = sqlite.query<{ id: number; remaining: number }, [number, number]>(
    `SELECT id, remaining FROM credit_grants
     WHERE account_id = ? AND (expires_at IS NULL OR expires_at > ?) AND remaining > 0
     ORDER BY expires_at IS NULL, expires_at, id`,
  );
  const draw = sqlite.query<unknown, [number, number]>("UPDATE credit_grants SET remaining = ? WHERE id = ?");
  const owe = sqlite.query<unknown, [number, number, number]>(
    "INSERT INTO credit_grants (account_id, amount, remaining, expires_at, granted_by, created_at) VALUES (?, 0, ?, NULL, NULL, ?)",
  );
  const consume = sqlite.transaction((accountId: number, amount: number, now: number) => {
    let left = amount;
    for (const grant of spendable.all(accountId, now)) {
      if (left <= 0) break;
      const used = Math.min(grant.remaining, left);
      draw.run(grant.remaining - used, grant.id);
      left -= used;
    }
    if (left > 0) owe.run(accountId, -left, now);
  });
  return (accountId, amount, now) => {
    if (amount > 0) consume(accountId, amount, now);
  };
}

/**
 * The upsert of src/store/key-health-upsert.ts, written out once for SQLite: the query
 * builder made and rendered the statement again for every batch (about 100 µs each).
 */
const KEY_HEALTH_UPSERT = `INSERT INTO key_health (key_id, tenant_id, day, requests, errors, latency_ms, spend_nanos, last_error_at, last_error_status, last_error_message, last_success_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key_id) DO UPDATE SET
  requests = CASE WHEN day = excluded.day THEN requests + excluded.requests WHEN day < excluded.day THEN excluded.requests ELSE requests END,
  errors = CASE WHEN day = excluded.day THEN errors + excluded.errors WHEN day < excluded.day THEN excluded.errors ELSE errors END,
  latency_ms = CASE WHEN day = excluded.day THEN latency_ms + excluded.latency_ms WHEN day < excluded.day THEN excluded.latency_ms ELSE latency_ms END,
  spend_nanos = CASE WHEN day = excluded.day THEN spend_nanos + excluded.spend_nanos WHEN day < excluded.day THEN excluded.spend_nanos ELSE spend_nanos END,
  day = CASE WHEN day < excluded.day THEN excluded.day ELSE day END,
  last_error_at = CASE WHEN excluded.last_error_at IS NOT NULL AND (last_error_at IS NULL OR excluded.last_error_at >= last_error_at) THEN excluded.last_error_at ELSE last_error_at END,
  last_error_status = CASE WHEN excluded.last_error_at IS NOT NULL AND (last_error_at IS NULL OR excluded.last_error_at >= last_error_at) THEN excluded.last_error_status ELSE last_error_status END,
  last_error_message = CASE WHEN excluded.last_error_at IS NOT NULL AND (last_error_at IS NULL OR excluded.last_error_at >= last_error_at) THEN excluded.last_error_message ELSE last_error_message END,
  last_success_at = CASE WHEN excluded.last_success_at IS NOT NULL AND (last_success_at IS NULL OR excluded.last_success_at > last_success_at) THEN excluded.last_success_at ELSE last_success_at END`;

/** Adds providers keys' health figures (one row per key in a batch). */
export function keyHealthAdder(sqlite: Database): (rows: readonly NewKeyHealthRow[]) => void {
  const upsert = sqlite.prepare<unknown, Array<string | number | null>>(KEY_HEALTH_UPSERT);
  return (rows) => {
    // Each its own statement: the SET expressions read the row as stored.
    for (const row of rows) {
      upsert.run(
        row.keyId, row.tenantId ?? 0, row.day, row.requests ?? 0, row.errors ?? 0, row.latencyMs ?? 0, row.spendNanos ?? 0,
        row.lastErrorAt ?? null, row.lastErrorStatus ?? null, row.lastErrorMessage ?? null, row.lastSuccessAt ?? null,
      );
    }
  };
}

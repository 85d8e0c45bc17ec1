import { keyHealth, type NewKeyHealthRow } from "../schema/key-health.ts";
import type { KeyHealthStore } from "../store.ts";
import { ofTenant } from "../key-health-upsert.ts";
import type { Connection } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";

type SqlValue = string | number | null;

/**
 * The upsert of src/store/key-health-upsert.ts, written out once for SQLite and prepared
 * on the raw connection, as the request log's INSERTs are: the query builder made and
 * rendered the statement again for every batch (about 100 µs each).
 */
const UPSERT = `INSERT INTO key_health (key_id, tenant_id, day, requests, errors, latency_ms, spend_nanos, last_error_at, last_error_status, last_error_message, last_success_at)
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

const valuesOf = (row: NewKeyHealthRow): SqlValue[] => [
  row.keyId,
  row.tenantId ?? 0,
  row.day,
  row.requests ?? 0,
  row.errors ?? 0,
  row.latencyMs ?? 0,
  row.spendNanos ?? 0,
  row.lastErrorAt ?? null,
  row.lastErrorStatus ?? null,
  row.lastErrorMessage ?? null,
  row.lastSuccessAt ?? null,
];

export function sqliteKeyHealth({ db, sqlite }: Connection): Synchronous<KeyHealthStore> {
  const upsert = sqlite.prepare<unknown, SqlValue[]>(UPSERT);
  return {
    add(rows) {
      // One row per key in a batch, each its own statement: the SET expressions read the row as stored.
      for (const row of rows) upsert.run(...valuesOf(row));
    },
    ofTenant: (tenantId) => db.select().from(keyHealth).where(ofTenant(keyHealth, tenantId)).all(),
  };
}

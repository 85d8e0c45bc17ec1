import { eq, sql, type AnyColumn, type SQL } from "drizzle-orm";

/** The columns of `key_health` in either dialect. */
interface KeyHealthColumns {
  day: AnyColumn;
  requests: AnyColumn;
  errors: AnyColumn;
  latencyMs: AnyColumn;
  spendNanos: AnyColumn;
  lastErrorAt: AnyColumn;
  lastErrorStatus: AnyColumn;
  lastErrorMessage: AnyColumn;
  lastSuccessAt: AnyColumn;
  tenantId: AnyColumn;
}

/**
 * The upsert of a batch's figures into `key_health`, the same SQL in both dialects
 * (`excluded` is the row offered): day counts add up on the same day, start afresh on a
 * newer one and are dropped for an older one; a later last error or success replaces
 * the stored one. Every expression reads the stored row as it was before the update.
 */
export function keyHealthUpsert(t: KeyHealthColumns): Record<string, SQL> {
  const sameDay = sql`${t.day} = excluded.day`;
  const newerDay = sql`${t.day} < excluded.day`;
  const count = (column: AnyColumn, name: string) =>
    sql`CASE WHEN ${sameDay} THEN ${column} + excluded.${sql.raw(name)} WHEN ${newerDay} THEN excluded.${sql.raw(name)} ELSE ${column} END`;
  const laterError = sql`excluded.last_error_at IS NOT NULL AND (${t.lastErrorAt} IS NULL OR excluded.last_error_at >= ${t.lastErrorAt})`;
  const ifLaterError = (column: AnyColumn, name: string) => sql`CASE WHEN ${laterError} THEN excluded.${sql.raw(name)} ELSE ${column} END`;
  return {
    requests: count(t.requests, "requests"),
    errors: count(t.errors, "errors"),
    latencyMs: count(t.latencyMs, "latency_ms"),
    spendNanos: count(t.spendNanos, "spend_nanos"),
    day: sql`CASE WHEN ${newerDay} THEN excluded.day ELSE ${t.day} END`,
    lastErrorAt: ifLaterError(t.lastErrorAt, "last_error_at"),
    lastErrorStatus: ifLaterError(t.lastErrorStatus, "last_error_status"),
    lastErrorMessage: ifLaterError(t.lastErrorMessage, "last_error_message"),
    lastSuccessAt: sql`CASE WHEN excluded.last_success_at IS NOT NULL AND (${t.lastSuccessAt} IS NULL OR excluded.last_success_at > ${t.lastSuccessAt}) THEN excluded.last_success_at ELSE ${t.lastSuccessAt} END`,
  };
}

export const ofTenant = (t: KeyHealthColumns, tenantId: number): SQL => eq(t.tenantId, tenantId);

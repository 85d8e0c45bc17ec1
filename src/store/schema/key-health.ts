import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * One row per provider key: its attempts of the current business day (requests, errors,
 * the sum of their durations, the spend of the calls it answered) and its last error and
 * last success whenever they were. Every instance's usage recorder adds its batches'
 * figures here (an upsert that starts the counts afresh on a new day), so the key list
 * reads the same figures from every instance: the store is the source of truth.
 */
export const keyHealth = sqliteTable(
  "key_health",
  {
  keyId: integer("key_id").primaryKey(),
  /** The tenant (0 in a single-tenant deployment; the owner's account id in the BYOK style). */
  tenantId: integer("tenant_id").notNull().default(0),
  /** The business day (`YYYY-MM-DD`, as bills use it) the counts below are of. */
  day: text("day").notNull(),
  requests: integer("requests").notNull().default(0),
  errors: integer("errors").notNull().default(0),
  /** Sum of the day's attempt durations (ms), for the average. */
  latencyMs: integer("latency_ms").notNull().default(0),
  /** Charges of the day's calls this key answered (nano-credits). */
  spendNanos: integer("spend_nanos").notNull().default(0),
  lastErrorAt: integer("last_error_at"),
  lastErrorStatus: integer("last_error_status"),
  /** Redacted as the request log's attempt messages (never a secret), cut to 500 characters. */
  lastErrorMessage: text("last_error_message"),
  lastSuccessAt: integer("last_success_at"),
  },
  // A tenant's keys are read together (the key list).
  (t) => [index("key_health_tenant").on(t.tenantId)],
);

export type KeyHealthRow = typeof keyHealth.$inferSelect;
/** A key's row always names its key (SQLite would otherwise number it). */
export type NewKeyHealthRow = typeof keyHealth.$inferInsert & { keyId: number };

import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * One row per completed model call. Token columns follow `Usage` (src/formats/usage.ts):
 * prompt includes cache reads/writes, completion includes reasoning. Cost is integer
 * nano-credits so sums stay exact.
 */
export const usageEvents = sqliteTable(
  "usage_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    requestId: text("request_id").notNull(),
    accountId: integer("account_id").notNull(),
    /** Business date (`YYYY-MM-DD`) in the server's zone, for daily bills and quotas. */
    day: text("day").notNull(),
    createdAt: integer("created_at").notNull(),
    endpoint: text("endpoint").notNull(),
    requestedModel: text("requested_model"),
    effectiveModel: text("effective_model"),
    level: integer("level"),
    keyId: integer("key_id"),
    status: integer("status").notNull(),
    stream: integer("stream", { mode: "boolean" }).notNull().default(false),
    promptTokens: integer("prompt_tokens").notNull().default(0),
    completionTokens: integer("completion_tokens").notNull().default(0),
    cacheReadTokens: integer("cache_read_tokens").notNull().default(0),
    cacheWriteTokens: integer("cache_write_tokens").notNull().default(0),
    reasoningTokens: integer("reasoning_tokens").notNull().default(0),
    /** `upstream` when the provider reported the counts, `estimated` otherwise. */
    source: text("source").notNull(),
    latencyMs: integer("latency_ms").notNull(),
    costNanos: integer("cost_nanos").notNull().default(0),
    /** Non-token quantities (images, seconds of audio/video) as JSON, for non-token pricing. */
    extra: text("extra"),
  },
  // Reports read the daily rollups; one index serves per-account lookups of raw rows. Every
  // index is paid on each insert, and rows are inserted once per call. The unique one
  // makes a row's write idempotent (`usageRowIdentity`): two writers of one call (a
  // Redis append whose answer was lost, a writer that died before clearing its claim)
  // store it once whatever their order. Request ids grow with time, so it is appended to.
  (t) => [
    index("usage_events_account_day").on(t.accountId, t.day),
    uniqueIndex("usage_events_identity").on(t.requestId, t.createdAt, t.endpoint, t.status),
  ],
);

export type UsageEventRow = typeof usageEvents.$inferSelect;
export type NewUsageEventRow = typeof usageEvents.$inferInsert;

/**
 * Daily per-account per-model totals, maintained in the same transaction as the usage
 * rows, so bills over months read a few thousand rows instead of millions. `model` is
 * the effective model (the one served and priced).
 *
 * The table is WITHOUT ROWID (migration 0009; drizzle cannot declare it): rows are
 * stored in primary-key order, so a bill scans them instead of looking each one up.
 * A generated migration that rebuilds this table must keep that clause.
 */
export const usageDaily = sqliteTable(
  "usage_daily",
  {
    accountId: integer("account_id").notNull(),
    day: text("day").notNull(),
    model: text("model").notNull(),
    requests: integer("requests").notNull().default(0),
    promptTokens: integer("prompt_tokens").notNull().default(0),
    completionTokens: integer("completion_tokens").notNull().default(0),
    reasoningTokens: integer("reasoning_tokens").notNull().default(0),
    cacheReadTokens: integer("cache_read_tokens").notNull().default(0),
    cacheWriteTokens: integer("cache_write_tokens").notNull().default(0),
    costNanos: integer("cost_nanos").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.day, t.model] }), index("usage_daily_day").on(t.day)],
);

export type UsageDailyRow = typeof usageDaily.$inferSelect;

/**
 * What a claim of usage rows from Redis released, written in the transaction that wrote
 * its rows: a retry of the claim (its writer's, or another's after it died) whose write
 * committed without its answer arriving releases exactly that, instead of guessing from
 * the rows it finds stored. Dropped once the claim is cleared from Redis.
 */
export const usageClaimWrites = sqliteTable("usage_claim_writes", {
  /** The claim's id in Redis (`#<n>`, given when the claim was made). */
  claim: text("claim").primaryKey(),
  /** The charges released, as JSON `[[accountId, nanos], …]`. */
  charged: text("charged").notNull(),
  /** The ledger's version once they were made, when one write made them all. */
  version: integer("version"),
  createdAt: integer("created_at").notNull(),
});

/**
 * Usage rows written as copies (sent again after Redis may have lost them, or written
 * directly after their append failed), by identity, with the process that wrote them,
 * in the transaction that wrote the row. A copy written first releases its call's
 * charge; the original, found stored later by a checked write, must then not release it
 * again, and a copy found stored releases it only when this process wrote it (a commit
 * whose answer was lost). Kept as long as the notes of claims (a week from their write).
 */
export const usageCopies = sqliteTable(
  "usage_copies",
  {
    requestId: text("request_id").notNull(),
    createdAt: integer("created_at").notNull(),
    endpoint: text("endpoint").notNull(),
    status: integer("status").notNull(),
    /** The writing process's id (random, one per process). */
    writer: text("writer").notNull(),
    /** When it was written (ms): marks are dropped a week later. */
    writtenAt: integer("written_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.requestId, t.createdAt, t.endpoint, t.status] })],
);

import { bigint, boolean, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";

const int8 = (name: string) => bigint(name, { mode: "number" });

/** The PostgreSQL twin of src/store/schema/usage.ts: token counts and costs are int8, as sums of them grow. */
export const usageEvents = pgTable(
  "usage_events",
  {
    id: int8("id").primaryKey().generatedByDefaultAsIdentity(),
    requestId: text("request_id").notNull(),
    accountId: integer("account_id").notNull(),
    day: text("day").notNull(),
    createdAt: int8("created_at").notNull(),
    endpoint: text("endpoint").notNull(),
    requestedModel: text("requested_model"),
    effectiveModel: text("effective_model"),
    level: integer("level"),
    keyId: integer("key_id"),
    status: integer("status").notNull(),
    stream: boolean("stream").notNull().default(false),
    promptTokens: int8("prompt_tokens").notNull().default(0),
    completionTokens: int8("completion_tokens").notNull().default(0),
    cacheReadTokens: int8("cache_read_tokens").notNull().default(0),
    cacheWriteTokens: int8("cache_write_tokens").notNull().default(0),
    reasoningTokens: int8("reasoning_tokens").notNull().default(0),
    source: text("source").notNull(),
    latencyMs: integer("latency_ms").notNull(),
    costNanos: int8("cost_nanos").notNull().default(0),
    extra: text("extra"),
  },
  (t) => [
    index("usage_events_account_day").on(t.accountId, t.day),
    uniqueIndex("usage_events_identity").on(t.requestId, t.createdAt, t.endpoint, t.status),
  ],
);

export const usageDaily = pgTable(
  "usage_daily",
  {
    accountId: integer("account_id").notNull(),
    day: text("day").notNull(),
    model: text("model").notNull(),
    requests: int8("requests").notNull().default(0),
    promptTokens: int8("prompt_tokens").notNull().default(0),
    completionTokens: int8("completion_tokens").notNull().default(0),
    reasoningTokens: int8("reasoning_tokens").notNull().default(0),
    cacheReadTokens: int8("cache_read_tokens").notNull().default(0),
    cacheWriteTokens: int8("cache_write_tokens").notNull().default(0),
    costNanos: int8("cost_nanos").notNull().default(0),
  },
  // text_pattern_ops: month totals scan `day LIKE '2026-03-%'`, which uses it under any collation.
  (t) => [primaryKey({ columns: [t.accountId, t.day, t.model] }), index("usage_daily_day").on(t.day.op("text_pattern_ops"))],
);

/** The PostgreSQL twin of `usage_claim_writes` (src/store/schema/usage.ts). */
export const usageClaimWrites = pgTable("usage_claim_writes", {
  claim: text("claim").primaryKey(),
  charged: text("charged").notNull(),
  version: int8("version"),
  createdAt: int8("created_at").notNull(),
});

export const usageCopies = pgTable(
  "usage_copies",
  {
    requestId: text("request_id").notNull(),
    createdAt: int8("created_at").notNull(),
    endpoint: text("endpoint").notNull(),
    status: integer("status").notNull(),
    writer: text("writer").notNull(),
    writtenAt: int8("written_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.requestId, t.createdAt, t.endpoint, t.status] })],
);

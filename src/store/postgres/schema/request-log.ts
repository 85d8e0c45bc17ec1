import { bigint, boolean, index, integer, pgTable, text } from "drizzle-orm/pg-core";

const int8 = (name: string) => bigint(name, { mode: "number" });

/** The PostgreSQL twin of src/store/schema/request-log.ts: times, token counts and costs are int8. */
export const requestLog = pgTable(
  "request_log",
  {
    requestId: text("request_id").primaryKey(),
    tenantId: integer("tenant_id").notNull().default(0),
    accountId: integer("account_id").notNull(),
    createdAt: int8("created_at").notNull(),
    family: text("family").notNull(),
    endpoint: text("endpoint").notNull(),
    requestedModel: text("requested_model"),
    effectiveModel: text("effective_model"),
    stream: boolean("stream").notNull().default(false),
    status: integer("status").notNull(),
    error: text("error"),
    attempts: text("attempts").notNull().default("[]"),
    keyIds: text("key_ids").notNull().default(","),
    levels: text("levels").notNull().default(","),
    ttfbMs: integer("ttfb_ms"),
    durationMs: integer("duration_ms").notNull(),
    promptTokens: int8("prompt_tokens").notNull().default(0),
    completionTokens: int8("completion_tokens").notNull().default(0),
    cacheReadTokens: int8("cache_read_tokens").notNull().default(0),
    cacheWriteTokens: int8("cache_write_tokens").notNull().default(0),
    reasoningTokens: int8("reasoning_tokens").notNull().default(0),
    costNanos: int8("cost_nanos").notNull().default(0),
    source: text("source").notNull(),
    clientIp: text("client_ip"),
    userAgent: text("user_agent"),
  },
  (t) => [
    index("request_log_tenant_created").on(t.tenantId, t.createdAt),
    index("request_log_account_created").on(t.accountId, t.createdAt),
    index("request_log_created").on(t.createdAt),
  ],
);

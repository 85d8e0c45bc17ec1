import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * One row per model call, keyed by the request id the router returns (`X-Request-Id`):
 * what an owner, a manager or the caller reads back through `GET /x-requests`. No request
 * or response body is stored. Rows older than `--request-log-days` are pruned.
 *
 * Migrations 0010 and 0011 made it in `router.db`; since, it lives in the request log's
 * own file (sqlite/request-log-file.ts creates it there with the same shape and moves the
 * rows of an older file), so a change to it goes there, not in a migration of the main file.
 */
export const requestLog = sqliteTable(
  "request_log",
  {
    requestId: text("request_id").primaryKey(),
    /** The tenant (0 in a single-tenant deployment; the owner's account id in the BYOK style). */
    tenantId: integer("tenant_id").notNull().default(0),
    accountId: integer("account_id").notNull(),
    /** When the call started (ms). */
    createdAt: integer("created_at").notNull(),
    family: text("family").notNull(),
    endpoint: text("endpoint").notNull(),
    requestedModel: text("requested_model"),
    effectiveModel: text("effective_model"),
    stream: integer("stream", { mode: "boolean" }).notNull().default(false),
    status: integer("status").notNull(),
    /**
     * Why the router itself refused or failed the call, as its error body's code (or its
     * type when it has none): `rpm_limit_reached`, `model_not_allowed`, …; null for calls
     * the upstream answered or refused itself (their attempts say why).
     */
    error: text("error"),
    /** JSON array of the upstream attempts (key, Level, status, error kind, redacted message, duration, answered). */
    attempts: text("attempts").notNull().default("[]"),
    /**
     * The attempts' key ids and Levels as `,3,7,`: "any attempt used key 3" is a LIKE on
     * `%,3,%`, the same in both dialects, without reading the JSON.
     */
    keyIds: text("key_ids").notNull().default(","),
    levels: text("levels").notNull().default(","),
    ttfbMs: integer("ttfb_ms"),
    durationMs: integer("duration_ms").notNull(),
    promptTokens: integer("prompt_tokens").notNull().default(0),
    completionTokens: integer("completion_tokens").notNull().default(0),
    cacheReadTokens: integer("cache_read_tokens").notNull().default(0),
    cacheWriteTokens: integer("cache_write_tokens").notNull().default(0),
    reasoningTokens: integer("reasoning_tokens").notNull().default(0),
    costNanos: integer("cost_nanos").notNull().default(0),
    /** `upstream` when the provider reported the counts, `estimated` otherwise. */
    source: text("source").notNull(),
    clientIp: text("client_ip"),
    userAgent: text("user_agent"),
  },
  // Newest-first pages per tenant (owners) and per account (an account's own calls);
  // the time index alone serves pruning.
  (t) => [
    index("request_log_tenant_created").on(t.tenantId, t.createdAt),
    index("request_log_account_created").on(t.accountId, t.createdAt),
    index("request_log_created").on(t.createdAt),
  ],
);

export type RequestLogRow = typeof requestLog.$inferSelect;
export type NewRequestLogRow = typeof requestLog.$inferInsert;

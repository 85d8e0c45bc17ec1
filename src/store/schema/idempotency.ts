import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Management writes sent with an `Idempotency-Key` (src/http/idempotency.ts): one row per
 * account and key, claimed before the write runs and completed with its answer, so a
 * retry of the same request gets that answer again instead of a second write. Kept a
 * day (pruned with the request log, every hour).
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    /** The account whose API key sent the request: keys of different accounts never meet. */
    accountId: integer("account_id").notNull(),
    key: text("key").notNull(),
    /**
     * HMAC-SHA-256 of the method, path and body, keyed from the sealing key (bodies can hold
     * passwords and provider secrets): a key sent again with another request is refused.
     * Rows written by routers before that hold the plain SHA-256 (src/http/idempotency.ts).
     */
    fingerprint: text("fingerprint").notNull(),
    /** The answer's status; 0 while the request runs. */
    status: integer("status").notNull().default(0),
    contentType: text("content_type"),
    /** The answer's body, sealed with the deployment's secret key (never one holding an API key: see `secret`). */
    body: text("body"),
    /** True when the answer held an API key: it is not kept, and a retry is told so. */
    secret: integer("secret", { mode: "boolean" }).notNull().default(false),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.key] }), index("idempotency_keys_created").on(t.createdAt)],
);

export type IdempotencyRow = typeof idempotencyKeys.$inferSelect;

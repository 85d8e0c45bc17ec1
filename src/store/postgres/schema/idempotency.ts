import { bigint, boolean, index, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";

/** The PostgreSQL twin of src/store/schema/idempotency.ts. */
export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    accountId: integer("account_id").notNull(),
    key: text("key").notNull(),
    fingerprint: text("fingerprint").notNull(),
    status: integer("status").notNull().default(0),
    contentType: text("content_type"),
    body: text("body"),
    secret: boolean("secret").notNull().default(false),
    createdAt: bigint("created_at", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.key] }), index("idempotency_keys_created").on(t.createdAt)],
);

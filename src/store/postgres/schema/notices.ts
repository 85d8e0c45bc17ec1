import { bigint, index, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";

/** The PostgreSQL twins of src/store/schema/notices.ts. */
export const softLimitNotices = pgTable(
  "soft_limit_notices",
  {
    accountId: integer("account_id").notNull(),
    month: text("month").notNull(),
    sentAt: bigint("sent_at", { mode: "number" }).notNull(),
    recipient: text("recipient").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.month] })],
);

export const notices = pgTable(
  "notices",
  {
    id: integer("id").primaryKey().generatedByDefaultAsIdentity(),
    tenantId: integer("tenant_id").notNull().default(0),
    title: text("title").notNull(),
    content: text("content").notNull(),
    authorId: integer("author_id").notNull(),
    targetId: integer("target_id"),
    createdAt: bigint("created_at", { mode: "number" }).notNull(),
    expiresAt: bigint("expires_at", { mode: "number" }).notNull(),
  },
  (t) => [index("notices_target").on(t.targetId, t.expiresAt), index("notices_author").on(t.authorId)],
);

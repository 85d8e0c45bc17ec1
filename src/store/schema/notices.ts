import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Soft-limit warnings already mailed: at most one per account per business month. */
export const softLimitNotices = sqliteTable(
  "soft_limit_notices",
  {
    accountId: integer("account_id").notNull(),
    month: text("month").notNull(),
    sentAt: integer("sent_at").notNull(),
    recipient: text("recipient").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.month] })],
);

/**
 * Broadcast notices (spec 2.5): `targetId` null is system-wide (owners only);
 * otherwise the notice reaches that account and its whole subtree. Times are
 * epoch milliseconds; an expired notice is no longer shown but stays until deleted.
 */
export const notices = sqliteTable(
  "notices",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** The tenant (0 in a single-tenant deployment; the owner's account id in the BYOK style). */
    tenantId: integer("tenant_id").notNull().default(0),
    title: text("title").notNull(),
    content: text("content").notNull(),
    authorId: integer("author_id").notNull(),
    targetId: integer("target_id"),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("notices_target").on(t.targetId, t.expiresAt), index("notices_author").on(t.authorId)],
);

export type NoticeRow = typeof notices.$inferSelect;

import { integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

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

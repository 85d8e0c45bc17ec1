import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** System configuration items (spec 2.4), one row per item, value as text. */
export const settings = sqliteTable("settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

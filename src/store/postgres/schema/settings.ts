import { bigint, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";

/** The PostgreSQL twin of src/store/schema/settings.ts. */
export const settings = pgTable(
  "settings",
  {
    tenantId: integer("tenant_id").notNull().default(0),
    key: text("key").notNull(),
    value: text("value").notNull(),
    updatedAt: bigint("updated_at", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.key] })],
);

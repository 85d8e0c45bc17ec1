import { integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * System configuration items (spec 2.4), one row per item and tenant. A single-tenant
 * deployment uses tenant 0; in the BYOK style each owner's tenant has its own items.
 */
export const settings = sqliteTable(
  "settings",
  {
    tenantId: integer("tenant_id").notNull().default(0),
    key: text("key").notNull(),
    value: text("value").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.key] })],
);

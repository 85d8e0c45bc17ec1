import { bigint, boolean, index, integer, pgTable, text } from "drizzle-orm/pg-core";

/** The PostgreSQL twin of src/store/schema/provider-keys.ts. */
export const providerKeys = pgTable(
  "provider_keys",
  {
    id: integer("id").primaryKey().generatedByDefaultAsIdentity(),
    tenantId: integer("tenant_id").notNull().default(0),
    name: text("name").notNull().default(""),
    level: integer("level").notNull(),
    provider: text("provider").notNull(),
    secretSealed: text("secret_sealed").notNull(),
    partialKey: text("partial_key").notNull(),
    noSleep: boolean("no_sleep").notNull().default(false),
    status: boolean("status").notNull().default(true),
    sleeping: boolean("sleeping").notNull().default(false),
    sleepReason: text("sleep_reason"),
    sleepUntil: bigint("sleep_until", { mode: "number" }),
    sleepCount: integer("sleep_count").notNull().default(0),
    config: text("config").notNull().default('{"provider_type":"standard"}'),
    createdAt: bigint("created_at", { mode: "number" }).notNull(),
    updatedAt: bigint("updated_at", { mode: "number" }).notNull(),
  },
  (t) => [index("provider_keys_level").on(t.level)],
);

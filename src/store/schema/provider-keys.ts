import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Upstream credentials (spec 2.1). The secret is sealed (AES-256-GCM), and so is
 * `partialKey`, its display form: the spec's last 20 characters are most or all of a short
 * secret. Rows written before it was sealed hold it in clear (`…` + tail) until the next
 * start seals them (admin/provider-keys/repository.ts). `Status` and `Sleeping` are
 * independent flags.
 */
export const providerKeys = sqliteTable(
  "provider_keys",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** The tenant (0 in a single-tenant deployment; the owner's account id in the BYOK style). */
    tenantId: integer("tenant_id").notNull().default(0),
    name: text("name").notNull().default(""),
    level: integer("level").notNull(),
    provider: text("provider").notNull(),
    secretSealed: text("secret_sealed").notNull(),
    partialKey: text("partial_key").notNull(),
    noSleep: integer("no_sleep", { mode: "boolean" }).notNull().default(false),
    status: integer("status", { mode: "boolean" }).notNull().default(true),
    sleeping: integer("sleeping", { mode: "boolean" }).notNull().default(false),
    /** Why the key sleeps: `manual`, `auth` (upstream 401/403), `errors` (repeated 429/5xx). */
    sleepReason: text("sleep_reason"),
    /** When an automatic sleep ends (ms); null while manual or credential sleep lasts until woken. */
    sleepUntil: integer("sleep_until"),
    /** Consecutive automatic sleeps, for the exponential cool-down. */
    sleepCount: integer("sleep_count").notNull().default(0),
    /** JSON: provider_type and its options. */
    config: text("config").notNull().default('{"provider_type":"standard"}'),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [index("provider_keys_level").on(t.level)],
);

export type ProviderKeyRow = typeof providerKeys.$inferSelect;

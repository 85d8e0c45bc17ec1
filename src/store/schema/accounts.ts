import { sql } from "drizzle-orm";
import { index, integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Accounts form a tree. `path` is the materialised ancestry including the account
 * itself (`/1/4/9/`), so a subtree is one indexed prefix scan. Deleted accounts keep
 * their row (usage history stays attributable) but lose their key and release their
 * email and name.
 *
 * Emails and names are unique per tree (`root_id`, the owner whose tree it is: the
 * scope every identifier is resolved in, and in the BYOK style the tenant), so one
 * tenant's accounts neither reveal nor block another's; an owner's email is also
 * unique among owners (one tree per address).
 */
export const accounts = sqliteTable(
  "accounts",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    parentId: integer("parent_id"),
    path: text("path").notNull().default(""),
    /**
     * The first segment of `path`: the owner whose tree the account is in (an owner's is
     * its own id). Stored so the per-tree unique indexes can hold it; set with the path.
     */
    rootId: integer("root_id").notNull(),
    depth: integer("depth").notNull(),
    isOwner: integer("is_owner", { mode: "boolean" }).notNull().default(false),
    email: text("email").notNull(),
    name: text("name").notNull(),
    alias: text("alias"),
    billingEmail: text("billing_email"),
    rates: real("rates").notNull().default(1),
    rpm: integer("rpm"),
    rph: integer("rph"),
    rpd: integer("rpd"),
    tpm: integer("tpm"),
    tph: integer("tph"),
    tpd: integer("tpd"),
    dailyLimit: real("daily_limit"),
    hardLimit: real("hard_limit"),
    softLimit: real("soft_limit"),
    /** JSON: model pattern → { rpm, rph, rpd, tpm, tph, tpd }. */
    modelLimits: text("model_limits"),
    allowIps: text("allow_ips"),
    allowModels: text("allow_models"),
    resources: text("resources"),
    /** SHA-256 (hex) of the API key; the key itself is never stored. */
    keyHash: text("key_hash").notNull(),
    /** First characters of the key, safe to show so a user can tell keys apart. */
    keyPrefix: text("key_prefix").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    deletedAt: integer("deleted_at"),
  },
  (t) => [
    uniqueIndex("accounts_key_hash").on(t.keyHash),
    uniqueIndex("accounts_root_email_live").on(t.rootId, t.email).where(sql`deleted_at IS NULL`),
    uniqueIndex("accounts_root_name_live").on(t.rootId, t.name).where(sql`deleted_at IS NULL`),
    uniqueIndex("accounts_owner_email_live").on(t.email).where(sql`deleted_at IS NULL AND is_owner`),
    index("accounts_parent").on(t.parentId),
    index("accounts_path").on(t.path),
  ],
);

/**
 * Credit is a ledger of grants. Amounts are integer nano-credits (1 credit = 1e9),
 * so sums stay exact; consumption draws from the grant that expires first.
 */
export const creditGrants = sqliteTable(
  "credit_grants",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    accountId: integer("account_id").notNull(),
    amount: integer("amount").notNull(),
    remaining: integer("remaining").notNull(),
    expiresAt: integer("expires_at"),
    grantedBy: integer("granted_by"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("credit_grants_account").on(t.accountId, t.expiresAt)],
);

export type AccountRow = typeof accounts.$inferSelect;
export type NewAccountRow = typeof accounts.$inferInsert;

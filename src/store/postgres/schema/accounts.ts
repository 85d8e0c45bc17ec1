import { sql } from "drizzle-orm";
import { bigint, boolean, doublePrecision, index, integer, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";

// The PostgreSQL twin of src/store/schema/accounts.ts: same tables, columns and
// indexes (test/unit/schema-dialects.test.ts holds them together), PostgreSQL types.
// Epoch-millisecond times and nano-credit amounts are int8 read back as numbers;
// ids are identities "by default", so a copied deployment keeps its ids.
const int8 = (name: string) => bigint(name, { mode: "number" });

export const accounts = pgTable(
  "accounts",
  {
    id: integer("id").primaryKey().generatedByDefaultAsIdentity(),
    parentId: integer("parent_id"),
    path: text("path").notNull().default(""),
    rootId: integer("root_id").notNull(),
    depth: integer("depth").notNull(),
    isOwner: boolean("is_owner").notNull().default(false),
    email: text("email").notNull(),
    name: text("name").notNull(),
    alias: text("alias"),
    billingEmail: text("billing_email"),
    rates: doublePrecision("rates").notNull().default(1),
    rpm: integer("rpm"),
    rph: integer("rph"),
    rpd: integer("rpd"),
    tpm: int8("tpm"),
    tph: int8("tph"),
    tpd: int8("tpd"),
    dailyLimit: doublePrecision("daily_limit"),
    hardLimit: doublePrecision("hard_limit"),
    softLimit: doublePrecision("soft_limit"),
    modelLimits: text("model_limits"),
    allowIps: text("allow_ips"),
    allowModels: text("allow_models"),
    resources: text("resources"),
    keyHash: text("key_hash").notNull(),
    keyPrefix: text("key_prefix").notNull(),
    createdAt: int8("created_at").notNull(),
    updatedAt: int8("updated_at").notNull(),
    deletedAt: int8("deleted_at"),
  },
  (t) => [
    uniqueIndex("accounts_key_hash").on(t.keyHash),
    uniqueIndex("accounts_root_email_live").on(t.rootId, t.email).where(sql`deleted_at IS NULL`),
    uniqueIndex("accounts_root_name_live").on(t.rootId, t.name).where(sql`deleted_at IS NULL`),
    uniqueIndex("accounts_owner_email_live").on(t.email).where(sql`deleted_at IS NULL AND is_owner`),
    index("accounts_parent").on(t.parentId),
    // text_pattern_ops: the subtree prefix scans (LIKE '/1/4/%', path ranges) use the
    // index whatever the database's collation; SQLite's default (binary) order does that already.
    index("accounts_path").on(t.path.op("text_pattern_ops")),
  ],
);

export const creditGrants = pgTable(
  "credit_grants",
  {
    id: int8("id").primaryKey().generatedByDefaultAsIdentity(),
    accountId: integer("account_id").notNull(),
    amount: int8("amount").notNull(),
    remaining: int8("remaining").notNull(),
    expiresAt: int8("expires_at"),
    grantedBy: integer("granted_by"),
    createdAt: int8("created_at").notNull(),
  },
  (t) => [index("credit_grants_account").on(t.accountId, t.expiresAt)],
);



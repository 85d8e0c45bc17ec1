import { bigint, index, integer, pgTable, text } from "drizzle-orm/pg-core";

/** The PostgreSQL twin of src/store/schema/affinity.ts. */
export const upstreamObjects = pgTable(
  "upstream_objects",
  {
    objectId: text("object_id").primaryKey(),
    kind: text("kind").notNull(),
    accountId: integer("account_id").notNull(),
    keyId: integer("key_id").notNull(),
    createdAt: bigint("created_at", { mode: "number" }).notNull(),
    mintedBy: text("minted_by"),
  },
  (t) => [index("upstream_objects_account").on(t.accountId, t.kind)],
);

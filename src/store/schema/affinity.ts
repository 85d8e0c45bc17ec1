import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Upstream objects created through the router (files, responses, threads, runs,
 * video jobs, realtime client secrets): which account owns each and which provider
 * key holds it. Later calls on the object go to that key, and only its owner finds it.
 */
export const upstreamObjects = sqliteTable(
  "upstream_objects",
  {
    /**
     * The upstream's id for the object (`file-…`, `resp_…`, `thread_…`, a video request_id);
     * in a BYOK tenant `<tenant>:<id>` (gateway/affinity.ts: tenants' upstreams may number alike).
     */
    objectId: text("object_id").primaryKey(),
    kind: text("kind").notNull(),
    accountId: integer("account_id").notNull(),
    keyId: integer("key_id").notNull(),
    createdAt: integer("created_at").notNull(),
    /**
     * A realtime client secret's minter: the hash of the router key that minted it. The
     * secret dies with that key (a rotation), as the sessions it opened do. Null for other
     * objects, and for secrets minted before the column (accepted as they were).
     */
    mintedBy: text("minted_by"),
  },
  (t) => [index("upstream_objects_account").on(t.accountId, t.kind)],
);

export type UpstreamObjectRow = typeof upstreamObjects.$inferSelect;

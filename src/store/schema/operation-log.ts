import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Every management write (spec 2.5): who did what to whom, from where. Details never hold a secret. */
export const operationLog = sqliteTable(
  "operation_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** The tenant (0 in a single-tenant deployment; the owner's account id in the BYOK style). */
    tenantId: integer("tenant_id").notNull().default(0),
    at: integer("at").notNull(),
    /** The account that made the change; null for the CLI. */
    actorId: integer("actor_id"),
    action: text("action").notNull(),
    /** The account the change was about, when it was about one. */
    targetId: integer("target_id"),
    /** JSON object describing the change (secrets masked). */
    details: text("details").notNull().default("{}"),
    ip: text("ip"),
  },
  // A tenant's log and one account's history are pages of their own index: with the time
  // index alone, both read every row of every tenant for the count and the page.
  (t) => [
    index("operation_log_at").on(t.at),
    index("operation_log_actor").on(t.actorId),
    index("operation_log_tenant_at").on(t.tenantId, t.at),
    index("operation_log_target_at").on(t.targetId, t.at),
  ],
);

export type OperationLogRow = typeof operationLog.$inferSelect;

import { bigint, index, integer, pgTable, text } from "drizzle-orm/pg-core";

/** The PostgreSQL twin of src/store/schema/operation-log.ts. */
export const operationLog = pgTable(
  "operation_log",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    tenantId: integer("tenant_id").notNull().default(0),
    at: bigint("at", { mode: "number" }).notNull(),
    actorId: integer("actor_id"),
    action: text("action").notNull(),
    targetId: integer("target_id"),
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

import { bigint, index, integer, pgTable, text } from "drizzle-orm/pg-core";

const int8 = (name: string) => bigint(name, { mode: "number" });

/** The PostgreSQL twin of src/store/schema/key-health.ts: times, sums and spend are int8. */
export const keyHealth = pgTable(
  "key_health",
  {
  keyId: integer("key_id").primaryKey(),
  tenantId: integer("tenant_id").notNull().default(0),
  day: text("day").notNull(),
  requests: int8("requests").notNull().default(0),
  errors: int8("errors").notNull().default(0),
  latencyMs: int8("latency_ms").notNull().default(0),
  spendNanos: int8("spend_nanos").notNull().default(0),
  lastErrorAt: int8("last_error_at"),
  lastErrorStatus: integer("last_error_status"),
  lastErrorMessage: text("last_error_message"),
  lastSuccessAt: int8("last_success_at"),
  },
  // A tenant's keys are read together (the key list).
  (t) => [index("key_health_tenant").on(t.tenantId)],
);

import { bigint, integer, pgTable } from "drizzle-orm/pg-core";

/**
 * The PostgreSQL twin of src/store/schema/watched-writes.ts, kept so both schemas are
 * one shape: on PostgreSQL nothing counts in it, since every change is announced on the
 * invalidation bus.
 */
export const watchedWrites = pgTable("watched_writes", {
  id: integer("id").primaryKey(),
  writes: bigint("writes", { mode: "number" }).notNull().default(0),
});

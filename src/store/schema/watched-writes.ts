import { integer, sqliteTable } from "drizzle-orm/sqlite-core";

/**
 * How many rows of the tables the server caches (accounts, provider keys, settings)
 * were written through the router: one row, id 1, counted by TEMP triggers of every
 * connection that opens the file through the store (src/store/sqlite/watched-writes.ts).
 * Each connection also counts its own writes, so the server tells another process's
 * changes (the CLI's, another instance's) from its own and drops its caches for them.
 */
export const watchedWrites = sqliteTable("watched_writes", {
  id: integer("id").primaryKey(),
  writes: integer("writes").notNull().default(0),
});

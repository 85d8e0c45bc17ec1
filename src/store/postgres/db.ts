import type { SQL } from "bun";
import type { PgDatabase } from "drizzle-orm/pg-core";
import { drizzle, type BunSQLQueryResultHKT } from "drizzle-orm/bun-sql";

/** drizzle over the pool, over a reserved connection or inside its transaction: the repositories take any. */
export type Db = PgDatabase<BunSQLQueryResultHKT>;

/**
 * drizzle over one client (the pool or a reserved connection). Without the schema: the
 * repositories use the query builder, not the relational API, and reading the schema's
 * relations on every transaction showed in the scale-out profile.
 */
export function drizzleOver(client: SQL): Db {
  return drizzle({ client });
}

/**
 * Where a repository runs: `db` for single statements, `atomic` for a call of several
 * statements that must commit together (a transaction of its own outside one, a
 * savepoint inside the open one).
 */
export interface Scope {
  readonly db: Db;
  /** The client under `db`, for the hand-written statements of the hot writes. */
  readonly sql: SQL;
  atomic<T>(body: (db: Db, sql: SQL) => Promise<T>): Promise<T>;
}

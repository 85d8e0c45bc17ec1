import type { SQL } from "bun";
import type { PgDatabase } from "drizzle-orm/pg-core";
import { drizzle, type BunSQLQueryResultHKT } from "drizzle-orm/bun-sql";
import * as schema from "./schema/index.ts";

/** drizzle over the pool, over a reserved connection or inside its transaction: the repositories take any. */
export type Db = PgDatabase<BunSQLQueryResultHKT, typeof schema>;

/** drizzle over one client (the pool or a reserved connection). */
export function drizzleOver(client: SQL): Db {
  return drizzle({ client, schema });
}

/**
 * Where a repository runs: `db` for single statements, `atomic` for a call of several
 * statements that must commit together (a transaction of its own outside one, a
 * savepoint inside the open one).
 */
export interface Scope {
  readonly db: Db;
  atomic<T>(body: (db: Db) => Promise<T>): Promise<T>;
}

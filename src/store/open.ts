import { openPostgresStore, type PostgresOptions } from "./postgres/index.ts";
import { openSqliteStore } from "./sqlite/store.ts";
import type { Store } from "./store.ts";

/** Opens the store of a deployment: the embedded SQLite file (migrated on open). */
export function openStore(path: string, options: { migrate?: boolean } = {}): Store {
  return openSqliteStore(path, options);
}

/**
 * The store `serve` runs on: PostgreSQL when a database URL is given (migrated first;
 * failures name the server, never the URL's password), else the SQLite file at `path`.
 */
export async function openServeStore(database: string | undefined, path: string, onAhead?: PostgresOptions["onAhead"]): Promise<Store> {
  return database === undefined ? openStore(path) : await openPostgresStore(database, { onAhead });
}

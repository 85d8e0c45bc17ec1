import { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import * as schema from "./schema/index.ts";
import { migrations } from "./migrations/index.ts";
import { migrate } from "./migrate.ts";

/** drizzle over the connection; `$client` is the raw connection for prepared hot queries. */
export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

export interface Store {
  /** The raw connection, for pragmas and hand-tuned hot queries. */
  readonly sqlite: Database;
  /** drizzle over the same connection. */
  readonly db: Db;
  /** True once another process (e.g. `router owner create`) committed since the last call. */
  changedElsewhere(): boolean;
  close(): void;
}

export interface OpenStoreOptions {
  /** Apply pending migrations (default true). */
  migrate?: boolean;
}

/**
 * Opens (creating if needed) the SQLite database: WAL so readers never wait for the
 * writer, a busy timeout so the CLI and a running server can share the file, foreign
 * keys on.
 */
export function openStore(path: string, options: OpenStoreOptions = {}): Store {
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.run("PRAGMA journal_mode = WAL");
  sqlite.run("PRAGMA busy_timeout = 5000");
  sqlite.run("PRAGMA foreign_keys = ON");
  sqlite.run("PRAGMA synchronous = NORMAL");
  if (options.migrate !== false) migrate(sqlite, migrations);
  const dataVersion = sqlite.query<{ data_version: number }, []>("PRAGMA data_version");
  // data_version changes only when *another* connection commits: exactly the signal
  // for dropping caches that a separate CLI process made stale.
  let lastVersion = dataVersion.get()?.data_version ?? 0;
  return {
    sqlite,
    db: drizzle(sqlite, { schema }),
    changedElsewhere() {
      const version = dataVersion.get()?.data_version ?? 0;
      if (version === lastVersion) return false;
      lastVersion = version;
      return true;
    },
    close() {
      dataVersion.finalize();
      sqlite.close();
    },
  };
}

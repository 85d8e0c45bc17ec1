import { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import * as schema from "../schema/index.ts";
import { migrations } from "../migrations/index.ts";
import { migrate } from "./migrate.ts";
import { attachRequestLog, requestLogFileOf } from "./request-log-file.ts";
import { watchOtherWriters } from "./watched-writes.ts";

/** drizzle over the connection; `$client` is the raw connection for prepared hot queries. */
export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

/** The embedded database: one connection, used by the SQLite repositories only. */
export interface Connection {
  /** The raw connection, for pragmas and hand-tuned hot queries. */
  readonly sqlite: Database;
  /** drizzle over the same connection. */
  readonly db: Db;
  /** The file, for the upkeep thread's own connection (WAL checkpoints). */
  readonly path: string;
  /** The request log's file, for its writer's own connection. */
  readonly requestLogPath: string;
  /**
   * True once another connection (the CLI, e.g. `router owner create`; another instance)
   * wrote to the tables the server caches since the last call (watched-writes.ts).
   */
  changedElsewhere(): boolean;
  close(): void;
}

export interface OpenOptions {
  /** Apply pending migrations (default true). */
  migrate?: boolean;
}

/**
 * Opens (creating if needed) the SQLite database: WAL so readers never wait for the
 * writer, a busy timeout so the CLI and a running server can share the file, foreign
 * keys on.
 */
export function openConnection(path: string, options: OpenOptions = {}): Connection {
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.run("PRAGMA journal_mode = WAL");
  sqlite.run("PRAGMA busy_timeout = 5000");
  sqlite.run("PRAGMA foreign_keys = ON");
  sqlite.run("PRAGMA synchronous = NORMAL");
  if (options.migrate !== false) migrate(sqlite, migrations);
  // The request log's own file (request-log-file.ts), attached: its rows are read here and written by a thread of their own.
  attachRequestLog(sqlite, path, { adopt: options.migrate !== false });
  const othersWrites = watchOtherWriters(sqlite);
  let seen = othersWrites();
  return {
    sqlite,
    db: drizzle(sqlite, { schema }),
    path,
    requestLogPath: requestLogFileOf(path),
    changedElsewhere() {
      const writes = othersWrites();
      if (writes === seen) return false;
      seen = writes;
      return true;
    },
    close() {
      sqlite.close();
    },
  };
}

/** Applies pending migrations to the database file and returns their names (`router migrate`). */
export function migrateFile(path: string): string[] {
  const sqlite = new Database(path, { create: true, strict: true });
  try {
    sqlite.run("PRAGMA busy_timeout = 5000");
    return migrate(sqlite, migrations);
  } finally {
    sqlite.close();
  }
}

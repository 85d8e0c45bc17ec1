import { Database } from "bun:sqlite";
import { join } from "node:path";

/**
 * Tells `router rekey` whether a server runs on a single-machine data directory. Every
 * server on the SQLite file holds a read transaction open on `<data>/serving.lock` (a
 * SQLite file of its own: its locks are the system's file locks, which several servers
 * can hold together and which the system drops when a process dies, however it dies);
 * the rekey takes that file's exclusive lock for as long as it re-seals, which it cannot
 * get while any server holds its lock, and which keeps a server from starting meanwhile.
 * A pid file could not tell a crashed server from a live one; this can.
 */
const LOCK_FILE = "serving.lock";

/** How long a starting server waits for a rekey under way to finish. */
const SERVER_WAIT_MS = 30_000;

export interface HeldLock {
  release(): void;
}

function openLock(dataDir: string, waitMs: number): Database {
  const db = new Database(join(dataDir, LOCK_FILE), { create: true });
  db.run(`PRAGMA busy_timeout = ${waitMs}`);
  return db;
}

/** A server's share of the lock, for its life; throws when a rekey holds it past the wait. */
export function holdServingLock(dataDir: string, waitMs = SERVER_WAIT_MS): HeldLock {
  const db = openLock(dataDir, waitMs);
  try {
    db.run("CREATE TABLE IF NOT EXISTS serving (held INTEGER)");
    db.run("BEGIN");
    // The read takes the shared lock; the open transaction keeps it.
    db.query("SELECT count(*) FROM serving").get();
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code?.startsWith("SQLITE_BUSY")) {
      throw new Error(`a \`router rekey\` is re-sealing the secrets of ${dataDir}: start the server once it has finished, with the key it names`);
    }
    throw error;
  }
  return {
    release() {
      try {
        db.close(false);
      } catch {
        // The process is on its way out: the system drops the lock with it.
      }
    },
  };
}

/**
 * The rekey's exclusive lock, or undefined while a server runs on the directory (or
 * another rekey does).
 */
export function takeRekeyLock(dataDir: string): HeldLock | undefined {
  const db = openLock(dataDir, 0);
  try {
    db.run("BEGIN EXCLUSIVE");
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code?.startsWith("SQLITE_BUSY")) return undefined;
    throw error;
  }
  return {
    release() {
      db.run("ROLLBACK");
      db.close();
    },
  };
}

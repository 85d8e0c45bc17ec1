import { Database } from "bun:sqlite";

/**
 * Writes a compacted copy of the database at `source` to `target` with `VACUUM INTO`,
 * on its own connection: one consistent snapshot while the server keeps writing.
 */
export function vacuumInto(source: string, target: string): void {
  const db = new Database(source, { readwrite: true, create: false });
  try {
    db.run("PRAGMA busy_timeout = 10000");
    db.query("VACUUM INTO ?").run(target);
  } finally {
    db.close();
  }
}

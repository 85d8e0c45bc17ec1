import type { Database } from "bun:sqlite";

/**
 * The tables whose rows the server keeps in caches (principals and their chains,
 * tenants' keys and settings): a write to one by another process must reach them.
 */
const WATCHED = ["accounts", "provider_keys", "settings"];

/**
 * Counts this connection's writes to the watched tables, in `watched_writes`
 * (src/store/schema/watched-writes.ts) and in a TEMP table of its own, with TEMP
 * triggers (a TEMP trigger exists in the connection that made it only). Returns what
 * other connections wrote so far: the shared count less this connection's own. The
 * server compares it once a second and drops its caches when it moved.
 *
 * `PRAGMA data_version`, read before, changes with every commit of another connection:
 * the server's own usage writer on the upkeep thread commits several times a second,
 * and each would have emptied every cache. A writer that does not open the file through
 * the router (a hand-run `sqlite3`) is not counted: as on PostgreSQL, where changes
 * arrive on the invalidation bus, a change made around the router reaches it on restart.
 */
export function watchOtherWriters(sqlite: Database): () => number {
  const present = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM main.sqlite_master WHERE type = 'table' AND name = 'watched_writes'").get()?.n;
  // A file this version has not migrated (opened without migrating): nothing counts there.
  if (!present) return () => 0;
  sqlite.run("CREATE TEMP TABLE IF NOT EXISTS own_watched_writes (id INTEGER PRIMARY KEY, writes INTEGER NOT NULL)");
  sqlite.run("INSERT OR IGNORE INTO temp.own_watched_writes (id, writes) VALUES (1, 0)");
  for (const table of WATCHED) {
    for (const change of ["INSERT", "UPDATE", "DELETE"]) {
      sqlite.run(
        `CREATE TEMP TRIGGER IF NOT EXISTS "watched_${table}_${change.toLowerCase()}" AFTER ${change} ON main."${table}"
         BEGIN
           INSERT INTO main.watched_writes (id, writes) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET writes = writes + 1;
           UPDATE temp.own_watched_writes SET writes = writes + 1 WHERE id = 1;
         END`,
      );
    }
  }
  const others = sqlite.query<{ writes: number }, []>(
    "SELECT coalesce((SELECT writes FROM main.watched_writes WHERE id = 1), 0) - (SELECT writes FROM temp.own_watched_writes WHERE id = 1) AS writes",
  );
  return () => others.get()?.writes ?? 0;
}

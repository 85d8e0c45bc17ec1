import type { Database } from "bun:sqlite";
import { ADD_VERSION_COLUMN, pendingMigrations, type AppliedMigration, type Migration } from "../migration-plan.ts";
import { VERSION } from "../../version.ts";

/**
 * Applies the migrations not yet recorded in `schema_migrations`, each in its own
 * transaction, and returns the names applied. The SQL comes embedded in the
 * binary, so no migrations folder is needed at run time.
 */
export function migrate(sqlite: Database, migrations: Migration[], now: () => number = Date.now): string[] {
  sqlite.run(
    "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL, router_version TEXT)",
  );
  const hasVersion = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM pragma_table_info('schema_migrations') WHERE name = 'router_version'").get()?.n === 1;
  const applied = sqlite
    .query<AppliedMigration, []>(`SELECT name, ${hasVersion ? "router_version" : "NULL AS router_version"} FROM schema_migrations`)
    .all();
  const pending = pendingMigrations(migrations, applied);
  if (!hasVersion) sqlite.run(ADD_VERSION_COLUMN);
  const done: string[] = [];
  for (const migration of pending) {
    const { statements } = migration;
    try {
      sqlite.transaction(() => {
        for (const statement of statements) sqlite.run(statement);
        sqlite.run("INSERT INTO schema_migrations (name, applied_at, router_version) VALUES (?, ?, ?)", [migration.name, now(), VERSION]);
      })();
    } catch (error) {
      // Named as PostgreSQL's runner names it: SQLite's own message ("table … already
      // exists", "database or disk is full") does not say that a migration stopped.
      // SQLite's code stays on it: a full or read-only disk is then told as such (data-dir.ts).
      throw Object.assign(new Error(`migration ${migration.name} failed (nothing of it was applied): ${(error as Error).message}`, { cause: error }), {
        code: (error as { code?: unknown }).code,
      });
    }
    done.push(migration.name);
  }
  return done;
}

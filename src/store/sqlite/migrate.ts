import type { Database } from "bun:sqlite";
import { pendingMigrations, type Migration } from "../migration-plan.ts";

/**
 * Applies the migrations not yet recorded in `schema_migrations`, each in its own
 * transaction, and returns the names applied. The SQL comes embedded in the
 * binary, so no migrations folder is needed at run time.
 */
export function migrate(sqlite: Database, migrations: Migration[], now: () => number = Date.now): string[] {
  sqlite.run(
    "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL)",
  );
  const applied = new Set(
    sqlite
      .query<{ name: string }, []>("SELECT name FROM schema_migrations")
      .all()
      .map((row) => row.name),
  );
  const done: string[] = [];
  for (const migration of pendingMigrations(migrations, applied)) {
    const { statements } = migration;
    sqlite.transaction(() => {
      for (const statement of statements) sqlite.run(statement);
      sqlite.run("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", [migration.name, now()]);
    })();
    done.push(migration.name);
  }
  return done;
}

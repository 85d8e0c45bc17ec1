import type { Database } from "bun:sqlite";

export interface Migration {
  /** drizzle-kit's tag, e.g. `0000_accounts`; applied in array order. */
  name: string;
  sql: string;
}

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
  const known = new Set(migrations.map((m) => m.name));
  const unknown = [...applied].filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new Error(
      `the database was migrated by a newer router (unknown migrations: ${unknown.join(", ")}); use that version or a backup`,
    );
  }
  const done: string[] = [];
  for (const migration of migrations) {
    if (applied.has(migration.name)) continue;
    const statements = migration.sql
      .split("--> statement-breakpoint")
      .map((s) => s.trim())
      .filter(Boolean);
    sqlite.transaction(() => {
      for (const statement of statements) sqlite.run(statement);
      sqlite.run("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", [migration.name, now()]);
    })();
    done.push(migration.name);
  }
  return done;
}

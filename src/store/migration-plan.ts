import { VERSION } from "../version.ts";

/** An embedded migration: drizzle-kit's tag (`0000_accounts`; applied in array order) and its SQL. */
export interface Migration {
  name: string;
  sql: string;
}

/** A migration to apply: its name and its statements, as drizzle-kit separates them. */
export interface PendingMigration {
  name: string;
  statements: string[];
}

/** A row of `schema_migrations`: the router that applied it is known from this router on (null before). */
export interface AppliedMigration {
  name: string;
  router_version: string | null;
}

/**
 * `schema_migrations` in both dialects records each applied migration with the version
 * of the router that applied it, so an older router handed the database (a downgrade
 * after a failed upgrade) can say which version it needs. A table made before that
 * column gains it once the plan has accepted the database: a refused one is left as it was.
 */
export const ADD_VERSION_COLUMN = "ALTER TABLE schema_migrations ADD COLUMN router_version text";

/**
 * What a database still needs, given the migrations it recorded as applied; the same plan
 * for both dialects' runners. A database that recorded migrations this router does not
 * know was migrated by a newer one: it is refused rather than damaged, naming that
 * router's version (when it recorded one) and this one's.
 */
export function pendingMigrations(migrations: readonly Migration[], applied: readonly AppliedMigration[]): PendingMigration[] {
  const known = new Set(migrations.map((m) => m.name));
  const unknown = applied.filter((row) => !known.has(row.name));
  if (unknown.length > 0) {
    const versions = [...new Set(unknown.map((row) => row.router_version).filter((v): v is string => !!v))];
    const by = versions.length > 0 ? `router ${versions.join(", ")}` : "a newer router";
    const names = unknown.map((row) => row.name).join(", ");
    throw new Error(
      `the database was migrated by ${by} (this is router ${VERSION}, which does not know its migrations ${names}); ` +
        `run ${versions.length > 0 ? `router ${versions[versions.length - 1]}` : "that version"} or newer, or restore the backup taken before the upgrade`,
    );
  }
  const done = new Set(applied.map((row) => row.name));
  return migrations
    .filter((migration) => !done.has(migration.name))
    .map((migration) => ({
      name: migration.name,
      statements: migration.sql
        .split("--> statement-breakpoint")
        .map((s) => s.trim())
        .filter(Boolean),
    }));
}

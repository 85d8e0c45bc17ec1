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

/**
 * What a database still needs, given the names it recorded as applied; the same plan for
 * both dialects' runners. A database that recorded migrations this router does not know
 * was migrated by a newer one: it is refused rather than damaged.
 */
export function pendingMigrations(migrations: readonly Migration[], applied: ReadonlySet<string>): PendingMigration[] {
  const known = new Set(migrations.map((m) => m.name));
  const unknown = [...applied].filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new Error(`the database was migrated by a newer router (unknown migrations: ${unknown.join(", ")}); use that version or a backup`);
  }
  return migrations
    .filter((migration) => !applied.has(migration.name))
    .map((migration) => ({
      name: migration.name,
      statements: migration.sql
        .split("--> statement-breakpoint")
        .map((s) => s.trim())
        .filter(Boolean),
    }));
}

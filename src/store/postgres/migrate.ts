import type { SQL } from "bun";
import { ADD_VERSION_COLUMN, pendingMigrations, type AppliedMigration, type Migration } from "../migration-plan.ts";
import { SHARED_GENERATION, VERSION } from "../../version.ts";
import { LOCKS } from "./locks.ts";


/** Migrations a newer router of this generation applied that this one does not know, and who applied them. */
export interface AheadOfThis {
  names: string[];
  versions: string[];
}

/**
 * Applies the migrations not yet recorded in `schema_migrations` (the same record the
 * SQLite runner keeps, plus the shared-form generation of the router that applied each),
 * each in its own transaction, and returns the names applied.
 * Runs on one reserved connection under an advisory lock, so instances starting at
 * once apply each migration once; the SQL is embedded in the binary.
 *
 * Migrations this router does not know are refused (migration-plan.ts), except those a
 * router of its own generation applied: within a generation migrations only add
 * (test/unit/review-rolling-migrations.test.ts), so an instance of the previous version
 * restarted during a rolling upgrade serves on them; `onAhead` hears of them.
 */
export async function migratePostgres(client: SQL, migrations: Migration[], now: () => number = Date.now, onAhead?: (ahead: AheadOfThis) => void): Promise<string[]> {
  const connection = await client.reserve();
  const [lockClass, lockId] = LOCKS.migrations;
  try {
    await connection.unsafe("SELECT pg_advisory_lock($1, $2)", [lockClass, lockId]);
    try {
      await connection.unsafe("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY NOT NULL, applied_at bigint NOT NULL, router_version text, generation integer)");
      const columns = new Set(
        ((await connection.unsafe(
          "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'schema_migrations' AND column_name IN ('router_version', 'generation')",
        )) as Array<{ column_name: string }>).map((row) => row.column_name),
      );
      const hasVersion = columns.has("router_version");
      const hasGeneration = columns.has("generation");
      const rows = (await connection.unsafe(
        `SELECT name, ${hasVersion ? "router_version" : "NULL AS router_version"}, ${hasGeneration ? "generation" : "NULL AS generation"} FROM schema_migrations`,
      )) as Array<AppliedMigration & { generation: number | null }>;
      const known = new Set(migrations.map((m) => m.name));
      const ahead = rows.filter((row) => !known.has(row.name) && row.generation === SHARED_GENERATION);
      const pending = pendingMigrations(migrations, rows.filter((row) => !ahead.includes(row)));
      if (!hasVersion) await connection.unsafe(ADD_VERSION_COLUMN);
      if (!hasGeneration) await connection.unsafe("ALTER TABLE schema_migrations ADD COLUMN generation integer");
      if (ahead.length > 0) onAhead?.({ names: ahead.map((row) => row.name), versions: [...new Set(ahead.map((row) => row.router_version ?? "a newer router"))] });
      const done: string[] = [];
      for (const migration of pending) {
        const { statements } = migration;
        await connection.unsafe("BEGIN");
        try {
          for (const statement of statements) await connection.unsafe(statement);
          await connection.unsafe("INSERT INTO schema_migrations (name, applied_at, router_version, generation) VALUES ($1, $2, $3, $4)", [migration.name, now(), VERSION, SHARED_GENERATION]);
          await connection.unsafe("COMMIT");
        } catch (error) {
          await connection.unsafe("ROLLBACK");
          throw new Error(`migration ${migration.name} failed (nothing of it was applied): ${(error as Error).message}`);
        }
        done.push(migration.name);
      }
      return done;
    } finally {
      await connection.unsafe("SELECT pg_advisory_unlock($1, $2)", [lockClass, lockId]);
    }
  } finally {
    connection.release();
  }
}

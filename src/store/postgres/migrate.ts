import type { SQL } from "bun";
import { ADD_VERSION_COLUMN, pendingMigrations, type AppliedMigration, type Migration } from "../migration-plan.ts";
import { VERSION } from "../../version.ts";
import { LOCKS } from "./locks.ts";


/**
 * Applies the migrations not yet recorded in `schema_migrations` (the same record the
 * SQLite runner keeps), each in its own transaction, and returns the names applied.
 * Runs on one reserved connection under an advisory lock, so instances starting at
 * once apply each migration once; the SQL is embedded in the binary.
 */
export async function migratePostgres(client: SQL, migrations: Migration[], now: () => number = Date.now): Promise<string[]> {
  const connection = await client.reserve();
  const [lockClass, lockId] = LOCKS.migrations;
  try {
    await connection.unsafe("SELECT pg_advisory_lock($1, $2)", [lockClass, lockId]);
    try {
      await connection.unsafe("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY NOT NULL, applied_at bigint NOT NULL, router_version text)");
      const [column] = (await connection.unsafe(
        "SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'schema_migrations' AND column_name = 'router_version'",
      )) as Array<{ n: number }>;
      const hasVersion = column?.n === 1;
      const rows = (await connection.unsafe(`SELECT name, ${hasVersion ? "router_version" : "NULL AS router_version"} FROM schema_migrations`)) as AppliedMigration[];
      const pending = pendingMigrations(migrations, rows);
      if (!hasVersion) await connection.unsafe(ADD_VERSION_COLUMN);
      const done: string[] = [];
      for (const migration of pending) {
        const { statements } = migration;
        await connection.unsafe("BEGIN");
        try {
          for (const statement of statements) await connection.unsafe(statement);
          await connection.unsafe("INSERT INTO schema_migrations (name, applied_at, router_version) VALUES ($1, $2, $3)", [migration.name, now(), VERSION]);
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

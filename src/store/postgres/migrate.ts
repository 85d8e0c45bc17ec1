import type { SQL } from "bun";
import { pendingMigrations, type Migration } from "../migration-plan.ts";
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
      await connection.unsafe("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY NOT NULL, applied_at bigint NOT NULL)");
      const rows = (await connection.unsafe("SELECT name FROM schema_migrations")) as Array<{ name: string }>;
      const done: string[] = [];
      for (const migration of pendingMigrations(migrations, new Set(rows.map((row) => row.name)))) {
        const { statements } = migration;
        await connection.unsafe("BEGIN");
        try {
          for (const statement of statements) await connection.unsafe(statement);
          await connection.unsafe("INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)", [migration.name, now()]);
          await connection.unsafe("COMMIT");
        } catch (error) {
          await connection.unsafe("ROLLBACK");
          throw new Error(`migration ${migration.name} failed: ${(error as Error).message}`);
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

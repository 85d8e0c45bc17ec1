import { SQL } from "bun";
import { count, getTableColumns } from "drizzle-orm";
import { drizzleOver } from "../postgres/db.ts";
import { LOCKS } from "../postgres/locks.ts";
import { migratePostgres } from "../postgres/migrate.ts";
import { migrations } from "../postgres/migrations/index.ts";
import { describeFailure } from "../postgres/url.ts";
import type { Row } from "./source.ts";
import { COPIED_TABLES, type CopiedTable } from "./tables.ts";

/** PostgreSQL takes at most 65,535 parameters a statement; pages stay well below. */
const PARAMETERS_PER_STATEMENT = 30_000;
const MAX_ROWS_PER_STATEMENT = 1000;

/** Rows per INSERT for a table: as many as fit the parameter budget, at most 1,000. */
export function rowsPerStatement(table: CopiedTable): number {
  const columns = Object.keys(getTableColumns(table.postgres)).length;
  return Math.max(1, Math.min(MAX_ROWS_PER_STATEMENT, Math.floor(PARAMETERS_PER_STATEMENT / Math.max(1, columns))));
}

/** What the copy writes into, within one transaction. */
export interface TargetWriter {
  insert(table: CopiedTable, rows: Row[]): Promise<void>;
  /** Moves an identity's sequence so the next id given out is above `highest`. */
  advanceIdentity(table: CopiedTable, highest: number): Promise<void>;
}

/** The PostgreSQL database a deployment is copied into. */
export interface Target {
  /** Tables of the router's that already hold rows, with their counts (read before migrating too). */
  occupied(): Promise<Array<{ name: string; rows: number }>>;
  /** Applies pending migrations; returns their names. */
  migrate(): Promise<string[]>;
  /**
   * Runs `body` in one transaction holding the stores' writer lock, after checking again
   * that every table is empty: the copy lands whole or not at all, and a router started
   * on the database meanwhile neither writes into it nor sees half of it.
   */
  write(body: (writer: TargetWriter) => Promise<void>): Promise<void>;
  count(table: CopiedTable): Promise<number>;
  close(): Promise<void>;
}

export async function openTarget(url: string): Promise<Target> {
  const client = new SQL(url, { max: 2 });
  // Every failure names the server without the URL's password.
  const guarded = async <T>(step: () => Promise<T>): Promise<T> => {
    try {
      return await step();
    } catch (error) {
      if (error instanceof TargetNotEmpty) throw error;
      throw new Error(describeFailure(error, url));
    }
  };
  try {
    await guarded(() => client`SELECT 1`);
  } catch (error) {
    await client.close().catch(() => {});
    throw error;
  }
  const db = drizzleOver(client);

  const occupiedOver = async (run: (query: string, values?: unknown[]) => Promise<unknown>) => {
    const found: Array<{ name: string; rows: number }> = [];
    for (const table of COPIED_TABLES) {
      const [present] = (await run("SELECT to_regclass($1) IS NOT NULL AS present", [table.name])) as Array<{ present: boolean }>;
      if (!present?.present) continue;
      // The names come from COPIED_TABLES, never from input.
      const [row] = (await run(`SELECT count(*)::int8 AS n FROM "${table.name}"`)) as Array<{ n: string | number }>;
      const rows = Number(row?.n ?? 0);
      if (rows > 0) found.push({ name: table.name, rows });
    }
    return found;
  };

  return {
    occupied: () => guarded(() => occupiedOver((query, values) => client.unsafe(query, values))),
    migrate: () => guarded(() => migratePostgres(client, migrations)),
    write: (body) =>
      guarded(async () => {
        const connection = await client.reserve();
        try {
          await connection.unsafe("BEGIN");
          try {
            await connection.unsafe("SELECT pg_advisory_xact_lock($1, $2)", [...LOCKS.writer]);
            const occupied = await occupiedOver((query, values) => connection.unsafe(query, values));
            if (occupied.length > 0) throw new TargetNotEmpty(occupied);
            const txDb = drizzleOver(connection);
            await body({
              async insert(table, rows) {
                const size = rowsPerStatement(table);
                for (let i = 0; i < rows.length; i += size) {
                  try {
                    // The two declarations have one shape (schema-dialects test), so the row fits.
                    await txDb.insert(table.postgres).values(rows.slice(i, i + size) as never);
                  } catch (error) {
                    // A value PostgreSQL refuses (a NUL in text, a number past int4) names its table.
                    // The driver's own error, not drizzle's wrapper: that one lists every
                    // parameter of the statement (a thousand rows of data, sealed secrets too).
                    const cause = (error as { cause?: unknown }).cause ?? error;
                    const { message, code } = cause as { message?: string; code?: string };
                    throw Object.assign(new Error(`copying ${table.name}: ${message ?? String(error)}`), { code });
                  }
                }
              },
              async advanceIdentity(table, highest) {
                if (!table.identity) return;
                // is_called false at 1 for an empty table: the first id given out is 1, as on SQLite.
                await connection.unsafe("SELECT setval(pg_get_serial_sequence($1, $2), $3, $4)", [
                  table.name,
                  table.identity,
                  Math.max(1, highest),
                  highest > 0,
                ]);
              },
            });
            await connection.unsafe("COMMIT");
          } catch (error) {
            await connection.unsafe("ROLLBACK").catch(() => {});
            throw error;
          }
        } finally {
          connection.release();
        }
      }),
    count: (table) => guarded(async () => (await db.select({ n: count() }).from(table.postgres))[0]?.n ?? 0),
    close: () => client.close().catch(() => {}),
  };
}

/** The target already holds a deployment (or part of one): copying would mix two. */
export class TargetNotEmpty extends Error {
  constructor(readonly tables: Array<{ name: string; rows: number }>) {
    super(
      `the target database is not empty (${tables.map((t) => `${t.name}: ${t.rows} rows`).join(", ")}); ` +
        "migrate-data copies into an empty or freshly migrated database only, so it never mixes two deployments: create a new database and give its URL",
    );
  }
}

import { Database } from "bun:sqlite";
import { asc, count, getTableColumns, sql, type AnyColumn } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { existsSync, statSync } from "node:fs";
import { basename, dirname } from "node:path";
import { migrations } from "../migrations/index.ts";
import { pendingMigrations, type AppliedMigration } from "../migration-plan.ts";
import * as schema from "../schema/index.ts";
import { accounts } from "../schema/accounts.ts";
import type { Db } from "../sqlite/connection.ts";
import { attachRequestLog, requestLogFileOf } from "../sqlite/request-log-file.ts";
import { sqliteCredit } from "../sqlite/credit.ts";
import { databasePath } from "../data-dir.ts";
import type { CopiedTable } from "./tables.ts";

export type Row = Record<string, unknown>;

/** The SQLite file of `--from`: a data directory (its router.db) or the file itself. */
export function resolveSourcePath(from: string): string {
  if (!existsSync(from)) throw new Error(`nothing at ${from}: give a router's data directory or its router.db`);
  const path = statSync(from).isDirectory() ? databasePath(from) : from;
  if (!existsSync(path)) throw new Error(`${from} holds no router.db: give a router's data directory or its router.db`);
  return path;
}

/**
 * A single-machine deployment's database, opened read-only: the copy never changes the
 * source, so a failed or refused copy leaves the deployment as it was.
 */
export interface Source {
  readonly path: string;
  /**
   * Starts one read transaction: every page read until `endSnapshot` comes from the same
   * committed state, even while a router still writes to the file.
   */
  beginSnapshot(): void;
  endSnapshot(): void;
  /** The table's rows in primary-key order, `size` at a time. */
  pages(table: CopiedTable, size: number): Generator<Row[]>;
  count(table: CopiedTable): number;
  /** SQLite's AUTOINCREMENT high-water marks: ids of deleted rows are never given out again. */
  sequences(): Map<string, number>;
  /** Every account's id, deleted ones included. */
  accountIds(): number[];
  /** An account's balance as the SQLite credit repository computes it. */
  balance(accountId: number, now: number): number;
  close(): void;
}

export function openSource(path: string): Source {
  let sqlite: Database;
  try {
    sqlite = new Database(path, { readonly: true, strict: true });
    sqlite.run("PRAGMA busy_timeout = 5000");
    checkMigrations(sqlite, path);
    // The request log's own file, when this deployment has one (an older one kept the log in router.db).
    if (existsSync(requestLogFileOf(path))) attachRequestLog(sqlite, path, { adopt: false, readonly: true });
  } catch (error) {
    throw new Error(`cannot read ${path} as a router database: ${(error as Error).message}`);
  }
  const db = drizzle(sqlite, { schema }) as Db;
  // The embedded store's own credit repository over this read-only connection; only
  // its reads are used (preparing its writes is harmless, running them would fail).
  const credit = sqliteCredit({ sqlite, db, path, requestLogPath: requestLogFileOf(path), changedElsewhere: () => false, close: () => sqlite.close() });

  return {
    path,
    beginSnapshot: () => sqlite.run("BEGIN"),
    endSnapshot: () => {
      if (sqlite.inTransaction) sqlite.run("COMMIT");
    },
    *pages(table, size) {
      const keys = keyFields(table);
      let after: unknown[] | undefined;
      for (;;) {
        const query = db.select().from(table.sqlite);
        const page: Row[] = (after ? query.where(beyond(table.key, after)) : query)
          .orderBy(...table.key.map((column) => asc(column)))
          .limit(size)
          .all();
        if (page.length === 0) return;
        yield page;
        if (page.length < size) return;
        const last = page[page.length - 1]!;
        after = keys.map((field) => last[field]);
      }
    },
    count: (table) => db.select({ n: count() }).from(table.sqlite).get()?.n ?? 0,
    sequences() {
      const present = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM sqlite_master WHERE name = 'sqlite_sequence'").get()?.n;
      if (!present) return new Map();
      const rows = sqlite.query<{ name: string; seq: number }, []>("SELECT name, seq FROM sqlite_sequence").all();
      return new Map(rows.map((row) => [row.name, row.seq]));
    },
    accountIds: () =>
      db
        .select({ id: accounts.id })
        .from(accounts)
        .orderBy(asc(accounts.id))
        .all()
        .map((row) => row.id),
    balance: (accountId, now) => credit.balance(accountId, now),
    close: () => sqlite.close(),
  };
}

/**
 * The source must be at this router's schema, which is the one the PostgreSQL
 * migrations build: a file behind is migrated by its own `router migrate` first (the
 * copy does not change the source), one ahead belongs to a newer router.
 */
function checkMigrations(sqlite: Database, path: string): void {
  const hasRecord = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get()?.n;
  if (!hasRecord) throw new Error("it has no schema_migrations table");
  const hasVersion = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM pragma_table_info('schema_migrations') WHERE name = 'router_version'").get()?.n === 1;
  const applied = sqlite.query<AppliedMigration, []>(`SELECT name, ${hasVersion ? "router_version" : "NULL AS router_version"} FROM schema_migrations`).all();
  // A file migrated by a newer router is refused here, naming its version and this one's.
  const pending = pendingMigrations(migrations, applied).map((m) => m.name);
  if (pending.length > 0) {
    const how =
      basename(path) === "router.db"
        ? `run \`router migrate --data ${dirname(path)}\` first`
        : "put it in a data directory as router.db and run `router migrate --data <that directory>` first";
    throw new Error(`it lacks migrations ${pending.join(", ")}; ${how} (migrate-data leaves the source as it is)`);
  }
}

/** The row properties holding the key columns (drizzle names them by their JavaScript field). */
function keyFields(table: CopiedTable): string[] {
  const columns = Object.entries(getTableColumns(table.sqlite));
  return table.key.map((key) => {
    const found = columns.find(([, column]) => column === key);
    if (!found) throw new Error(`${table.name}: key column not in the table`);
    return found[0];
  });
}

/** Rows whose key comes after `after` in key order: a row-value comparison, which SQLite has since 3.15. */
function beyond(key: readonly AnyColumn[], after: readonly unknown[]) {
  return sql`(${sql.join([...key], sql`, `)}) > (${sql.join(
    after.map((value) => sql`${value}`),
    sql`, `,
  )})`;
}

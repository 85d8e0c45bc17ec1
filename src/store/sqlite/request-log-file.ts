import type { Database } from "bun:sqlite";
import { basename, dirname, join } from "node:path";
import { REQUEST_LOG_COLUMNS } from "../row-values.ts";
import { VERSION } from "../../version.ts";

/**
 * The embedded request log lives in a file of its own next to the database
 * (`router.db` → `router-requests.db`), attached to the main connection as `log`:
 *
 * - its rows are written by a thread of their own (request-log-writer.ts), so a model
 *   call's thread never pays for the insert (about 4.5 µs a row with its indexes);
 * - that thread's commits are not "another connection's" commits of the main file,
 *   whose `PRAGMA data_version` tells the server that the CLI changed accounts or keys
 *   (a writer on the main file would empty every cache each second);
 * - the log, the largest and fastest-growing table, stays out of the main file: pruning
 *   it fragments only its own file, and a backup of accounts, keys and credit does not
 *   copy 30 days of call records.
 *
 * Queries name the table unqualified: with no `request_log` in the main file, SQLite
 * finds the attached one.
 */
export const REQUEST_LOG_SCHEMA = "log";

/** The request log's file for a database file (`:memory:` keeps its log in memory too). */
export function requestLogFileOf(databaseFile: string): string {
  if (databaseFile === ":memory:" || databaseFile === "") return ":memory:";
  const name = basename(databaseFile);
  const stem = name.endsWith(".db") ? name.slice(0, -3) : name;
  return join(dirname(databaseFile), `${stem}-requests.db`);
}

/** The table as the main file's migrations left it (0010, 0011); its version is the file's user_version. */
const SCHEMA_V1 = [
  `CREATE TABLE IF NOT EXISTS log.request_log (
    request_id text PRIMARY KEY NOT NULL,
    tenant_id integer DEFAULT 0 NOT NULL,
    account_id integer NOT NULL,
    created_at integer NOT NULL,
    family text NOT NULL,
    endpoint text NOT NULL,
    requested_model text,
    effective_model text,
    stream integer DEFAULT false NOT NULL,
    status integer NOT NULL,
    attempts text DEFAULT '[]' NOT NULL,
    key_ids text DEFAULT ',' NOT NULL,
    levels text DEFAULT ',' NOT NULL,
    ttfb_ms integer,
    duration_ms integer NOT NULL,
    prompt_tokens integer DEFAULT 0 NOT NULL,
    completion_tokens integer DEFAULT 0 NOT NULL,
    cache_read_tokens integer DEFAULT 0 NOT NULL,
    cache_write_tokens integer DEFAULT 0 NOT NULL,
    reasoning_tokens integer DEFAULT 0 NOT NULL,
    cost_nanos integer DEFAULT 0 NOT NULL,
    source text NOT NULL,
    client_ip text,
    user_agent text,
    error text
  )`,
  "CREATE INDEX IF NOT EXISTS log.request_log_tenant_created ON request_log (tenant_id, created_at)",
  "CREATE INDEX IF NOT EXISTS log.request_log_account_created ON request_log (account_id, created_at)",
  "CREATE INDEX IF NOT EXISTS log.request_log_created ON request_log (created_at)",
];

/** The file's format this router writes (`PRAGMA user_version`): SCHEMA_V1. */
const REQUEST_LOG_VERSION = 1;

const COLUMNS = REQUEST_LOG_COLUMNS.join(", ");

/**
 * Attaches the request log's file to a connection of the main file, creating its table
 * on first use. With `adopt`, rows a version that kept the log in the main file left
 * there move to the log's file, then the main file's table is dropped: two commits, one
 * per file, so a crash between them leaves the rows in both, to move again on the next
 * start (a row copied twice is kept once).
 */
export function attachRequestLog(sqlite: Database, databaseFile: string, options: { adopt: boolean; readonly?: boolean }): void {
  const file = requestLogFileOf(databaseFile);
  sqlite.run(`ATTACH DATABASE ? AS ${REQUEST_LOG_SCHEMA}`, [file]);
  const version = sqlite.query<{ user_version: number }, []>(`PRAGMA ${REQUEST_LOG_SCHEMA}.user_version`).get()?.user_version ?? 0;
  // A format a newer router gave the file (a downgrade after a failed upgrade) is refused
  // before anything reads or writes it, as the main file's unknown migrations are.
  if (version > REQUEST_LOG_VERSION) {
    throw new Error(
      `the request log ${file} is in format ${version}, written by a newer router (this is router ${VERSION}, which knows format ${REQUEST_LOG_VERSION}); run that version or newer, or restore the backup taken before the upgrade`,
    );
  }
  if (options.readonly) return;
  sqlite.run(`PRAGMA ${REQUEST_LOG_SCHEMA}.journal_mode = WAL`);
  sqlite.run(`PRAGMA ${REQUEST_LOG_SCHEMA}.synchronous = NORMAL`);
  if (version < 1) {
    sqlite.transaction(() => {
      for (const statement of SCHEMA_V1) sqlite.run(statement);
      sqlite.run(`PRAGMA ${REQUEST_LOG_SCHEMA}.user_version = ${REQUEST_LOG_VERSION}`);
    })();
  }
  if (!options.adopt) return;
  const inMain = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM main.sqlite_master WHERE type = 'table' AND name = 'request_log'").get()?.n ?? 0;
  if (inMain === 0) return;
  sqlite.run(`INSERT OR IGNORE INTO ${REQUEST_LOG_SCHEMA}.request_log (${COLUMNS}) SELECT ${COLUMNS} FROM main.request_log`);
  sqlite.run("DROP TABLE main.request_log");
}

/**
 * `bun scripts/log-insert-lab.ts [VARIANT…] [--rows N] [--accounts N] [--dir DIR]`: what
 * a request-log row costs to insert, in isolation, the way the upkeep thread writes them
 * (request-log-service.ts: one transaction per batch of 1,024 rows, parsed from the flat
 * JSON the serving thread posts, 32-row INSERTs), into a log file that already holds
 * `--rows` rows (default 200,000) of `--accounts` accounts (default 50). Prints CPU per
 * row (user and kernel), and the WAL frames one batch writes.
 *
 * Variants change one thing each; several can be joined with `+`:
 *   current            the file as the router makes it
 *   journal-memory     PRAGMA temp_store = MEMORY (the upkeep thread's connections, b8ffccc)
 *   no-created         without the index on created_at alone
 *   no-account         without the index on (account_id, created_at)
 *   no-indexes         without any secondary index
 *   single-row         one-row INSERTs instead of 32-row ones
 *   cache-16m          a 16 MB page cache for the log file
 *
 * Measured 2026-11-28 (docs/benchmarks.md, fifteenth session): current 5.4 µs a row,
 * 3.5 of them in the kernel (the statement journals spilling to a temporary file);
 * journal-memory 3.0.
 */
import { Database } from "bun:sqlite";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { attachRequestLog } from "../src/store/sqlite/request-log-file.ts";
import { groupedInsert, requestLogInsert } from "../src/store/sqlite/grouped-insert.ts";
import { appendRequestLogValues, flatValues, REQUEST_LOG_COLUMNS, type SqlValue } from "../src/store/row-values.ts";
import type { NewRequestLogRow } from "../src/store/store.ts";
import { flag } from "./bench/cli.ts";

const BATCH_ROWS = 1024;
const MEASURED_BATCHES = 100;

const KNOWN = new Set(["current", "journal-memory", "no-created", "no-account", "no-indexes", "single-row", "cache-16m"]);

function measure(variant: string, root: string, preload: number, accounts: number): void {
  const parts = new Set(variant.split("+"));
  for (const part of parts) if (!KNOWN.has(part)) throw new Error(`unknown variant ${part}: one of ${[...KNOWN].join(", ")}`);
  const dir = join(root, variant);
  mkdirSync(dir, { recursive: true });
  const db = new Database(join(dir, "router.db"));
  db.run("PRAGMA journal_mode = WAL");
  attachRequestLog(db, join(dir, "router.db"), { adopt: false });
  if (parts.has("journal-memory")) db.run("PRAGMA temp_store = MEMORY");
  if (parts.has("cache-16m")) db.run("PRAGMA log.cache_size = -16000");
  if (parts.has("no-created") || parts.has("no-indexes")) db.run("DROP INDEX log.request_log_created");
  if (parts.has("no-account") || parts.has("no-indexes")) db.run("DROP INDEX log.request_log_account_created");
  if (parts.has("no-indexes")) db.run("DROP INDEX log.request_log_tenant_created");
  const insert = parts.has("single-row") ? oneRowAtATime(db) : requestLogInsert(db);
  const append = db.transaction((values: SqlValue[]) => insert(values));

  // Calls of `accounts` accounts, four a millisecond, a day ago onwards.
  let at = Date.now() - 86_400_000;
  let n = 0;
  const row = (): NewRequestLogRow => {
    if (++n % 4 === 0) at++;
    return {
      requestId: `req_${Bun.randomUUIDv7("hex", at).replaceAll("-", "")}`,
      tenantId: 0,
      accountId: 2 + (n % accounts),
      createdAt: at,
      family: "openai",
      endpoint: "/v1/chat/completions",
      requestedModel: "bench-model",
      effectiveModel: "bench-model",
      stream: false,
      status: 200,
      attempts: JSON.stringify([{ keyId: 2, keyName: "bench-b", level: 2, durationMs: 1, answered: true, status: 200 }]),
      keyIds: ",2,",
      levels: ",2,",
      ttfbMs: 1,
      durationMs: 1,
      promptTokens: 120,
      completionTokens: 12,
      costNanos: 31_500,
      source: "upstream",
      clientIp: "127.0.0.1",
      userAgent: null,
    };
  };
  // What the serving thread posts: the batch's values as one flat JSON array.
  const batch = () => JSON.stringify(flatValues(Array.from({ length: BATCH_ROWS }, row), appendRequestLogValues));
  for (let done = 0; done < preload; done += BATCH_ROWS) append(JSON.parse(batch()));
  const posted = Array.from({ length: MEASURED_BATCHES }, batch);

  const cpu0 = process.cpuUsage();
  for (const text of posted) append(JSON.parse(text));
  const cpu = process.cpuUsage(cpu0);
  const rows = MEASURED_BATCHES * BATCH_ROWS;

  db.run("PRAGMA log.wal_checkpoint(TRUNCATE)");
  append(JSON.parse(batch()));
  const frames = db.query<{ log: number }, []>("PRAGMA log.wal_checkpoint(PASSIVE)").get()?.log ?? 0;
  db.close();
  const us = (micros: number) => (micros / rows).toFixed(2);
  console.log(`${variant.padEnd(28)} CPU ${us(cpu.user + cpu.system)} µs a row (user ${us(cpu.user)}, kernel ${us(cpu.system)}); ${frames} WAL frames a batch`);
}

/** One-row INSERTs, prepared once. */
function oneRowAtATime(db: Database): (values: readonly SqlValue[]) => number {
  const one = groupedInsert(db, "request_log", REQUEST_LOG_COLUMNS, " ON CONFLICT DO NOTHING");
  const width = REQUEST_LOG_COLUMNS.length;
  return (values) => {
    let changes = 0;
    for (let i = 0; i < values.length; i += width) changes += one(values.slice(i, i + width));
    return changes;
  };
}

const variants = process.argv.slice(2).filter((arg, i, all) => !arg.startsWith("--") && !all[i - 1]?.startsWith("--"));
const given = flag("--dir");
const root = given ?? mkdtempSync(join(tmpdir(), "log-insert-lab-"));
try {
  for (const variant of variants.length > 0 ? variants : ["current", "journal-memory"]) {
    measure(variant, root, Number(flag("--rows") ?? 200_000), Number(flag("--accounts") ?? 50));
  }
} finally {
  if (!given) rmSync(root, { recursive: true, force: true });
}

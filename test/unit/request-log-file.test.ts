import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../src/core/log.ts";
import { migrateFile, openConnection } from "../../src/store/sqlite/connection.ts";
import { requestLogFileOf } from "../../src/store/sqlite/request-log-file.ts";
import { openSqliteStore } from "../../src/store/sqlite/store.ts";
import type { NewRequestLogRow, Store } from "../../src/store/store.ts";

/**
 * The embedded request log in its own file, written by a thread of its own once the
 * server's upkeep runs (docs/architecture.md, "Request log"): what a caller reads back
 * is the same, the main file holds no log, and the writer's commits do not look like
 * another process changing accounts or keys (which would empty every cache).
 */

const dir = mkdtempSync(join(tmpdir(), "router-log-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const T0 = Date.UTC(2026, 10, 27, 8);
const row = (n: number, fields: Partial<NewRequestLogRow> = {}): NewRequestLogRow => ({
  requestId: `req-${String(n).padStart(4, "0")}`,
  tenantId: 0,
  accountId: 1,
  createdAt: T0 + n,
  family: "openai",
  endpoint: "/v1/chat/completions",
  requestedModel: "m",
  effectiveModel: "m",
  stream: false,
  status: 200,
  attempts: '[{"keyId":1,"level":1,"status":200,"answered":true}]',
  keyIds: ",1,",
  levels: ",1,",
  durationMs: 3,
  promptTokens: 10,
  completionTokens: 5,
  costNanos: 7,
  source: "upstream",
  ...fields,
});
/** Starts the store's upkeep and waits until its request-log writer thread runs (it starts in the background). */
async function upkeepWithWriter(store: Store): Promise<() => Promise<void>> {
  const lines: string[] = [];
  const stop = store.startUpkeep(createLogger("debug", (line) => lines.push(line)));
  const deadline = Date.now() + 5000;
  while (!lines.some((line) => line.includes("request-log rows are written on their own thread")) && Date.now() < deadline) await Bun.sleep(20);
  expect(lines.join("\n")).toContain("request-log rows are written on their own thread");
  return stop;
}
const tablesOf = (file: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((t) => t.name);
  } finally {
    db.close();
  }
};

test("the log is a file of its own next to the database: router.db → router-requests.db", () => {
  expect(requestLogFileOf(join(dir, "router.db"))).toBe(join(dir, "router-requests.db"));
  expect(requestLogFileOf(":memory:")).toBe(":memory:");
  const file = join(dir, "fresh", "router.db");
  rmSync(join(dir, "fresh"), { recursive: true, force: true });
  mkdirSync(join(dir, "fresh"));
  const store = openSqliteStore(file);
  store.close();
  expect(tablesOf(file)).not.toContain("request_log");
  expect(tablesOf(join(dir, "fresh", "router-requests.db"))).toContain("request_log");
});

test("with upkeep running, rows go through the writer thread: read back in full, pruned there, and the main file does not look changed", async () => {
  const file = join(dir, "writer.db");
  const store = openSqliteStore(file);
  const stop = await upkeepWithWriter(store);
  try {
    store.changedElsewhere();
    await store.requests.append(Array.from({ length: 100 }, (_, i) => row(i)));
    await store.requests.append([row(100, { status: 502, error: "upstream_failed", clientIp: "10.0.0.9", userAgent: "ua/1" })]);
    const { rows, total } = await store.requests.list({ tenantId: 0 }, 1, 10);
    expect(total).toBe(101);
    expect(rows[0]).toMatchObject({ requestId: "req-0100", status: 502, error: "upstream_failed", clientIp: "10.0.0.9", userAgent: "ua/1", stream: false });
    expect(await store.requests.get(0, "req-0007")).toMatchObject({ costNanos: 7, keyIds: ",1,", attempts: '[{"keyId":1,"level":1,"status":200,"answered":true}]' });
    // The writer's commits are in the log's file: the main file's readers see no change by another process.
    expect(store.changedElsewhere()).toBe(false);
    expect(await store.requests.prune(T0 + 50)).toBe(50);
    expect((await store.requests.list({ tenantId: 0 }, 1, 1)).total).toBe(51);
    expect(store.changedElsewhere()).toBe(false);
    // Another process's write to the main file (through the router's store, as the CLI writes) is still noticed.
    const other = openConnection(file);
    other.sqlite.run("INSERT INTO settings (key, value, updated_at) VALUES ('probe', '1', 0) ON CONFLICT DO NOTHING");
    other.close();
    expect(store.changedElsewhere()).toBe(true);
  } finally {
    await stop();
    store.close();
  }
});

test("stopping upkeep writes what was posted before it", async () => {
  const file = join(dir, "stop.db");
  const store = openSqliteStore(file);
  const stop = await upkeepWithWriter(store);
  const appended = store.requests.append(Array.from({ length: 500 }, (_, i) => row(i)));
  await stop();
  await appended;
  store.close();
  const again = openSqliteStore(file);
  try {
    expect((await again.requests.list({ tenantId: 0 }, 1, 1)).total).toBe(500);
  } finally {
    again.close();
  }
});

test("a database that kept its log in the main file has the rows moved to the log's file when it opens", async () => {
  const file = join(dir, "older.db");
  // The layout before: migrations only, rows in the main file's request_log.
  migrateFile(file);
  const old = new Database(file);
  const insert = old.prepare(
    "INSERT INTO request_log (request_id, tenant_id, account_id, created_at, family, endpoint, status, duration_ms, source, error) VALUES (?, 0, 1, ?, 'openai', '/v1/chat/completions', ?, 2, 'upstream', ?)",
  );
  for (let i = 0; i < 3; i++) insert.run(`old-${i}`, T0 + i, i === 2 ? 429 : 200, i === 2 ? "rpm_limit_reached" : null);
  old.close();
  expect(existsSync(requestLogFileOf(file))).toBe(false);

  const store = openSqliteStore(file);
  try {
    const { rows, total } = await store.requests.list({ tenantId: 0 }, 1, 10);
    expect(total).toBe(3);
    expect(rows.map((r) => [r.requestId, r.status, r.error])).toEqual([
      ["old-2", 429, "rpm_limit_reached"],
      ["old-1", 200, null],
      ["old-0", 200, null],
    ]);
  } finally {
    store.close();
  }
  expect(tablesOf(file)).not.toContain("request_log");
  expect(tablesOf(requestLogFileOf(file))).toContain("request_log");
  // Opening again moves nothing twice.
  const again = openSqliteStore(file);
  try {
    expect((await again.requests.list({ tenantId: 0 }, 1, 10)).total).toBe(3);
  } finally {
    again.close();
  }
});

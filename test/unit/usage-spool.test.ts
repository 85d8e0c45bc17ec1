import { afterAll, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/core/log.ts";
import { usageRow } from "../../src/metering/usage-batch.ts";
import { createUsageRecorder } from "../../src/metering/usage-recorder.ts";
import { usageEvent, withTransactions } from "../helpers/usage-events.ts";
import { openUsageSpool } from "../../src/metering/usage-spool.ts";
import { openSqliteStore } from "../../src/store/sqlite/store.ts";
import type { Store } from "../../src/store/store.ts";

/**
 * One instance on a database without Redis: rows the database does not take are kept
 * on disk, so neither a crash nor a stop during an outage loses a charge, and rows read
 * back at start are written once, whether or not the run before got them in.
 */

const dir = mkdtempSync(join(tmpdir(), "router-spool-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const event = (n: number) => usageEvent(n, 1000 + n);
/** The store refusing every transaction while `down()` says so. */
const flakyStore = (store: Store, down: () => boolean): Store => withTransactions(store, (body, run) => (down() ? Promise.reject(new Error("database down")) : run(body)));

const recorderOn = (store: Store, spoolFile: string, logs: string[]) => {
  const log = createLogger("info", (line) => logs.push(line));
  return createUsageRecorder({ store, clock: createClock("UTC"), log, spool: openUsageSpool(spoolFile, log) });
};

test("while the database answers, the spool file is not written", async () => {
  const store = openSqliteStore(join(dir, "quiet.db"));
  const file = join(dir, "quiet.jsonl");
  const recorder = recorderOn(store, file, []);
  try {
    for (let i = 0; i < 5; i++) recorder.record(event(i));
    await recorder.flush();
    expect(await store.usage.events(0, 100)).toHaveLength(5);
    expect(statSync(file).size).toBe(0);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("rows the database refuses are kept on disk; after a crash the next start writes them once and empties the file", async () => {
  const store = openSqliteStore(join(dir, "crash.db"));
  const file = join(dir, "crash.jsonl");
  const logs: string[] = [];
  const first = recorderOn(flakyStore(store, () => true), file, logs);
  for (let i = 0; i < 3; i++) first.record(event(i));
  await first.flush();
  expect(first.backlog()).toBe(3);
  expect(readFileSync(file, "utf8").trim().split("\n")).toHaveLength(3);
  // More calls during the outage join them on the next failed write.
  first.record(event(3));
  await first.flush();
  expect(readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line).requestId)).toEqual(["req-0", "req-1", "req-2", "req-3"]);
  expect(first.onDisk()).toBe(4);
  // Killed: no stop, nothing written.
  first.halt();

  const charged: Array<ReadonlyMap<number, number>> = [];
  const second = recorderOn(store, file, logs);
  second.onCharged((map) => charged.push(map));
  try {
    await second.flush();
    expect((await store.usage.events(0, 100)).map((row) => row.requestId)).toEqual(["req-0", "req-1", "req-2", "req-3"]);
    expect(readFileSync(file, "utf8")).toBe("");
    expect(second.onDisk()).toBe(0);
    expect(second.backlog()).toBe(0);
    expect(logs.join("\n")).toContain("usage rows a previous run could not write are written now");
    // Their charges reach the ledger once, and are released once.
    expect(charged.reduce((sum, map) => sum + (map.get(1) ?? 0), 0)).toBe(1000 + 1001 + 1002 + 1003);
  } finally {
    await second.stop();
    store.close();
  }
});

test("rows left in the file by a run that wrote them and died before emptying it are not written or released again", async () => {
  const store = openSqliteStore(join(dir, "committed.db"));
  const file = join(dir, "committed.jsonl");
  const first = recorderOn(store, file, []);
  for (let i = 0; i < 2; i++) first.record(event(i));
  await first.flush();
  first.halt();
  // As if the process died between the commit and emptying the file; a torn last line too.
  const clock = createClock("UTC");
  appendFileSync(file, [0, 1].map((i) => `${JSON.stringify(usageRow(event(i), clock.businessDate(event(i).at)))}\n`).join("") + '{"requestId":"req-9","acc');

  const logs: string[] = [];
  const charged: Array<ReadonlyMap<number, number>> = [];
  const second = recorderOn(store, file, logs);
  second.onCharged((map) => charged.push(map));
  try {
    second.record(event(2));
    await second.flush();
    expect((await store.usage.events(0, 100)).map((row) => row.requestId)).toEqual(["req-0", "req-1", "req-2"]);
    expect(charged.reduce((sum, map) => sum + (map.get(1) ?? 0), 0)).toBe(1002);
    expect(logs.join("\n")).toContain("could not be read and is skipped");
    expect(readFileSync(file, "utf8")).toBe("");
  } finally {
    await second.stop();
    store.close();
  }
});

test("a stop while the database is away keeps the waiting rows for the next start", async () => {
  const store = openSqliteStore(join(dir, "stop.db"));
  const file = join(dir, "stop.jsonl");
  const logs: string[] = [];
  let down = true;
  const first = recorderOn(flakyStore(store, () => down), file, logs);
  first.record(event(0));
  first.record(event(1));
  await first.stop();
  expect(logs.join("\n")).toContain("they are kept on disk for the next start");
  down = false;
  const second = recorderOn(store, file, logs);
  try {
    await second.flush();
    expect((await store.usage.events(0, 100)).map((row) => row.requestId)).toEqual(["req-0", "req-1"]);
  } finally {
    await second.stop();
    store.close();
  }
});

test("a database that stops answering without failing the write: after a second its rows and those behind it are kept on disk", async () => {
  const store = openSqliteStore(join(dir, "stalled.db"));
  const file = join(dir, "stalled.jsonl");
  let release!: () => void;
  const stalled = new Promise<void>((resolve) => (release = resolve));
  // Every transaction waits until released, then fails: a connection that hangs, then drops.
  const hanging = withTransactions(store, () => stalled.then(() => Promise.reject(new Error("connection lost"))));
  const recorder = recorderOn(hanging, file, []);
  try {
    recorder.record(event(0));
    await Bun.sleep(200);
    recorder.record(event(1));
    expect(readFileSync(file, "utf8")).toBe("");
    await Bun.sleep(1300);
    expect(readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line).requestId)).toEqual(["req-0", "req-1"]);
  } finally {
    recorder.halt();
    release();
    store.close();
  }
});

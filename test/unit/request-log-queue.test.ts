import { expect, test } from "bun:test";
import { createLogger } from "../../src/core/log.ts";
import { createRequestLogQueue, LOG_BATCH_ROWS, LOG_WAIT_MS } from "../../src/metering/request-log-queue.ts";
import type { NewRequestLogRow } from "../../src/store/store.ts";

/**
 * Request-log rows go to the store in batches of their own (a commit's cost in the
 * log's file is mostly the index pages it rewrites): a row waits until the oldest has
 * waited LOG_WAIT_MS or a batch is full, a flush sends everything, and rows the store
 * refuses come back in front, in order, logged once per outage.
 */

const row = (n: number): NewRequestLogRow => ({
  requestId: `req-${n}`,
  accountId: 1,
  createdAt: n,
  family: "openai",
  endpoint: "/v1/chat/completions",
  status: 200,
  durationMs: 1,
  source: "upstream",
});

function harness(options: { limit?: number; failing?: () => boolean } = {}) {
  let now = 1_000;
  const batches: string[][] = [];
  const lines: string[] = [];
  const queue = createRequestLogQueue({
    append: async (rows) => {
      if (options.failing?.()) throw new Error("disk I/O error");
      batches.push(rows.map((r) => r.requestId));
    },
    log: createLogger("info", (line) => lines.push(line)),
    now: () => now,
    limit: options.limit ?? 100_000,
  });
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { queue, batches, lines, settle, advance: (ms: number) => (now += ms) };
}

test("a row waits until the oldest waiting row is LOG_WAIT_MS old, then every waiting row goes in one batch", async () => {
  const { queue, batches, settle, advance } = harness();
  queue.push(row(1));
  advance(LOG_WAIT_MS - 1);
  queue.push(row(2));
  queue.appendIfDue();
  await settle();
  expect(batches).toEqual([]);
  expect(queue.size).toBe(2);
  advance(1);
  queue.appendIfDue();
  await settle();
  expect(batches).toEqual([["req-1", "req-2"]]);
  expect(queue.size).toBe(0);
  // The next row starts a new wait of its own.
  queue.push(row(3));
  queue.appendIfDue();
  await settle();
  expect(batches).toHaveLength(1);
});

test("a full batch is appended right after the current work, without waiting", async () => {
  const { queue, batches, settle } = harness();
  for (let n = 0; n < LOG_BATCH_ROWS; n++) queue.push(row(n));
  expect(batches).toEqual([]);
  await settle();
  await settle();
  expect(batches).toHaveLength(1);
  expect(batches[0]).toHaveLength(LOG_BATCH_ROWS);
});

test("flush appends what waits at once, and waits for rows still reading their attempts' messages", async () => {
  const { queue, batches } = harness();
  queue.push(row(1));
  let read!: () => void;
  queue.pushAfter([new Promise<void>((resolve) => (read = resolve))], () => row(2));
  const flushed = queue.flush();
  setTimeout(() => read(), 5);
  await flushed;
  expect(batches.flat()).toEqual(["req-1", "req-2"]);
});

test("rows the store refuses come back in front of newer ones and are retried with the next batch; the outage is logged once", async () => {
  let down = true;
  const { queue, batches, lines, settle, advance } = harness({ failing: () => down });
  queue.push(row(1));
  await queue.flush();
  queue.push(row(2));
  await queue.flush();
  expect(batches).toEqual([]);
  expect(queue.size).toBe(2);
  expect(lines.filter((line) => line.includes("could not be written"))).toHaveLength(1);
  down = false;
  queue.push(row(3));
  advance(LOG_WAIT_MS);
  queue.appendIfDue();
  await settle();
  expect(batches).toEqual([["req-1", "req-2", "req-3"]]);
  expect(lines.filter((line) => line.includes("written again"))).toHaveLength(1);
});

test("past the bound, rows are dropped rather than held", async () => {
  const { queue, batches } = harness({ limit: 2 });
  for (let n = 1; n <= 4; n++) queue.push(row(n));
  queue.pushAfter([Promise.resolve()], () => row(5));
  await queue.flush();
  expect(batches.flat()).toEqual(["req-1", "req-2"]);
});

test("a batch the store refuses for a row's value goes one row at a time: the refused row is dropped and named in the log, the others are written", async () => {
  const written: string[] = [];
  const lines: string[] = [];
  const refusal = Object.assign(new Error("bigint out of range"), { errno: "22003" });
  const queue = createRequestLogQueue({
    append: async (rows) => {
      if (rows.some((r) => r.requestId === "req-2")) throw refusal;
      written.push(...rows.map((r) => r.requestId));
    },
    refused: (error) => error === refusal,
    log: createLogger("info", (line) => lines.push(line)),
    now: () => 0,
    limit: 100,
  });
  for (const n of [1, 2, 3]) queue.push(row(n));
  await queue.flush();
  expect(written).toEqual(["req-1", "req-3"]);
  expect(queue.size).toBe(0);
  expect(lines.join("\n")).toContain("req-2");
  // Later rows are not held back.
  queue.push(row(4));
  await queue.flush();
  expect(written).toEqual(["req-1", "req-3", "req-4"]);
});

import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/core/log.ts";
import { createUsageRecorder } from "../../src/metering/usage-recorder.ts";
import { usageRow } from "../../src/metering/usage-batch.ts";
import { faultyStore, usageEvent, withTransactions } from "../helpers/usage-events.ts";
import { openSqliteStore } from "../../src/store/sqlite/store.ts";
import type { NewUsageEventRow } from "../../src/store/store.ts";
import type { UsageBuffer } from "../../src/metering/usage-buffer.ts";

/**
 * The recorder without a durable buffer (one instance, no Redis): rows the database
 * refuses wait in memory and are written once it answers, each once; past the bound of
 * rows waiting it says it is full (admission then refuses model calls).
 */

const dir = mkdtempSync(join(tmpdir(), "router-recorder-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const event = (n: number) => usageEvent(n);

/** Runs `turn` in every turn of the event loop (as settlement runs after each turn's answers) for `ms`, or until it returns false. */
const inEveryTurn = (ms: number, turn: () => boolean) =>
  new Promise<void>((resolve) => {
    const until = performance.now() + ms;
    const next = () => (turn() && performance.now() < until ? setImmediate(next) : resolve());
    setImmediate(next);
  });

/** A durable buffer for the recorder: takes every row and hands nothing out, unless the test says otherwise. */
const fakeBuffer = (parts: Partial<UsageBuffer>): UsageBuffer => ({
  append: async () => {},
  claim: async () => ({ rows: [], waiting: 0 }),
  done: async () => {},
  release: async () => {},
  ...parts,
});

test("without a buffer, rows wait in memory while the database refuses them, up to the bound, and are written once after", async () => {
  const store = openSqliteStore(join(dir, "router.db"));
  let down = true;
  // The database refuses every transaction while `down`.
  const flaky = withTransactions(store, (body, run) => (down ? Promise.reject(new Error("database down")) : run(body)));
  const logs: string[] = [];
  const recorder = createUsageRecorder({ store: flaky, clock: createClock("UTC"), log: createLogger("info", (line) => logs.push(line)), backlogLimit: 3 });
  try {
    for (let i = 0; i < 2; i++) recorder.record(event(i));
    await recorder.flush();
    expect(recorder.backlog()).toBe(2);
    expect(recorder.full()).toBe(false);
    recorder.record(event(2));
    await recorder.flush();
    expect(recorder.full()).toBe(true);
    // One error for the outage, however many ticks retried.
    expect(logs.filter((line) => line.includes("could not be written"))).toHaveLength(1);
    down = false;
    await recorder.flush();
    expect(recorder.backlog()).toBe(0);
    expect(recorder.full()).toBe(false);
    expect((await store.usage.events(0, 100)).map((row) => row.requestId)).toEqual(["req-0", "req-1", "req-2"]);
    expect(logs.some((line) => line.includes("written again"))).toBe(true);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("with a shared buffer, rows other instances claimed and could not write count toward the bound: it does not fall when they take this instance's rows", async () => {
  const store = openSqliteStore(join(dir, "elsewhere.db"));
  // The queue is empty (another instance claimed it), this instance holds nothing, other claims hold 4 rows.
  let elsewhere = 4;
  const buffer = fakeBuffer({ claim: async () => ({ rows: [], waiting: 0, elsewhere }) });
  const recorder = createUsageRecorder({ store, clock: createClock("UTC"), log: createLogger("error"), buffer, backlogLimit: 5 });
  try {
    await recorder.flush();
    expect(recorder.backlog()).toBe(4);
    expect(recorder.full()).toBe(false);
    elsewhere = 5;
    await recorder.flush();
    expect(recorder.full()).toBe(true);
    // Written by their holders: the bound lets calls through again.
    elsewhere = 0;
    await recorder.flush();
    expect(recorder.full()).toBe(false);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("a call whose failed attempt's error body is still being read: its usage row is written at once, its log row once the read ends", async () => {
  const store = openSqliteStore(join(dir, "reading.db"));
  const recorder = createUsageRecorder({ store, clock: createClock("UTC"), log: createLogger("error") });
  try {
    let finishRead!: () => void;
    const attempt = { keyId: 1, keyName: "k", level: 1, status: 503, error: "status", durationMs: 3, answered: false } as { message?: string } & Record<string, unknown>;
    const reading = new Promise<void>((resolve) => {
      finishRead = () => {
        attempt.message = "overloaded";
        resolve();
      };
    });
    recorder.record({ ...event(100), logged: { tenantId: 0, family: "openai", trace: { attempts: [attempt as never], reading: [reading] } } });
    // The usage row does not wait: a write now stores it (the flush itself waits for the log row, so write through a tick).
    await Bun.sleep(120);
    expect((await store.usage.events(0, 10)).map((row) => row.requestId)).toContain("req-100");
    expect(await store.requests.get(0, "req-100")).toBeUndefined();
    finishRead();
    await recorder.flush();
    const logged = await store.requests.get(0, "req-100");
    expect(JSON.parse(logged!.attempts)[0].message).toBe("overloaded");
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("under steady traffic a tick writes the rows pending when it began, in a few transactions; rows settled meanwhile wait for the next tick", async () => {
  const store = openSqliteStore(join(dir, "steady.db"));
  let transactions = 0;
  // Each transaction takes a while (a database over the network), during which calls keep settling.
  const slow = withTransactions(store, async (body, run) => {
    transactions++;
    await Bun.sleep(2);
    return run(body);
  });
  const recorder = createUsageRecorder({ store: slow, clock: createClock("UTC"), log: createLogger("error", () => {}) });
  try {
    let n = 0;
    // Half a second of a call settling every millisecond or so.
    const until = performance.now() + 500;
    while (performance.now() < until) {
      recorder.record(event(n++));
      await Bun.sleep(1);
    }
    await recorder.flush();
    expect(recorder.backlog()).toBe(0);
    expect((await store.usage.events(0, 100_000)).length).toBe(n);
    // Ticks every 50 ms, each a transaction or two (slices of 64 rows), and the flush: well under one per few calls.
    expect(transactions).toBeLessThan(40);
    expect(n).toBeGreaterThan(200);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("a full batch between two ticks is written at once, not left for the next tick", async () => {
  const store = openSqliteStore(join(dir, "full-batch.db"));
  const recorder = createUsageRecorder({ store, clock: createClock("UTC"), log: createLogger("error", () => {}) });
  try {
    const started = performance.now();
    // 600 calls settle in one turn of the event loop (more than a batch: 500 rows).
    for (let i = 0; i < 600; i++) recorder.record(event(i));
    // The first tick comes 50 ms after the recorder started: the rows are stored before it.
    let stored = 0;
    while (stored === 0 && performance.now() - started < 45) {
      await Bun.sleep(2);
      stored = (await store.usage.events(0, 1000)).length;
    }
    expect(stored).toBeGreaterThan(0);
    await recorder.flush();
    expect((await store.usage.events(0, 1000)).length).toBe(600);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("calls settling in every turn of the event loop, as under load, do not hold the ticks back: the backlog stays small", async () => {
  const store = openSqliteStore(join(dir, "busy.db"));
  const recorder = createUsageRecorder({ store, clock: createClock("UTC"), log: createLogger("error", () => {}) });
  try {
    let n = 0;
    let most = 0;
    // Settlement runs after each turn's answers (core/after-answer.ts): a few calls settle
    // in every turn, for 600 ms or 40,000 calls.
    await inEveryTurn(600, () => {
      for (let i = 0; i < 20; i++) recorder.record(event(n++));
      most = Math.max(most, recorder.backlog());
      return n < 40_000;
    });
    // A tick's worth of calls and a batch in flight wait at most, never most of the run's calls.
    expect(most).toBeLessThan(n / 4);
    await recorder.flush();
    expect((await store.usage.events(0, 100_000)).length).toBe(n);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("while the database refuses writes, a full batch does not retry in every turn: the ticks retry, at their pace", async () => {
  const store = openSqliteStore(join(dir, "outage-pace.db"));
  let attempts = 0;
  let down = true;
  const flaky = withTransactions(store, (body, run) => {
    attempts++;
    return down ? Promise.reject(new Error("database down")) : run(body);
  });
  const recorder = createUsageRecorder({ store: flaky, clock: createClock("UTC"), log: createLogger("error", () => {}) });
  try {
    let n = 0;
    // Calls settle in every turn of the event loop for 300 ms (or 30,000 calls), with more than a batch waiting.
    const started = performance.now();
    await inEveryTurn(300, () => {
      for (let i = 0; i < 5; i++) recorder.record(event(n++));
      return n < 30_000;
    });
    const elapsed = performance.now() - started;
    // A tick every 50 ms retries (a write or two each): not one attempt per turn.
    expect(attempts).toBeLessThanOrEqual(2 * Math.ceil(elapsed / 50) + 2);
    down = false;
    await recorder.flush();
    expect((await store.usage.events(0, 100_000)).length).toBe(n);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("a batch refused for a value is written row by row; if the database goes away meanwhile, only the rows not yet written wait, and each row is stored once", async () => {
  const store = openSqliteStore(join(dir, "apart.db"));
  let calls = 0;
  const refused = Object.assign(new Error("a value out of range"), { code: "SQLITE_MISMATCH" });
  // 1st transaction: the batch is refused for a value; 2nd: the first row alone goes; 3rd: the database is away; then all is well.
  const flaky = withTransactions(store, (body, run) => {
    calls++;
    if (calls === 1) return Promise.reject(refused);
    if (calls === 3) return Promise.reject(new Error("database down"));
    return run(body);
  });
  const recorder = createUsageRecorder({ store: flaky, clock: createClock("UTC"), log: createLogger("error", () => {}) });
  const charged: number[] = [];
  recorder.onCharged((charges) => charged.push(...charges.values()));
  try {
    for (let i = 0; i < 3; i++) recorder.record({ ...event(i), costNanos: 10 });
    await recorder.flush();
    expect(recorder.backlog()).toBe(2);
    await recorder.flush();
    expect(recorder.backlog()).toBe(0);
    expect((await store.usage.events(0, 10)).map((r) => r.requestId)).toEqual(["req-0", "req-1", "req-2"]);
    // The first row's charge was announced when it was written, the others' with theirs.
    expect(charged.reduce((a, b) => a + b, 0)).toBe(30);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("a database that refuses every row from the start sets nothing aside: the rows wait, as in an outage (the fault may be the router's own statements)", async () => {
  const store = openSqliteStore(join(dir, "refuses-all.db"));
  const refused = Object.assign(new Error("a value out of range"), { code: "SQLITE_MISMATCH" });
  let refusing = true;
  const strict = withTransactions(store, (body, run) => (refusing ? Promise.reject(refused) : run(body)));
  const recorder = createUsageRecorder({ store: strict, clock: createClock("UTC"), log: createLogger("error", () => {}) });
  const aside: number[] = [];
  recorder.onSetAside((charges) => aside.push(...charges.values()));
  try {
    for (let i = 0; i < 3; i++) recorder.record({ ...event(i), costNanos: 10 });
    await recorder.flush();
    expect(recorder.backlog()).toBe(3);
    expect(aside).toEqual([]);
    refusing = false;
    await recorder.flush();
    expect((await store.usage.events(0, 10)).map((r) => r.requestId)).toEqual(["req-0", "req-1", "req-2"]);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("a write committed whose answer was lost (the connection dropped during COMMIT) is checked when retried: each row stored once, each charge released once", async () => {
  const store = openSqliteStore(join(dir, "lost-commit.db"));
  // The first transaction commits, then fails as if its answer never arrived.
  const { store: lossy, faults } = faultyStore(store);
  faults.loseNextAnswer = true;
  const recorder = createUsageRecorder({ store: lossy, clock: createClock("UTC"), log: createLogger("error", () => {}) });
  const released: Array<ReadonlyMap<number, number>> = [];
  recorder.onCharged((charged) => released.push(charged));
  try {
    recorder.record(usageEvent(0, 500));
    recorder.record(usageEvent(1, 700));
    await recorder.flush();
    expect(recorder.backlog()).toBe(2);
    await recorder.flush();
    expect(recorder.backlog()).toBe(0);
    expect((await store.usage.events(0, 100)).map((row) => row.requestId)).toEqual(["req-0", "req-1"]);
    expect(await store.credit.balance(1, Date.now())).toBe(-1200);
    // Nobody released them after the lost answer: the retry that finds them stored does, once.
    expect(released.reduce((sum, map) => sum + (map.get(1) ?? 0), 0)).toBe(1200);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("rows whose append failed, written from this process as copies with a commit whose answer was lost: the retry finds them stored, its own, and releases each charge once", async () => {
  const store = openSqliteStore(join(dir, "lost-append-lost-commit.db"));
  const { store: lossy, faults } = faultyStore(store);
  faults.loseNextAnswer = true;
  const buffer = fakeBuffer({
    async append() {
      throw new Error("Redis unreachable");
    },
  });
  const recorder = createUsageRecorder({ store: lossy, clock: createClock("UTC"), log: createLogger("error", () => {}), buffer });
  const released: Array<ReadonlyMap<number, number>> = [];
  recorder.onCharged((charged) => released.push(charged));
  try {
    recorder.record(usageEvent(0, 500));
    recorder.record(usageEvent(1, 700));
    const deadline = Date.now() + 5_000;
    while ((recorder.backlog() > 0 || faults.loseNextAnswer) && Date.now() < deadline) {
      await recorder.flush().catch(() => {});
      await Bun.sleep(5);
    }
    expect((await store.usage.events(0, 100)).map((row) => row.requestId)).toEqual(["req-0", "req-1"]);
    expect(await store.credit.balance(1, Date.now())).toBe(-1200);
    expect(released.reduce((sum, map) => sum + (map.get(1) ?? 0), 0)).toBe(1200);
  } finally {
    await recorder.stop().catch(() => {});
    store.close();
  }
});

/**
 * This process, whose appends to Redis lose their answer (Redis took each row: `taken`),
 * and another process on the same database, which writes what it claims from Redis
 * without checking; each with the charges it released.
 */
function lostAnswers(file: string) {
  const store = openSqliteStore(join(dir, file));
  const taken: NewUsageEventRow[] = [];
  const buffer = fakeBuffer({
    async append(row) {
      taken.push(row);
      throw new Error("Redis connection lost");
    },
  });
  const recorder = createUsageRecorder({ store, clock: createClock("UTC"), log: createLogger("error", () => {}), buffer });
  const other = createUsageRecorder({ store, clock: createClock("UTC"), log: createLogger("error", () => {}) });
  const released = { here: 0, other: 0 };
  recorder.onCharged((charged) => (released.here += charged.get(1) ?? 0));
  other.onCharged((charged) => (released.other += charged.get(1) ?? 0));
  return {
    store, taken, recorder, other, released,
    /** Both calls recorded here, once Redis took them (and lost the answers). */
    async record() {
      recorder.record(usageEvent(0, 500));
      recorder.record(usageEvent(1, 700));
      while (taken.length < 2) await Bun.sleep(1);
    },
    /** The other process writes the original of the first row, as claimed from Redis. */
    async otherWritesOriginal() {
      other.record({ ...usageEvent(0, 500), at: taken[0]!.createdAt });
      await other.flush();
    },
    async close() {
      await other.stop();
      await recorder.stop();
      store.close();
    },
  };
}

test("a row whose append to Redis lost its answer is written from this process checked: written once, its charge released once, whoever wrote it", async () => {
  const lost = lostAnswers("lost-append.db");
  try {
    // Both rows wait in this process; Redis holds them too. The other instance writes the first.
    await lost.record();
    await lost.otherWritesOriginal();
    await lost.recorder.flush();
    expect((await lost.store.usage.events(0, 100)).map((row) => row.requestId).sort()).toEqual(["req-0", "req-1"]);
    expect(await lost.store.credit.balance(1, Date.now())).toBe(-1200);
    // This process releases only what it wrote itself.
    expect(lost.released).toEqual({ here: 700, other: 500 });
  } finally {
    await lost.close();
  }
});

test("the other order: this process writes the row whose append lost its answer first, then another writes the original unchecked: stored once, charged once, released once", async () => {
  const lost = lostAnswers("lost-append-first.db");
  try {
    await lost.record();
    await lost.recorder.flush();
    expect(await lost.store.credit.balance(1, Date.now())).toBe(-1200);
    // Then a process whose connection held claims the original from Redis and writes it without checking.
    await lost.otherWritesOriginal();
    expect((await lost.store.usage.events(0, 100)).map((row) => row.requestId).sort()).toEqual(["req-0", "req-1"]);
    expect(await lost.store.credit.balance(1, Date.now())).toBe(-1200);
    // This process wrote both and released both; the other found the row stored and releases nothing.
    expect(lost.released).toEqual({ here: 1200, other: 0 });
  } finally {
    await lost.close();
  }
});

test("stopping while Redis took no row and the database is away: the rows waiting here are handed to Redis as copies, not lost", async () => {
  const store = openSqliteStore(join(dir, "hand-over.db"));
  const flaky = withTransactions(store, () => Promise.reject(new Error("database down")));
  let redisUp = false;
  const handed: Array<{ id: string; copy: boolean }> = [];
  const buffer = fakeBuffer({
    async append(row, flag) {
      if (!redisUp) throw new Error("Redis unreachable");
      handed.push({ id: row.requestId, copy: flag === "copy" });
    },
  });
  const logs: string[] = [];
  const recorder = createUsageRecorder({ store: flaky, clock: createClock("UTC"), log: createLogger("info", (line) => logs.push(line)), buffer });
  try {
    recorder.record(usageEvent(0, 500));
    recorder.record(usageEvent(1, 700));
    await recorder.flush();
    // Neither Redis nor the database took them: they wait in this process.
    expect(recorder.backlog()).toBe(2);
    redisUp = true;
    await recorder.stop();
    expect(handed).toEqual([
      { id: "req-0", copy: true },
      { id: "req-1", copy: true },
    ]);
    expect(logs.join("\n")).not.toContain("they are lost");
  } finally {
    store.close();
  }
});

test("stopping with neither Redis nor the database answering: the rows that are lost are named in an error", async () => {
  const store = openSqliteStore(join(dir, "lost-on-stop.db"));
  const flaky = withTransactions(store, () => Promise.reject(new Error("database down")));
  const buffer = fakeBuffer({
    append: async () => {
      throw new Error("Redis unreachable");
    },
    claim: async () => {
      throw new Error("Redis unreachable");
    },
  });
  const logs: string[] = [];
  const recorder = createUsageRecorder({ store: flaky, clock: createClock("UTC"), log: createLogger("info", (line) => logs.push(line)), buffer });
  try {
    recorder.record(usageEvent(7, 300));
    await recorder.flush();
    await recorder.stop();
    const lost = logs.find((line) => line.includes("they are lost"));
    expect(lost).toContain("level=error");
    expect(lost).toContain("rows=1");
    expect(lost).toContain("cost=300");
    expect(lost).toContain("first=req-7");
  } finally {
    store.close();
  }
});

test("a failed claim from Redis is logged while the database's outage is too, once each, and each end once", async () => {
  const store = openSqliteStore(join(dir, "two-outages.db"));
  let databaseDown = true;
  const flaky = withTransactions(store, (body, run) => (databaseDown ? Promise.reject(new Error("database down")) : run(body)));
  let redisDown = false;
  const held = [usageRow(usageEvent(0, 100), "2026-03-10")];
  const buffer = fakeBuffer({
    claim: async () => {
      if (redisDown) throw new Error("Redis unreachable");
      return { rows: held.map((row) => ({ ...row, retried: true })), waiting: 0 };
    },
    done: async () => {
      held.length = 0;
    },
  });
  const logs: string[] = [];
  const recorder = createUsageRecorder({ store: flaky, clock: createClock("UTC"), log: createLogger("info", (line) => logs.push(line)), buffer });
  try {
    await recorder.flush();
    redisDown = true;
    await recorder.flush();
    await recorder.flush();
    expect(logs.filter((line) => line.includes("could not be written"))).toHaveLength(1);
    expect(logs.filter((line) => line.includes("could not be claimed"))).toHaveLength(1);
    redisDown = false;
    databaseDown = false;
    await recorder.flush();
    expect(logs.filter((line) => line.includes("claimed again"))).toHaveLength(1);
    expect(logs.filter((line) => line.includes("written again"))).toHaveLength(1);
    expect((await store.usage.events(0, 10)).map((row) => row.requestId)).toEqual(["req-0"]);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("a row whose append failed is sent to Redis again, as a copy, before it would be written from this process", async () => {
  const store = openSqliteStore(join(dir, "append-again.db"));
  // The database is away: a row written from this process would wait here, where a crash loses it.
  const flaky = withTransactions(store, () => Promise.reject(new Error("database down")));
  let failures = 1;
  const sent: Array<{ id: string; copy: boolean }> = [];
  const buffer = fakeBuffer({
    async append(row, flag) {
      // The first command after a dropped connection fails; the next one connects again.
      if (failures-- > 0) throw new Error("Redis RPUSH failed: Connection closed");
      sent.push({ id: row.requestId, copy: flag === "copy" });
    },
  });
  const recorder = createUsageRecorder({ store: flaky, clock: createClock("UTC"), log: createLogger("error", () => {}), buffer });
  try {
    recorder.record(usageEvent(0, 500));
    recorder.record(usageEvent(1, 700));
    await recorder.flush();
    // The first row's append failed, then went again as a copy; the second went at once.
    expect(sent.sort((x, y) => x.id.localeCompare(y.id))).toEqual([
      { id: "req-0", copy: true },
      { id: "req-1", copy: false },
    ]);
    // Nothing waits in this process.
    expect(recorder.backlog()).toBe(0);
  } finally {
    await recorder.stop();
    store.close();
  }
});

/**
 * A buffer holding one claim, `id`: a copy (sent again after a reconnection) and a row,
 * made at the first claim and retried at every one after (its writer's, or another's once
 * it took the claim over) until cleared; then `next` once, if given, then nothing.
 * `clearing` runs before a clear is taken (it throws while Redis is away).
 */
function oneClaim(id: string, options: { next?: { id: string; rows: NewUsageEventRow[] }; clearing?: () => void } = {}) {
  const day = createClock("UTC").businessDate();
  const claimed = () => [{ ...usageRow(usageEvent(0, 500), day), retried: true, copy: true }, usageRow(usageEvent(1, 700), day)];
  const state = { claims: 0, done: [] as number[], released: false };
  const buffer = fakeBuffer({
    claim: async () => {
      state.claims++;
      if (state.done.length === 1 && options.next) return { rows: options.next.rows, waiting: 0, claim: options.next.id, retry: false };
      if (state.done.length > 0) return { rows: [], waiting: 0 };
      if (state.claims === 1) return { rows: claimed(), waiting: 0, claim: id, retry: false };
      return { rows: claimed().map((row) => ({ ...row, retried: true })), waiting: 0, claim: id, retry: true };
    },
    done: async (charged) => {
      options.clearing?.();
      state.done.push(charged.get(1) ?? 0);
    },
    release: async () => void (state.released = true),
  });
  return { buffer, state };
}

test("a claim whose write committed without its answer, left by a clean stop and taken over: the note of what it released is replayed, a copy it stored included", async () => {
  const store = openSqliteStore(join(dir, "claim-note.db"));
  // The commit happens; its answer is lost, and the database goes away.
  const { store: lossy, faults } = faultyStore(store);
  Object.assign(faults, { loseNextAnswer: true, downAfterLoss: true });
  // One claim in Redis, #7; once it is cleared, one more claim (#8).
  const { buffer, state } = oneClaim("#7", { next: { id: "#8", rows: [usageRow(usageEvent(2, 1), createClock("UTC").businessDate())] } });
  const done = state.done;
  const logs: string[] = [];
  const first = createUsageRecorder({ store: lossy, clock: createClock("UTC"), log: createLogger("info", (line) => logs.push(line)), buffer });
  await first.flush().catch(() => {});
  expect(state.claims).toBe(1);
  expect(done).toEqual([]);
  // Stopping with the database still away: its retry fails before writing anything.
  await first.stop();
  expect(done).toEqual([]);
  // Handed back to the queue, its rows would lose the claim's note: it is left to be taken over.
  expect(state.released).toBe(false);
  expect(logs.some((line) => line.includes("left in this instance's claim"))).toBe(true);

  const second = createUsageRecorder({ store, clock: createClock("UTC"), log: createLogger("error", () => {}), buffer });
  try {
    await second.flush();
    // Nothing written again; both charges released once, the copy's (which the first write stored) included.
    expect((await store.usage.events(0, 100)).map((row) => row.requestId)).toEqual(["req-0", "req-1", "req-2"]);
    expect(await store.credit.balance(1, Date.now())).toBe(-1201);
    // The note goes with the next write once the claim is cleared.
    expect(done).toEqual([1200, 1]);
    expect(await store.usage.claimWritten("#7")).toBeUndefined();
    expect(await store.usage.claimWritten("#8")).toBeDefined();
  } finally {
    await second.stop();
    store.close();
  }
});

test("stopping with rows a lost commit of this process may have stored: they are handed to Redis flagged to be released where found stored, the others as copies", async () => {
  const store = openSqliteStore(join(dir, "hand-over-unsure.db"));
  // The commit happens; its answer is lost, and the database goes away.
  const { store: lossy, faults } = faultyStore(store);
  Object.assign(faults, { loseNextAnswer: true, downAfterLoss: true });
  let redisUp = false;
  const handed: Array<{ id: string; flag: string }> = [];
  const buffer = fakeBuffer({
    async append(row, flag) {
      if (!redisUp) throw new Error("Redis unreachable");
      handed.push({ id: row.requestId, flag: flag ?? "" });
    },
  });
  const recorder = createUsageRecorder({ store: lossy, clock: createClock("UTC"), log: createLogger("error", () => {}), buffer });
  try {
    recorder.record(usageEvent(0, 500));
    await recorder.flush();
    // Written from here (Redis away), committed, its answer lost: the row waits, maybe stored.
    expect(recorder.unsureHere()).toBe(1);
    recorder.record(usageEvent(1, 700));
    await recorder.flush();
    expect(recorder.backlog()).toBe(2);
    expect(recorder.unsureHere()).toBe(1);
    redisUp = true;
    await recorder.stop();
    expect(handed.sort((x, y) => x.id.localeCompare(y.id))).toEqual([
      { id: "req-0", flag: "unsure" },
      { id: "req-1", flag: "copy" },
    ]);
  } finally {
    store.close();
  }
});

test("a claim written whose clearing from Redis failed, left by a clean stop and taken over: its note is replayed, nothing is written twice", async () => {
  const store = openSqliteStore(join(dir, "claim-not-cleared.db"));
  let redisAway = true;
  const { buffer, state } = oneClaim("#9", {
    clearing: () => {
      if (redisAway) throw new Error("Redis connection lost");
    },
  });
  const done = state.done;
  const first = createUsageRecorder({ store, clock: createClock("UTC"), log: createLogger("error", () => {}), buffer });
  await first.flush().catch(() => {});
  await first.stop();
  // Written (the note is in the database), never cleared: left for another instance with its note.
  expect(state.released).toBe(false);
  expect(done).toEqual([]);
  redisAway = false;
  const second = createUsageRecorder({ store, clock: createClock("UTC"), log: createLogger("error", () => {}), buffer });
  try {
    await second.flush();
    expect((await store.usage.events(0, 100)).map((row) => row.requestId)).toEqual(["req-0", "req-1"]);
    expect(await store.credit.balance(1, Date.now())).toBe(-1200);
    expect(done).toEqual([1200]);
  } finally {
    await second.stop();
    store.close();
  }
});

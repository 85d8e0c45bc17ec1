import { expect, test } from "bun:test";
import { createAdjustBatcher, gatherWithin, mergeAdjustments, MergedChanges, oneRunAtATime, type MergedChange } from "../../src/state/redis/batching.ts";
import type { Adjustment, Counter } from "../../src/state/state.ts";

/** Settlements merged per moment before they go to Redis (src/state/redis/batching.ts). */

const minute = { kind: "window", key: "a:1:t:m", windowMs: 60_000 } as const;
const day = { kind: "period", key: "q:tokens:day:1", seed: { measure: "tokens", accountId: 1 } } as const;
const gauge = { kind: "gauge", key: "a:1:t:reserved" } as const;
const credit = { kind: "credit", accountId: 1 } as const;
const keyOf = (counter: Counter) => (counter.kind === "credit" ? `c:${counter.accountId}` : `${counter.kind}:${counter.key}`);
const T0 = Date.UTC(2026, 10, 27, 9, 0, 0);

test("changes to one cell merge: a window bucket per sign (a positive one keeps its latest moment), a period, a gauge, an account's credit", () => {
  const into = new MergedChanges();
  const changes: Adjustment[] = [
    { counter: minute, at: T0 + 100, delta: -30 },
    { counter: minute, at: T0 + 900, delta: -20 },
    { counter: minute, at: T0 + 200, delta: 5 },
    { counter: minute, at: T0 + 700, delta: 7 },
    // Another one-second bucket of the minute window: a line of its own.
    { counter: minute, at: T0 + 1_500, delta: -1 },
    { counter: day, period: "2026-11-27", delta: -50 },
    { counter: day, period: "2026-11-27", delta: 12 },
    { counter: day, period: "2026-11-28", delta: 3 },
    { counter: gauge, delta: -100 },
    { counter: gauge, delta: -60 },
    { counter: credit, release: 1_000, charge: 400 },
    { counter: credit, release: 500, charge: 100 },
  ];
  mergeAdjustments(changes, keyOf, into);
  expect([...into.values()].map((m) => m.line)).toEqual([
    { k: "w", key: "window:a:1:t:m", w: 60_000, n: 1, at: T0 + 900, d: -50 },
    { k: "w", key: "window:a:1:t:m", w: 60_000, n: 1, at: T0 + 700, d: 12 },
    { k: "w", key: "window:a:1:t:m", w: 60_000, n: 1, at: T0 + 1_500, d: -1 },
    { k: "p", key: "period:q:tokens:day:1", p: "2026-11-27", d: -38 },
    { k: "p", key: "period:q:tokens:day:1", p: "2026-11-28", d: 3 },
    { k: "g", key: "gauge:a:1:t:reserved", d: -160 },
    { k: "c", key: "c:1", rel: 1_500, ch: 500 },
  ]);
  // A period line keeps its counter and period, for the seed a script may ask for.
  expect([...into.values()][3]).toMatchObject({ counter: day, period: "2026-11-27" });
});

test("the two windows of a pair share a key and stay apart, each in its lane", () => {
  const requests = { kind: "window", key: "a:1:r:m", windowMs: 60_000, lane: { key: "a:1:m", index: 0 } } as const;
  const tokens = { kind: "window", key: "a:1:t:m", windowMs: 60_000, lane: { key: "a:1:m", index: 1 } } as const;
  const pairKeyOf = (counter: Counter) => (counter.kind === "window" && counter.lane ? `pair:${counter.lane.key}` : keyOf(counter));
  const into = new MergedChanges();
  mergeAdjustments(
    [
      { counter: requests, at: T0 + 100, delta: -1 },
      { counter: tokens, at: T0 + 100, delta: -300 },
      { counter: tokens, at: T0 + 200, delta: -20 },
    ],
    pairKeyOf,
    into,
  );
  expect([...into.values()].map((m) => m.line)).toEqual([
    { k: "w", key: "pair:a:1:m", w: 60_000, n: 1, at: T0 + 100, d: -1 },
    { k: "w", key: "pair:a:1:m", w: 60_000, n: 2, at: T0 + 200, d: -320 },
  ]);
});

test("changes within the delay go in one run, each caller hears of it; later ones start another", async () => {
  const runs: MergedChange[][] = [];
  const adjust = createAdjustBatcher(async (merged) => void runs.push(merged), keyOf, 5);
  await Promise.all([adjust([{ counter: gauge, delta: 1 }]), adjust([{ counter: gauge, delta: 2 }]), adjust([])]);
  expect(runs.map((run) => run.map((m) => m.line.d))).toEqual([[3]]);
  await adjust([{ counter: gauge, delta: 4 }]);
  expect(runs.map((run) => run.map((m) => m.line.d))).toEqual([[3], [4]]);
  const failing = createAdjustBatcher(async () => {
    throw new Error("Redis script failed");
  }, keyOf, 1);
  const outcome = await failing([{ counter: gauge, delta: 1 }]).then(
    () => "settled",
    (error: Error) => error.message,
  );
  expect(outcome).toBe("Redis script failed");
});

test("applied() waits for the moment's batch and for batches sent whose answer has not come (a usage row must not overtake its settlement)", async () => {
  const answers: Array<() => void> = [];
  const adjust = createAdjustBatcher(() => new Promise<void>((resolve) => answers.push(resolve)), keyOf, 1);
  expect(adjust.applied()).toBeUndefined();
  void adjust([{ counter: gauge, delta: 1 }]);
  while (answers.length === 0) await Bun.sleep(1);
  // Sent, not answered (a dropped connection can hold it until it is made again).
  let applied = false;
  void adjust.applied()!.then(() => (applied = true));
  void adjust([{ counter: gauge, delta: 2 }]);
  while (answers.length < 2) await Bun.sleep(1);
  answers[1]!();
  await Bun.sleep(5);
  expect(applied).toBe(false);
  answers[0]!();
  await Bun.sleep(5);
  expect(applied).toBe(true);
  expect(adjust.applied()).toBeUndefined();
});

test("keys' releases within the delay go in one run, counted per key", async () => {
  const runs: Array<Array<[string, number]>> = [];
  const release = gatherWithin<string, Map<string, number>>(
    5,
    () => new Map(),
    (key, into) => void into.set(key, (into.get(key) ?? 0) + 1),
    async (counts) => void runs.push([...counts]),
  );
  await Promise.all(["k:0:1", "k:0:2", "k:0:1", "k:0:1"].map(release));
  expect(runs).toEqual([[["k:0:1", 3], ["k:0:2", 1]]]);
});

test("one run at a time: alone, a request goes at once; those that come meanwhile go together next, each answered in order", async () => {
  const runs: number[][] = [];
  let release: () => void = () => {};
  const gate = () => new Promise<void>((resolve) => (release = resolve));
  const send = oneRunAtATime<number, string>(
    async (n) => {
      runs.push([n]);
      await gate();
      return `one ${n}`;
    },
    async (ns) => {
      runs.push(ns);
      return ns.map((n) => `many ${n}`);
    },
  );
  const first = send(1);
  const waiting = [send(2), send(3), send(4)];
  expect(runs).toEqual([[1]]);
  release();
  expect(await first).toBe("one 1");
  expect(await Promise.all(waiting)).toEqual(["many 2", "many 3", "many 4"]);
  expect(runs).toEqual([[1], [2, 3, 4]]);
  // Nothing running: the next goes at once, on its own.
  const alone = send(5);
  release();
  expect(await alone).toBe("one 5");
});

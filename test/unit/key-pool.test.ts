import { describe, expect, test } from "bun:test";
import type { ProviderKeysRepository, SleepState } from "../../src/admin/provider-keys/repository.ts";
import { createManualClock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/core/log.ts";
import { createKeyPool, type KeyPool } from "../../src/routing/key-pool.ts";
import { createMemoryKeys } from "../../src/state/memory-keys.ts";
import type { PoolKey } from "../../src/routing/pool-key.ts";
import type { ProviderKeyRow } from "../../src/store/store.ts";

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

/** Just what the pool reads and writes of the keys table, in memory. */
function fakeRepository(rows: ProviderKeyRow[]) {
  const sleeps: Array<{ id: number } & SleepState> = [];
  const repo = {
    rows,
    sleeps,
    all: async () => rows.map((row) => ({ ...row })),
    secretOf: (row: ProviderKeyRow) => `secret-of-${row.id}`,
    async setSleep(id: number, state: SleepState) {
      sleeps.push({ id, ...state });
      const row = rows.find((r) => r.id === id);
      if (row) Object.assign(row, { sleeping: state.sleeping, sleepReason: state.reason, sleepUntil: state.until, sleepCount: state.count });
    },
  };
  return repo;
}

function row(id: number, overrides: Partial<ProviderKeyRow> = {}): ProviderKeyRow {
  return {
    id,
    tenantId: 0,
    name: `key ${id}`,
    level: 1,
    provider: `https://upstream-${id}.test/v1/`,
    secretSealed: "sealed",
    partialKey: "…",
    noSleep: false,
    status: true,
    sleeping: false,
    sleepReason: null,
    sleepUntil: null,
    sleepCount: 0,
    config: '{"provider_type":"standard"}',
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}

async function pool(rows: ProviderKeyRow[]) {
  const repo = fakeRepository(rows);
  const clock = createManualClock(T0);
  const keyPool = createKeyPool({ repo: repo as unknown as ProviderKeysRepository, clock, log: createLogger("error", () => {}), keys: createMemoryKeys(), tenantId: 0 });
  await keyPool.reload();
  return { repo, clock, pool: keyPool };
}

const none = new Set<number>();
const ids = (keys: Array<PoolKey | undefined>) => keys.map((k) => k?.id);
/** Acquires and releases at once, n times: the choice with nothing in flight. */
const choices = async (keyPool: KeyPool, level: number, n: number, exclude: ReadonlySet<number> = none) => {
  const chosen: Array<number | undefined> = [];
  for (let i = 0; i < n; i++) {
    const key = await keyPool.acquire(level, exclude);
    if (key) await keyPool.release(key);
    chosen.push(key?.id);
  }
  return chosen;
};

describe("key pool", () => {
  test("loads keys by Level in id order, with the secret opened and the provider trimmed", async () => {
    const { pool: keyPool } = await pool([row(1), row(2, { level: 2 }), row(3)]);
    expect(ids([...keyPool.keysOf(1)])).toEqual([1, 3]);
    expect(ids([...keyPool.keysOf(2)])).toEqual([2]);
    expect(keyPool.keysOf(9)).toEqual([]);
    expect(keyPool.get(2)).toMatchObject({ secret: "secret-of-2", provider: "https://upstream-2.test/v1", config: { provider_type: "standard" } });
  });

  test("round-robin on ties", async () => {
    const { pool: keyPool } = await pool([row(1), row(2), row(3)]);
    expect(await choices(keyPool, 1, 7)).toEqual([1, 2, 3, 1, 2, 3, 1]);
  });

  test("the key with the fewest calls in flight wins", async () => {
    const { pool: keyPool } = await pool([row(1), row(2), row(3)]);
    const a = (await keyPool.acquire(1, none))!;
    const b = (await keyPool.acquire(1, none))!;
    const c = (await keyPool.acquire(1, none))!;
    expect(ids([a, b, c])).toEqual([1, 2, 3]);
    const d = (await keyPool.acquire(1, none))!; // all at 1: round-robin goes on to key 1
    expect(d.id).toBe(1);
    await keyPool.release(b);
    expect((await keyPool.acquire(1, none))!.id).toBe(2);
    await keyPool.release(c);
    // Key 3 has nothing in flight now; keys 1 and 2 have two and one.
    expect((await keyPool.acquire(1, none))!.id).toBe(3);
    expect(keyPool.get(1)!.inFlight).toBe(2);
    expect(keyPool.get(2)!.inFlight).toBe(1);
    expect(keyPool.get(3)!.inFlight).toBe(1);
  });

  test("calls choosing on reads made before each other's take still spread over the keys", async () => {
    const { pool: keyPool } = await pool([row(1), row(2)]);
    const held = (await keyPool.acquire(1, none))!;
    expect(held.id).toBe(1);
    // Two calls read the keys' health (1 and 0 calls in flight) before either takes one.
    const [first, second] = [keyPool.readAhead(1), keyPool.readAhead(1)];
    const a = (await keyPool.acquire(1, none, undefined, first))!;
    const b = (await keyPool.acquire(1, none, undefined, second))!;
    // The second read says key 2 is free, but this process just began a call on it: both keys have one.
    expect(ids([a, b])).toEqual([2, 1]);
    expect(keyPool.get(1)!.inFlight).toBe(2);
    for (const key of [held, a, b]) await keyPool.release(key);
    expect(await choices(keyPool, 1, 4)).toEqual([2, 1, 2, 1]);
  });

  test("with a reuse time, calls share one health read; a verdict that sleeps a key, a reload or forgetReads drops it", async () => {
    const repo = fakeRepository([row(1), row(2)]);
    const memory = createMemoryKeys();
    let reads = 0;
    const keys = { ...memory, health: (...args: Parameters<typeof memory.health>) => (reads++, memory.health(...args)) };
    const clock = createManualClock(T0);
    const keyPool = createKeyPool({ repo: repo as unknown as ProviderKeysRepository, clock, log: createLogger("error", () => {}), keys, tenantId: 0, reuseReadMs: 100 });
    await keyPool.reload();
    const call = async () => {
      const key = (await keyPool.acquire(1, none, undefined, keyPool.readAhead(1)))!;
      await keyPool.release(key);
      return key;
    };
    // Shared reads still spread calls (the pool counts its own), and released calls stop counting.
    expect(ids([await call(), await call(), await call()])).toEqual([1, 2, 1]);
    expect(reads).toBe(1);
    clock.advance(100);
    await call();
    expect(reads).toBe(2);
    // Three failures sleep key 2: the shared read that showed it awake is dropped, and it is skipped.
    for (let i = 0; i < 3; i++) await keyPool.report(keyPool.get(2)!, { kind: "retryable" });
    expect(keyPool.get(2)!.sleeping).toBe(true);
    expect(ids([await call(), await call()])).toEqual([1, 1]);
    expect(reads).toBe(3);
    keyPool.forgetReads();
    await call();
    expect(reads).toBe(4);
    await keyPool.reload();
    await call();
    expect(reads).toBe(5);
  });

  test("release never takes the in-flight count below zero", async () => {
    const { pool: keyPool } = await pool([row(1)]);
    const key = (await keyPool.acquire(1, none))!;
    await keyPool.release(key);
    await keyPool.release(key);
    expect(keyPool.get(1)!.inFlight).toBe(0);
  });

  test("a call does not wait for the shared State to count it in flight; a count that fails is logged, not the call's failure", async () => {
    const repo = fakeRepository([row(1), row(2)]);
    const memory = createMemoryKeys();
    const counted: Array<() => void> = [];
    const errors: string[] = [];
    // A State whose counting answers only when told (a Redis round trip), or fails.
    let failing = false;
    const keys = {
      ...memory,
      take: (tenantId: number, key: Parameters<typeof memory.take>[1], probe: boolean) =>
        failing ? Promise.reject(new Error("Redis unreachable")) : new Promise<boolean>((resolve) => counted.push(() => resolve(memory.take(tenantId, key, probe)))),
    };
    const log = createLogger("error", (line) => errors.push(line));
    const keyPool = createKeyPool({ repo: repo as unknown as ProviderKeysRepository, clock: createManualClock(T0), log, keys, tenantId: 0 });
    await keyPool.reload();
    const first = await keyPool.acquire(1, none);
    expect(first?.id).toBe(1);
    expect(first?.inFlight).toBe(1);
    expect(counted).toHaveLength(1);
    expect((await keyPool.acquireById(2))?.id).toBe(2);
    counted.forEach((answer) => answer());
    failing = true;
    expect((await keyPool.acquire(1, new Set([1])))?.id).toBe(2);
    await Bun.sleep(0);
    expect(errors.join("\n")).toContain("could not be recorded in the shared state");
    expect(errors.join("\n")).not.toContain("secret-of");
  });

  test("the exclude set skips keys already tried", async () => {
    const { pool: keyPool } = await pool([row(1), row(2), row(3)]);
    expect(await choices(keyPool, 1, 4, new Set([1, 2]))).toEqual([3, 3, 3, 3]);
    expect(await choices(keyPool, 1, 2, new Set([2]))).toEqual([1, 3]);
    expect(await keyPool.acquire(1, new Set([1, 2, 3]))).toBeUndefined();
    expect(await keyPool.acquire(7, none)).toBeUndefined();
  });

  test("disabled and sleeping keys are skipped; hasUsable says whether any key could serve", async () => {
    const { pool: keyPool, clock } = await pool([
      row(1, { status: false }),
      row(2, { sleeping: true, sleepReason: "manual" }),
      row(3, { sleeping: true, sleepReason: "auth" }),
      row(4, { sleeping: true, sleepReason: "errors", sleepUntil: T0 + MINUTE, sleepCount: 1 }),
      row(5, { level: 2 }),
    ]);
    expect(await keyPool.acquire(1, none)).toBeUndefined();
    expect(keyPool.hasUsable(1)).toBe(false);
    expect(keyPool.hasUsable(2)).toBe(true);
    clock.advance(MINUTE);
    expect(keyPool.hasUsable(1)).toBe(true);
  });

  test("a key due for its probe is chosen first, once, while its probe is out", async () => {
    const { pool: keyPool, clock } = await pool([
      row(1),
      row(2, { sleeping: true, sleepReason: "errors", sleepUntil: T0 + MINUTE, sleepCount: 1 }),
      row(3),
    ]);
    expect(await choices(keyPool, 1, 3)).toEqual([1, 3, 1]);
    clock.advance(MINUTE);
    const probe = (await keyPool.acquire(1, none))!;
    expect(probe.id).toBe(2);
    expect(probe.probing).toBe(true);
    // Nobody else gets the sleeping key while its probe is under way.
    expect(await choices(keyPool, 1, 4)).not.toContain(2);
    // A probe that ended without a verdict lets the next call probe.
    await keyPool.release(probe);
    expect((await keyPool.acquire(1, none))!.id).toBe(2);
  });

  test("an excluded key is not probed", async () => {
    const { pool: keyPool, clock } = await pool([row(1, { sleeping: true, sleepReason: "errors", sleepUntil: T0, sleepCount: 1 }), row(2)]);
    clock.advance(1);
    expect((await keyPool.acquire(1, new Set([1])))!.id).toBe(2);
  });

  test("report persists sleep changes: three failures sleep a key, a successful probe wakes it", async () => {
    const { pool: keyPool, repo, clock } = await pool([row(1), row(2)]);
    const key = keyPool.get(1)!;
    await keyPool.report(key, { kind: "retryable" });
    await keyPool.report(key, { kind: "retryable" });
    expect(repo.sleeps).toEqual([]);
    await keyPool.report(key, { kind: "retryable", retryAfterMs: 1000 });
    expect(repo.sleeps).toEqual([{ id: 1, sleeping: true, reason: "errors", until: T0 + MINUTE, count: 1 }]);
    expect(await choices(keyPool, 1, 3)).toEqual([2, 2, 2]);

    clock.advance(MINUTE);
    const probe = (await keyPool.acquire(1, none))!;
    expect(probe.id).toBe(1);
    await keyPool.report(probe, { kind: "success" });
    await keyPool.release(probe);
    expect(repo.sleeps.at(-1)).toEqual({ id: 1, sleeping: false, reason: null, until: null, count: 0 });
    expect(keyPool.get(1)).toMatchObject({ sleeping: false, sleepCount: 0 });
  });

  test("a credential failure is persisted as an auth sleep", async () => {
    const { pool: keyPool, repo } = await pool([row(1)]);
    await keyPool.report(keyPool.get(1)!, { kind: "credential" });
    expect(repo.sleeps).toEqual([{ id: 1, sleeping: true, reason: "auth", until: null, count: 0 }]);
    expect(await keyPool.acquire(1, none)).toBeUndefined();
  });

  test("manual sleep lasts until woken, whatever the clock does; waking resets the cool-down", async () => {
    const { pool: keyPool, repo, clock } = await pool([row(1, { sleepCount: 3 })]);
    await keyPool.setManualSleep(1, true);
    expect(repo.sleeps.at(-1)).toEqual({ id: 1, sleeping: true, reason: "manual", until: null, count: 3 });
    clock.advance(365 * 24 * 60 * MINUTE);
    expect(await keyPool.acquire(1, none)).toBeUndefined();
    await keyPool.setManualSleep(1, false);
    expect(repo.sleeps.at(-1)).toEqual({ id: 1, sleeping: false, reason: null, until: null, count: 0 });
    expect((await keyPool.acquire(1, none))!.id).toBe(1);
  });

  test("reload picks up changes and keeps in-flight counts", async () => {
    const { pool: keyPool, repo } = await pool([row(1), row(2)]);
    await keyPool.acquire(1, none);
    repo.rows.push(row(3));
    repo.rows[1]!.level = 2;
    await keyPool.reload();
    expect(ids([...keyPool.keysOf(1)])).toEqual([1, 3]);
    expect(ids([...keyPool.keysOf(2)])).toEqual([2]);
    expect(keyPool.get(1)!.inFlight).toBe(1);
  });

  test("a call that started before a reload releases the key the pool now holds", async () => {
    const { pool: keyPool } = await pool([row(1), row(2)]);
    const held = (await keyPool.acquire(1, none))!;
    await keyPool.reload(); // e.g. an owner edited another key meanwhile
    await keyPool.release(held);
    expect(keyPool.get(1)!.inFlight).toBe(0);
  });

  test("a probe that started before a reload still wakes the key", async () => {
    const { pool: keyPool, clock } = await pool([row(1, { sleeping: true, sleepReason: "errors", sleepUntil: T0 + MINUTE, sleepCount: 1 })]);
    clock.advance(MINUTE);
    const probe = (await keyPool.acquire(1, none))!;
    await keyPool.reload();
    await keyPool.report(probe, { kind: "success" });
    await keyPool.release(probe);
    expect(keyPool.get(1)).toMatchObject({ sleeping: false, probing: false, inFlight: 0 });
    expect((await keyPool.acquire(1, none))?.id).toBe(1);
  });
});

describe("key pool: formats (issue 16)", () => {
  const rank = (key: PoolKey) => (key.formats.set.has("anthropic") ? 2 : key.formats.set.has("openai") ? 1 : 0);
  const formats = (list: string[]) => JSON.stringify({ provider_type: "standard", formats: list });

  test("a higher rank wins whatever the calls in flight; rank 0 is never chosen; a lower rank serves when nothing better can", async () => {
    const { pool: keyPool } = await pool([row(1, { config: formats(["openai"]) }), row(2, { config: formats(["anthropic"]) }), row(3, { config: formats(["gemini"]) })]);
    const busy = (await keyPool.acquire(1, none, rank))!;
    expect(busy.id).toBe(2);
    // Key 2 has a call in flight and key 1 none: the native key is still chosen.
    const again = (await keyPool.acquire(1, none, rank))!;
    expect(again.id).toBe(2);
    await keyPool.release(busy);
    await keyPool.release(again);
    expect((await keyPool.acquire(1, new Set([2]), rank))?.id).toBe(1);
    expect(await keyPool.acquire(1, new Set([1, 2]), rank)).toBeUndefined();
  });

  test("each key's formats are read at reload: declared, or the default of its host", async () => {
    const { pool: keyPool } = await pool([
      row(1, { provider: "https://api.anthropic.com" }),
      row(2, { provider: "https://generativelanguage.googleapis.com/v1beta/openai/" }),
      row(3),
      row(4, { config: formats(["responses"]) }),
    ]);
    expect(keyPool.keysOf(1).map((key) => [...key.formats.set])).toEqual([["anthropic"], ["openai"], ["openai", "responses", "anthropic", "gemini"], ["responses"]]);
  });
});

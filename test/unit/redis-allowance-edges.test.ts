import { afterAll, describe, expect, test } from "bun:test";
import { createMemoryState } from "../../src/state/memory.ts";
import { connectRedis, type RedisConnection } from "../../src/state/redis/connection.ts";
import { createRedisState, type RedisState } from "../../src/state/redis/state.ts";
import type { AdmitLine, Counter, PeriodCounter, StateLoaders, WindowCounter } from "../../src/state/state.ts";
import { servicesSkipped } from "../helpers/redis-server.ts";
import { freshPrefix, redisStates } from "../helpers/redis-state.ts";

/**
 * Allowances (src/state/redis/allowances.ts) at their edges: a grant racing settlements,
 * a balance change, a stop or a Redis restart; reads across midnight and restarts; shapes
 * evicted while granting. Each compares with what the memory State does, or with what
 * Redis must hold once every block went back.
 */

const T0 = Date.UTC(2026, 10, 28, 12);
const MINUTE = 60_000;
const DAY = "2026-11-28";
const redis = redisStates();
/** States made here with a connection of their own (wrapped to act while a grant is under way). */
const own: RedisState[] = [];
afterAll(async () => {
  await Promise.all(own.splice(0).map((state) => state.close().catch(() => {})));
  await redis.close();
});

const funded = (balance: number): StateLoaders => ({ seed: () => 0, balance: () => ({ balance, staleAt: Infinity, version: 1 }) });

/** A connection that calls `onGrant.hook` right after a grant's ADMIT (a run whose payload carries a margin `m`) was sent. */
function watched(inner: RedisConnection, onGrant: { hook?: () => void | Promise<void> }): RedisConnection {
  return {
    ...inner,
    send: (command, args) => inner.send(command, args),
    connects: () => inner.connects(),
    up: () => inner.up(),
    dedicated: () => inner.dedicated(),
    close: () => inner.close(),
    async run(script, keys, args) {
      const hook = onGrant.hook;
      if (hook && args.some((arg) => arg.includes('"m":'))) {
        onGrant.hook = undefined;
        const answer = inner.run(script, keys, args);
        await hook();
        return answer;
      }
      return inner.run(script, keys, args);
    },
  };
}

async function ownState(loaders: StateLoaders, clock: () => number, connection: RedisConnection, prefix = freshPrefix()): Promise<RedisState> {
  const state = createRedisState({ connection, prefix }, loaders, clock);
  own.push(state);
  return state;
}

if (!servicesSkipped)
  describe("allowances at their edges", () => {
    test("a settlement gathered but not yet sent when a grant reads the counters is in what the allowance admits against (no call past the limit)", async () => {
      const tokens: WindowCounter = { kind: "window", key: "acct:tpm", windowMs: MINUTE };
      const lines: AdmitLine[] = [{ counter: tokens, limit: 10_000, add: 10, report: "tokens" }];
      const memory = createMemoryState(funded(0), () => T0);
      const shared = await redis.state(funded(0), () => T0);
      await shared.counts.read(tokens, T0);
      for (const state of [memory, shared]) {
        // A first call takes a block; its allowance ends (the read at T0 + 1,100 gives the unused part back).
        expect((await state.counts.admit(lines, T0)).admitted).toBe(true);
        await state.counts.read(tokens, T0 + 1_100);
        // The call settles (more tokens than it reserved), not awaited as meter.record does; the next call comes at once.
        const settling = state.counts.adjust([{ counter: tokens, at: T0, delta: 9_980 }]);
        expect((await state.counts.admit(lines, T0 + 1_101)).admitted).toBe(true);
        await settling;
      }
      await shared.settlementsApplied();
      // Both count 10,000 of the 10,000 tokens: the limit is reached.
      expect(await memory.counts.read(tokens, T0 + 1_102)).toBe(10_000);
      expect(await shared.counts.read(tokens, T0 + 1_102)).toBe(10_000);
      const [a, b] = [await memory.counts.admit(lines, T0 + 1_103), await shared.counts.admit(lines, T0 + 1_103)];
      expect(a.admitted).toBe(false);
      expect(b.admitted).toBe(a.admitted);
    });

    test("a settlement made while a grant is under way (sent after it read the counters) is in what the allowance admits against", async () => {
      const server = await redis.server();
      const tokens: WindowCounter = { kind: "window", key: "acct:tpm", windowMs: MINUTE };
      const lines: AdmitLine[] = [{ counter: tokens, limit: 10_000, add: 10, report: "tokens" }];
      const memory = createMemoryState(funded(0), () => T0);
      const grants: { hook?: () => void } = {};
      const shared = await ownState(funded(0), () => T0, watched(connectRedis(server.url), grants));
      await shared.counts.read(tokens, T0);
      for (const state of [memory, shared]) {
        expect((await state.counts.admit(lines, T0)).admitted).toBe(true);
        await state.counts.read(tokens, T0 + 1_100);
        // The first call settles while the second call's grant is on its way to Redis.
        const settle = () => void state.counts.adjust([{ counter: tokens, at: T0, delta: 9_980 }]);
        if (state === shared) grants.hook = settle;
        else settle();
        expect((await state.counts.admit(lines, T0 + 1_101)).admitted).toBe(true);
      }
      await shared.settlementsApplied();
      expect(await shared.counts.read(tokens, T0 + 1_102)).toBe(10_000);
      const [a, b] = [await memory.counts.admit(lines, T0 + 1_103), await shared.counts.admit(lines, T0 + 1_103)];
      expect(a.admitted).toBe(false);
      expect(b).toEqual(a);
    });

    test("the same with the usual settlement (fewer tokens than reserved): the allowance's rate-limit standings count it", async () => {
      const tokens: WindowCounter = { kind: "window", key: "acct:tpm", windowMs: MINUTE };
      const lines: AdmitLine[] = [{ counter: tokens, limit: 100_000, add: 1_000, report: "tokens" }];
      const memory = createMemoryState(funded(0), () => T0);
      const shared = await redis.state(funded(0), () => T0);
      await shared.counts.read(tokens, T0);
      for (const state of [memory, shared]) {
        expect((await state.counts.admit(lines, T0)).admitted).toBe(true);
        await state.counts.read(tokens, T0 + 1_100);
        // The first call used 100 of the 1,000 tokens it reserved.
        void state.counts.adjust([{ counter: tokens, at: T0, delta: -900 }]);
        expect((await state.counts.admit(lines, T0 + 1_101)).admitted).toBe(true);
      }
      await shared.settlementsApplied();
      const [a, b] = [await memory.counts.admit(lines, T0 + 1_103), await shared.counts.admit(lines, T0 + 1_103)];
      // 100 + 1,000 + 1,000 counted: 97,900 remain (the headers a client sees).
      expect(a).toEqual({ admitted: true, standings: { tokens: { line: 0, remaining: 97_900, resetMs: MINUTE - 1_103 } } });
      expect(b).toEqual(a);
    });

    test("credit taken away while a grant is under way: the allowance admits the call it was asked for and no more", async () => {
      const server = await redis.server();
      const ledger = { balance: 1_000_000 };
      const loaders: StateLoaders = { seed: () => 0, balance: () => ({ balance: ledger.balance, staleAt: Infinity, version: 1 }) };
      const credit: Counter = { kind: "credit", accountId: 9 };
      const rpm: WindowCounter = { kind: "window", key: "acct:rpm", windowMs: MINUTE };
      const lines: AdmitLine[] = [
        { counter: credit, limit: 0, add: 100 },
        { counter: rpm, limit: 10_000, add: 1 },
      ];
      const grants: { hook?: () => void } = {};
      const shared = await ownState(loaders, () => T0, watched(connectRedis(server.url), grants));
      await shared.counts.read(rpm, T0);
      expect((await shared.counts.admit(lines, T0)).admitted).toBe(true);
      // The next call asks for a new block (the first allowance ended); once its ADMIT is
      // on its way, an owner takes all the credit: the ledger says 0, and the State hears of it.
      let invalidated: Promise<void> | undefined;
      grants.hook = () => {
        ledger.balance = 0;
        invalidated = shared.credit.invalidate(9);
      };
      expect((await shared.counts.admit(lines, T0 + 1_100)).admitted).toBe(true);
      expect(invalidated).toBeDefined();
      await invalidated;
      // From here on the balance is 0 (less the two calls in flight): the memory State refuses, so must this one.
      const memory = createMemoryState(loaders, () => T0);
      await memory.counts.admit(lines, T0);
      await memory.counts.admit(lines, T0 + 1_100);
      await memory.credit.invalidate(9);
      expect((await memory.counts.admit(lines, T0 + 1_101)).admitted).toBe(false);
      const admittedAfter: boolean[] = [];
      for (let i = 0; i < 3; i++) admittedAfter.push((await shared.counts.admit(lines, T0 + 1_101 + i)).admitted);
      expect(admittedAfter).toEqual([false, false, false]);
    });

    test("close() while a grant is under way: that block goes back too", async () => {
      const server = await redis.server();
      const prefix = freshPrefix();
      const perDay: PeriodCounter = { kind: "period", key: "acct:requests:day", seed: { measure: "requests", accountId: 9 } };
      const rpm: WindowCounter = { kind: "window", key: "acct:rpm", windowMs: MINUTE };
      const lines: AdmitLine[] = [
        { counter: rpm, limit: 10_000, add: 1 },
        { counter: perDay, period: DAY, limit: 5_000, add: 1 },
      ];
      const grants: { hook?: () => void } = {};
      const a = await ownState(funded(0), () => T0, watched(connectRedis(server.url), grants), prefix);
      const b = await redis.state(funded(0), () => T0, { prefix });
      // Both connected, the day's total seeded: the grant is one ADMIT run.
      await Promise.all([a.counts.read(rpm, T0), b.counts.read(rpm, T0), b.counts.read(perDay, T0, DAY)]);
      // A graceful stop begins while a call's grant is on its way to Redis.
      let closed: Promise<void> | undefined;
      grants.hook = () => {
        closed = a.close();
      };
      expect(await a.counts.admit(lines, T0)).toEqual({ admitted: true });
      await closed;
      // One call was admitted: the day's total and the window count it, not the 15 calls of its block A never used.
      expect(await b.counts.read(perDay, T0 + 1, DAY)).toBe(1);
      expect(await b.counts.read(rpm, T0 + 1)).toBe(1);
    });

    test("Redis restarts (empty) while a grant waits for the ledger's balance: the block it then counts on the new Redis goes back there", async () => {
      const server = await redis.server();
      const prefix = freshPrefix();
      const credit: Counter = { kind: "credit", accountId: 9 };
      const perDay: PeriodCounter = { kind: "period", key: "acct:requests:day", seed: { measure: "requests", accountId: 9 } };
      const rpm: WindowCounter = { kind: "window", key: "acct:rpm", windowMs: MINUTE };
      const lines: AdmitLine[] = [
        { counter: credit, limit: 0, add: 100 },
        { counter: rpm, limit: 10_000, add: 1 },
        { counter: perDay, period: DAY, limit: 5_000, add: 1 },
      ];
      let restartOnRead = true;
      const loaders: StateLoaders = {
        seed: () => 0,
        async balance() {
          // The ledger read takes a moment, during which Redis restarts.
          if (restartOnRead) {
            restartOnRead = false;
            await server.stop();
            await server.start();
            await Bun.sleep(50);
          }
          return { balance: 1_000_000, staleAt: Infinity, version: 1 };
        },
      };
      const a = await redis.state(loaders, () => T0, { prefix });
      await a.counts.read(rpm, T0);
      // The grant's ADMIT asks for the balance; it runs again, with it, over a new connection to the empty Redis.
      expect((await a.counts.admit(lines, T0)).admitted).toBe(true);
      await a.close();
      const b = await redis.state(loaders, () => T0, { prefix });
      // One call admitted (on the new Redis): its block's 15 unused calls were counted there and must go back.
      expect(await b.counts.read(rpm, T0 + 1)).toBe(1);
      expect(await b.counts.read(perDay, T0 + 1, DAY)).toBe(1);
    });

    test("read() of today's total just after midnight does not take off yesterday's unused block", async () => {
      const credit: Counter = { kind: "credit", accountId: 9 };
      const perDay: PeriodCounter = { kind: "period", key: "acct:requests:day", seed: { measure: "requests", accountId: 9 } };
      const midnight = Date.UTC(2026, 10, 29);
      const lines = (day: string): AdmitLine[] => [
        { counter: credit, limit: 0, add: 100 },
        { counter: perDay, period: day, limit: 5_000, add: 1 },
      ];
      const memory = createMemoryState(funded(1_000_000), () => midnight);
      const shared = await redis.state(funded(1_000_000), () => midnight);
      await shared.counts.read(credit, midnight - 500);
      for (const state of [memory, shared]) {
        // A call half a second before midnight (a block of the 28th), one just after (the 29th).
        expect((await state.counts.admit(lines(DAY), midnight - 500)).admitted).toBe(true);
        expect((await state.counts.admit(lines("2026-11-29"), midnight + 100)).admitted).toBe(true);
      }
      const [a, b] = [await memory.counts.read(perDay, midnight + 200, "2026-11-29"), await shared.counts.read(perDay, midnight + 200, "2026-11-29")];
      expect(a).toBe(1);
      expect(b).toBe(a);
    });

    test("read() after Redis restarted empty does not take off a block Redis lost (no count below 0)", async () => {
      const server = await redis.server();
      const rpm: WindowCounter = { kind: "window", key: "acct:rpm", windowMs: MINUTE };
      const lines: AdmitLine[] = [{ counter: rpm, limit: 10_000, add: 1 }];
      const shared = await redis.state(funded(0), () => T0);
      await shared.counts.read(rpm, T0);
      expect((await shared.counts.admit(lines, T0)).admitted).toBe(true);
      await server.stop();
      await server.start();
      await Bun.sleep(50);
      // Redis lost the call and the block with it: it counts nothing, and no count is below 0.
      expect(await shared.counts.read(rpm, T0 + 1)).toBe(0);
    });

    test("credit.held right after credit.invalidate leaves out the ended block's unused part (its give-back still gathered)", async () => {
      const credit: Counter = { kind: "credit", accountId: 9 };
      const rpm: WindowCounter = { kind: "window", key: "acct:rpm", windowMs: MINUTE };
      const lines: AdmitLine[] = [
        { counter: credit, limit: 0, add: 100 },
        { counter: rpm, limit: 10_000, add: 1 },
      ];
      const memory = createMemoryState(funded(1_000_000), () => T0);
      const shared = await redis.state(funded(1_000_000), () => T0);
      await shared.counts.read(rpm, T0);
      const held: number[] = [];
      for (const state of [memory, shared]) {
        expect((await state.counts.admit(lines, T0)).admitted).toBe(true);
        await state.credit.invalidate(9);
        held.push(await state.credit.held(9));
      }
      // One call in flight holds 100.
      expect(held).toEqual([100, 100]);
    });

    test("a shape's grant under way is never evicted by a newer shape (MAX_SHAPES): its block goes back", async () => {
      const prefix = freshPrefix();
      const credit: Counter = { kind: "credit", accountId: 9 };
      // An account's calls to 17 models, each with a day quota of its own: 17 shapes of admission, 16 kept.
      const perModel: PeriodCounter[] = Array.from({ length: 17 }, (_, i) => ({ kind: "period", key: `acct:model-${i}:requests:day`, seed: { measure: "requests", accountId: 9, model: `m${i}` } }));
      const shape = (i: number): AdmitLine[] => [
        { counter: credit, limit: 0, add: 100 },
        { counter: perModel[i]!, period: DAY, limit: 5_000, add: 1 },
      ];
      const a = await redis.state(funded(1_000_000), () => T0, { prefix });
      const b = await redis.state(funded(1_000_000), () => T0, { prefix });
      await a.counts.read(credit, T0);
      for (const counter of perModel) await b.counts.read(counter, T0, DAY);
      // Models 0 to 15 in turn: 16 shapes, model 0's the least recently used.
      for (let i = 0; i < 16; i++) expect((await a.counts.admit(shape(i), T0 + i)).admitted).toBe(true);
      // A second later model 0 asks for a new block; while that grant is under way model 16's first call comes.
      const again = a.counts.admit(shape(0), T0 + 1_100);
      const first = a.counts.admit(shape(16), T0 + 1_100);
      expect((await again).admitted).toBe(true);
      expect((await first).admitted).toBe(true);
      const granted = a.allowances.granted;
      await a.close();
      // A closed: every block it held went back, and each model's day counts its calls (model 0: two).
      const totals: number[] = [];
      for (const counter of perModel) totals.push(await b.counts.read(counter, T0 + 1_200, DAY));
      expect({ granted, totals }).toEqual({ granted, totals: perModel.map((_, i) => (i === 0 ? 2 : 1)) });
    });

  });

import { afterAll, describe, expect, test } from "bun:test";
import { connectRedis } from "../../src/state/redis/connection.ts";
import { createRedisState, type RedisState } from "../../src/state/redis/state.ts";
import type { AdmitLine, CreditCounter, GaugeCounter, StateLoaders, WindowCounter } from "../../src/state/state.ts";
import { servicesSkipped, startRedisServer, type RedisServer } from "../helpers/redis-server.ts";
import { freshPrefix } from "../helpers/redis-state.ts";
import { redisProxy } from "../helpers/redis-proxy.ts";

/**
 * Counts whose answer was lost (src/state/redis/repairs.ts): a settlement is sent again
 * and counts once, an admission is undone, whether the lost script ran or not, and the
 * original arriving late counts nothing (test/helpers/redis-proxy.ts makes the faults).
 */

const T0 = Date.UTC(2026, 10, 28, 12);
const funded: StateLoaders = { seed: () => 0, balance: () => ({ balance: 1_000_000, staleAt: Infinity, version: 1 }) };
const credit: CreditCounter = { kind: "credit", accountId: 9 };
const inFlight: GaugeCounter = { kind: "gauge", key: "acct:9:in-flight" };
const rpm: WindowCounter = { kind: "window", key: "acct:9:rpm", windowMs: 60_000 };
/** A call: 100 of credit reserved, one call in flight, one request in the minute. */
const call: AdmitLine[] = [
  { counter: credit, limit: 0, add: 100 },
  { counter: inFlight, limit: 10, add: 1 },
  { counter: rpm, limit: 1_000, add: 1 },
];

let redis: RedisServer | undefined;
const states: RedisState[] = [];
afterAll(async () => {
  await Promise.all(states.map((state) => state.close()));
  await redis?.close();
});

/** An instance behind the proxy (commands time out after 300 ms) and one that watches Redis directly. */
async function setup(options: { allowances?: boolean } = {}) {
  redis ??= await startRedisServer();
  const proxy = await redisProxy(new URL(redis.url));
  const prefix = freshPrefix();
  const clock = () => T0;
  const a = createRedisState({ connection: connectRedis(proxy.url, { commandTimeoutMs: 300 }), prefix, allowances: options.allowances ?? false }, funded, clock);
  const watcher = createRedisState({ connection: connectRedis(redis.url), prefix, allowances: false }, funded, clock);
  states.push(a, watcher);
  await a.counts.read(rpm, T0);
  // One call made and settled: Redis holds the balance from then on (an admission that must load it first counts nothing in its first run).
  expect((await a.counts.admit(call, T0)).admitted).toBe(true);
  await a.counts.adjust([{ counter: credit, release: 100, charge: 0 }, { counter: inFlight, delta: -1 }]);
  const seen = async () => ({ held: await watcher.credit.held(9), inFlight: await watcher.counts.read(inFlight, T0), rpm: await watcher.counts.read(rpm, T0) });
  return { proxy, a, watcher, seen };
}

if (!servicesSkipped)
  describe("counts whose answer was lost", () => {
    test("a settlement that ran but whose answer was lost is sent again and counts once", async () => {
      const { proxy, a, seen } = await setup();
      try {
        expect((await a.counts.admit(call, T0)).admitted).toBe(true);
        expect(await seen()).toEqual({ held: 100, inFlight: 1, rpm: 2 });
        proxy.set("lose answers");
        // The call ends: its reservation released, 30 charged, its call in flight over.
        await expect(a.counts.adjust([{ counter: credit, release: 100, charge: 30 }, { counter: inFlight, delta: -1 }])).rejects.toThrow(/Redis/);
        proxy.set("pass");
        await a.settlementsApplied();
        // Charged once (not 60), nothing left reserved or in flight.
        expect(await seen()).toEqual({ held: 30, inFlight: 0, rpm: 2 });
      } finally {
        proxy.stop();
      }
    });

    test("a settlement that never arrived is sent again, and the original arriving late counts nothing", async () => {
      const { proxy, a, seen } = await setup();
      try {
        expect((await a.counts.admit(call, T0)).admitted).toBe(true);
        proxy.set("hold commands");
        await expect(a.counts.adjust([{ counter: credit, release: 100, charge: 30 }, { counter: inFlight, delta: -1 }])).rejects.toThrow(/Redis/);
        proxy.set("pass");
        await a.settlementsApplied();
        expect(await seen()).toEqual({ held: 30, inFlight: 0, rpm: 2 });
        await proxy.deliverLate();
        expect(await seen()).toEqual({ held: 30, inFlight: 0, rpm: 2 });
      } finally {
        proxy.stop();
      }
    });

    test("an admission that ran but whose answer was lost is undone", async () => {
      const { proxy, a, seen } = await setup();
      try {
        proxy.set("lose answers");
        await expect(a.counts.admit(call, T0)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        // The next admission makes the repairs first; it counts itself only.
        expect((await a.counts.admit(call, T0 + 1)).admitted).toBe(true);
        expect(await seen()).toEqual({ held: 100, inFlight: 1, rpm: 2 });
      } finally {
        proxy.stop();
      }
    });

    test("an allowance's grant whose answer was lost gives its whole block back", async () => {
      const { proxy, a, seen } = await setup({ allowances: true });
      try {
        proxy.set("lose answers");
        // A block of 16 calls: 1,600 of credit and 16 requests, counted in Redis, the answer lost.
        await expect(a.counts.admit([call[0]!, call[2]!], T0 + 1)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        await a.settlementsApplied();
        expect(await seen()).toEqual({ held: 0, inFlight: 0, rpm: 1 });
      } finally {
        proxy.stop();
      }
    });

    test("a key's calls that ended unanswered leave it, and a probe claimed unanswered is let go", async () => {
      const { proxy, a, watcher } = await setup();
      const key = { id: 5, stored: { sleeping: false, reason: null, until: null, count: 0 } };
      const health = async () => (await watcher.keys.health(1, [key]))[0]!;
      try {
        expect(await a.keys.take(1, key, false)).toBe(true);
        await a.keys.take(1, key, false);
        expect((await health()).inFlight).toBe(2);
        proxy.set("hold commands");
        await expect(a.keys.release(1, key.id)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        await a.settlementsApplied();
        expect((await health()).inFlight).toBe(1);
        await proxy.deliverLate();
        expect((await health()).inFlight).toBe(1);

        // A probe's claim that ran, its answer lost: the key is neither held in flight nor probed for good.
        proxy.set("lose answers");
        await expect(a.keys.take(1, key, true)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        await a.settlementsApplied();
        expect(await health()).toMatchObject({ inFlight: 1, probing: false });
        expect(await a.keys.take(1, key, true)).toBe(true);
      } finally {
        proxy.stop();
      }
    });

    test("a Level's probe claimed or ended unanswered is let go (else the Level never switches back)", async () => {
      const { proxy, a, watcher } = await setup();
      try {
        // Switched over: more errors than the threshold in the window.
        for (let i = 0; i < 3; i++) await a.levels.recordError(1, 2, T0 - 10_000 + i, 2, 60_000);
        expect((await watcher.levels.status(1, 2)).switchedAt).not.toBeNull();
        proxy.set("lose answers");
        await expect(a.levels.claimProbe(1, 2, T0 - 5_000)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        await a.settlementsApplied();
        expect((await watcher.levels.status(1, 2)).probing).toBe(false);
        // Claimed again; its end is lost on the way.
        expect(await a.levels.claimProbe(1, 2, T0 - 5_000)).toBe(true);
        proxy.set("hold commands");
        await expect(a.levels.abandonProbe(1, 2)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        await a.settlementsApplied();
        expect((await watcher.levels.status(1, 2)).probing).toBe(false);
        expect(await watcher.levels.claimProbe(1, 2, T0 - 5_000)).toBe(true);
      } finally {
        proxy.stop();
      }
    });

    test("an admission that arrives after its undo counts nothing", async () => {
      const { proxy, a, seen } = await setup();
      try {
        proxy.set("hold commands");
        await expect(a.counts.admit(call, T0)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        await a.settlementsApplied();
        expect(await seen()).toEqual({ held: 0, inFlight: 0, rpm: 1 });
        await proxy.deliverLate();
        expect(await seen()).toEqual({ held: 0, inFlight: 0, rpm: 1 });
      } finally {
        proxy.stop();
      }
    });
  });

import { afterAll, describe, expect, test } from "bun:test";
import { RedisClient } from "bun";
import { connectRedis } from "../../src/state/redis/connection.ts";
import { createRedisState, type RedisState } from "../../src/state/redis/state.ts";
import { createRedisUsageBuffer } from "../../src/state/redis/usage-buffer.ts";
import type { NewUsageEventRow } from "../../src/store/store.ts";
import type { GaugeCounter, StateLoaders } from "../../src/state/state.ts";
import { servicesSkipped, startRedisServer, type RedisServer } from "../helpers/redis-server.ts";
import { freshPrefix } from "../helpers/redis-state.ts";
import { call, credit, funded, inFlight, lostAnswersSetup, rpm, T0 } from "../helpers/lost-answers.ts";
import { redisProxy } from "../helpers/redis-proxy.ts";

/**
 * Lost counts made good in order (src/state/redis/repairs.ts), found by a review of the
 * first version: a repair never lands after a later count it would undo, a refused or
 * unsent operation is not undone, an operation goes only over a connection whose dataset
 * was checked, a usage row waits for its call's settlement, a database away does not
 * hold settlements back, and a later probe claim of this process is not let go.
 */

let redis: RedisServer | undefined;
const states: RedisState[] = [];
afterAll(async () => {
  await Promise.all(states.map((state) => state.close().catch(() => {})));
  await redis?.close();
});

/** An instance behind the proxy and a watcher (test/helpers/lost-answers.ts), on this file's Redis. */
async function setup(options: { allowances?: boolean } = {}) {
  redis ??= await startRedisServer();
  return lostAnswersSetup(redis, states, options);
}

if (!servicesSkipped)
  describe("lost counts made good in order", () => {
    test("a key's count in flight that never arrived goes before the call's release (the key is not left in flight)", async () => {
      const { proxy, a, watcher } = await setup();
      const key = { id: 7, stored: { sleeping: false, reason: null, until: null, count: 0 } };
      const health = async () => (await watcher.keys.health(1, [key]))[0]!;
      try {
        expect(await a.keys.take(1, key, false)).toBe(true);
        await a.keys.release(1, key.id);
        expect((await health()).inFlight).toBe(0);
        // The call's count in flight is held in the network (a partition): the watchdog gives up on it.
        proxy.set("hold commands");
        await expect(a.keys.take(1, key, false)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        // The call goes on (key-pool's count() does not wait) and ends: its release goes over a new connection at once.
        await a.keys.release(1, key.id);
        // Then the repair sends the take again.
        await a.settlementsApplied();
        expect((await health()).inFlight).toBe(0);
      } finally {
        proxy.stop();
      }
    });

    test("a settlement batch that never arrived goes before a later one (no gauge held for good)", async () => {
      const { proxy, a, watcher } = await setup();
      // A gauge no admission checks: an admitted call's +1 goes with the gathered settlements (deferred-lines.ts), its end's -1 too.
      const streams: GaugeCounter = { kind: "gauge", key: "acct:9:streams" };
      try {
        proxy.set("hold commands");
        await expect(a.counts.adjust([{ counter: streams, delta: 1 }])).rejects.toThrow(/Redis/);
        proxy.set("pass");
        // The call ends before any admission, read or heartbeat of this process runs the repairs.
        await a.counts.adjust([{ counter: streams, delta: -1 }]);
        await a.settlementsApplied();
        expect(await watcher.counts.read(streams, T0)).toBe(0);
      } finally {
        proxy.stop();
      }
    });

    test("a probe's take refused (another instance probes the key), its answer lost, takes nothing back", async () => {
      const { proxy, a, watcher } = await setup();
      const key = { id: 8, stored: { sleeping: false, reason: null, until: null, count: 0 } };
      const health = async () => (await watcher.keys.health(1, [key]))[0]!;
      try {
        // Two calls of this process on the key; another instance holds its probe (and one call in flight).
        expect(await a.keys.take(1, key, false)).toBe(true);
        expect(await a.keys.take(1, key, false)).toBe(true);
        expect(await watcher.keys.take(1, key, true)).toBe(true);
        expect(await health()).toMatchObject({ inFlight: 3, probing: true });
        // This process tries to claim the probe: refused (nothing counted), the answer lost.
        proxy.set("lose answers");
        await expect(a.keys.take(1, key, true)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        await a.settlementsApplied();
        // Nothing to take back: still three calls in flight.
        expect(await health()).toMatchObject({ inFlight: 3, probing: true });
      } finally {
        proxy.stop();
      }
    });

    test("an admission over a connection made again after a Redis restart is sent only once that Redis is checked, and undone there when its answer is lost", async () => {
      const { proxy, a, watcher, seen } = await setup();
      try {
        // Redis restarts empty; another instance seeds the balance again.
        await redis!.stop();
        await redis!.start();
        expect(await seen()).toEqual({ held: 0, inFlight: 0, rpm: 0 });
        expect(await watcher.counts.read(credit, T0)).toBe(1_000_000);
        // This process's connection is made again by whatever it sends next (a Level's status, say).
        await a.levels.status(1, 1);
        // This admission reaches the restarted Redis (over a new connection) and counts there; its answer is lost.
        proxy.set("lose answers");
        await expect(a.counts.admit(call, T0)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        await a.settlementsApplied();
        // Undone: nothing of it is left (its undo would go to the same, restarted, Redis).
        expect(await seen()).toEqual({ held: 0, inFlight: 0, rpm: 0 });
      } finally {
        proxy.stop();
      }
    });

    test("a usage row waits until its call's settlement counted (written and flushed, its charge is not held again)", async () => {
      const { proxy, a, watcher, seen, connection, prefix } = await setup();
      const buffer = createRedisUsageBuffer({ connection, state: a, prefix });
      const admin = new RedisClient(redis!.url);
      const row: NewUsageEventRow = { requestId: "r1", accountId: 9, day: "2026-11-28", createdAt: T0, endpoint: "/v1/chat/completions", status: 200, source: "upstream", latencyMs: 5, costNanos: 30 };
      try {
        expect((await a.counts.admit(call, T0)).admitted).toBe(true);
        // The settlement (100 released, 30 charged) never reaches Redis.
        proxy.set("hold commands");
        await expect(a.counts.adjust([{ counter: credit, release: 100, charge: 30 }, { counter: inFlight, delta: -1 }])).rejects.toThrow(/Redis/);
        // While the settlement has not counted, the row is not appended (its caller keeps it and tries again).
        const passSoon = setTimeout(() => proxy.set("pass"), 150);
        await expect(buffer.append(row)).rejects.toThrow(/Redis/);
        clearTimeout(passSoon);
        proxy.set("pass");
        expect(await admin.send("LLEN", [`${prefix}usage:queue`])).toBe(0);
        // Once Redis answers, the settlement counts first, then the row goes.
        await buffer.append(row);
        expect(await admin.send("LLEN", [`${prefix}usage:queue`])).toBe(1);
        // The promise: a row is in Redis only once its charge counts as unwritten there.
        const atAppend = await seen();
        // Another instance writes the row to the ledger and announces it (version 2): nothing of it is held any more.
        await watcher.credit.flushed(new Map([[9, 30]]), 2);
        await a.settlementsApplied();
        expect({ atAppend, after: await seen() }).toEqual({ atAppend: { held: 30, inFlight: 0, rpm: 2 }, after: { held: 0, inFlight: 0, rpm: 2 } });
      } finally {
        admin.close();
        proxy.stop();
      }
    });

    test("undoing a Level's lost probe claim does not let go of this process's later claim", async () => {
      const { proxy, a, watcher } = await setup();
      try {
        for (let i = 0; i < 3; i++) await a.levels.recordError(1, 2, T0 - 10_000 + i, 2, 60_000);
        // Claim #1 runs; its answer is lost.
        proxy.set("lose answers");
        await expect(a.levels.claimProbe(1, 2, T0 - 5_000)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        // An error at the Level (another instance's call) ends that probe; this process claims the next one (#2) and probes.
        await watcher.levels.recordError(1, 2, T0 - 6_000, 2, 60_000);
        expect(await a.levels.claimProbe(1, 2, T0 - 5_000)).toBe(true);
        // The repair of claim #1 runs (the next admission, read, usage row or heartbeat).
        await a.settlementsApplied();
        // Probe #2 is still under way: no other instance may claim a second one.
        expect((await watcher.levels.status(1, 2)).probing).toBe(true);
      } finally {
        proxy.stop();
      }
    });

    test("a repair that loads a seed while Redis restarts is dropped, not sent to the new Redis", async () => {
      redis ??= await startRedisServer();
      const proxy = await redisProxy(new URL(redis.url));
      const prefix = freshPrefix();
      const clock = () => T0;
      const gauge: GaugeCounter = { kind: "gauge", key: "acct:9:streams" };
      const day = { kind: "period", key: "acct:9:day", seed: { measure: "requests", accountId: 9 } } as const;
      let restartDuringSeed = false;
      let countedAfterRestart: number | undefined;
      let a!: RedisState;
      let watcher!: RedisState;
      const loaders: StateLoaders = {
        balance: funded.balance,
        async seed() {
          if (restartDuringSeed) {
            restartDuringSeed = false;
            // Redis restarts empty while the repair waits for the rollups; a call of this process counts on it afterwards.
            await redis!.stop();
            await redis!.start();
            // (Not awaited: it goes after what waits, which waits for this seed.)
            countedAfterRestart = 1;
            void a.counts.adjust([{ counter: gauge, delta: 1 }]).catch(() => {});
          }
          return 0;
        },
      };
      a = createRedisState({ connection: connectRedis(proxy.url, { commandTimeoutMs: 300 }), prefix, allowances: false }, loaders, clock);
      watcher = createRedisState({ connection: connectRedis(redis.url), prefix, allowances: false }, funded, clock);
      states.push(a, watcher);
      try {
        await a.counts.read(gauge, T0);
        // A call holds the gauge.
        await a.counts.adjust([{ counter: gauge, delta: 1 }]);
        expect(await watcher.counts.read(gauge, T0)).toBe(1);
        // Its settlement never arrives.
        proxy.set("hold commands");
        await expect(a.counts.adjust([{ counter: gauge, delta: -1 }, { counter: day, period: "2026-11-28", delta: 1 }])).rejects.toThrow(/Redis/);
        proxy.set("pass");
        restartDuringSeed = true;
        // Until what waited is dropped (Redis lost its data) and the new call's count went.
        for (let i = 0; i < 50; i++) {
          const done = await a.settlementsApplied()?.then(
            () => true,
            () => false,
          );
          if (done !== false) break;
          await Bun.sleep(100);
        }
        expect({ restartDuringSeed, countedAfterRestart }).toEqual({ restartDuringSeed: false, countedAfterRestart: 1 });
        // What the restarted Redis holds is the new call's count: the old settlement must not take it off.
        expect(await watcher.counts.read(gauge, T0)).toBe(1);
      } finally {
        proxy.stop();
      }
    });

    test("a settlement whose period total cannot be seeded (database away) counts the rest at once; admissions do not wait for the database", async () => {
      redis ??= await startRedisServer();
      const prefix = freshPrefix();
      const clock = () => T0;
      const day = { kind: "period", key: "acct:9:day", seed: { measure: "requests", accountId: 9 } } as const;
      let databaseDown = false;
      let seeds = 0;
      const loaders: StateLoaders = {
        balance: funded.balance,
        async seed() {
          seeds++;
          if (databaseDown) {
            await Bun.sleep(100);
            throw new Error("database unreachable");
          }
          return 0;
        },
      };
      const a = createRedisState({ connection: connectRedis(redis.url), prefix, allowances: false }, loaders, clock);
      states.push(a);
      expect((await a.counts.admit(call, T0)).admitted).toBe(true);
      await a.counts.adjust([{ counter: credit, release: 100, charge: 0 }, { counter: inFlight, delta: -1 }]);
      // The database goes away; a settlement counts a day total Redis does not hold yet (a new day), so it needs its seed:
      // that change is dropped (the total is seeded when next needed), the rest of the settlement counts.
      databaseDown = true;
      await a.counts.adjust([{ counter: day, period: "2026-11-28", delta: 1 }, { counter: rpm, at: T0, delta: 1 }]);
      // Calls whose lines Redis holds go on without the database: they should not wait for it.
      const before = seeds;
      const started = performance.now();
      for (let i = 0; i < 3; i++) {
        expect((await a.counts.admit(call, T0 + i)).admitted).toBe(true);
        await a.counts.adjust([{ counter: credit, release: 100, charge: 0 }, { counter: inFlight, delta: -1 }]);
      }
      expect({ seeds: seeds - before, slow: performance.now() - started > 250 }).toEqual({ seeds: 0, slow: false });
    });

    test("admissions never sent while Redis is away leave nothing to undo", async () => {
      const { proxy, a } = await setup();
      const admin = new RedisClient(redis!.url);
      const scripts = async () => {
        const info = String(await admin.send("INFO", ["commandstats"]));
        let total = 0;
        for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) total += Number(m[1]);
        return total;
      };
      try {
        // Redis is away: no command is ever written; every admission fails at once.
        proxy.set("refuse");
        for (let i = 0; i < 40; i++) await expect(a.counts.admit(call, T0)).rejects.toThrow(/Redis/);
        proxy.set("pass");
        const before = await scripts();
        expect((await a.counts.admit(call, T0 + 1)).admitted).toBe(true);
        const ran = (await scripts()) - before;
        // The admission itself, and a dataset check: not one undo per admission that never reached Redis.
        expect(ran).toBeLessThan(5);
      } finally {
        admin.close();
        proxy.stop();
      }
    });
  });

import { afterAll, describe, expect, test } from "bun:test";
import type { RedisState } from "../../src/state/redis/state.ts";
import { servicesSkipped, startRedisServer, type RedisServer } from "../helpers/redis-server.ts";
import { call, credit, inFlight, lostAnswersSetup, T0 } from "../helpers/lost-answers.ts";

/**
 * Counts whose answer was lost (src/state/redis/repairs.ts): a settlement is sent again
 * and counts once, an admission is undone, whether the lost script ran or not, and the
 * original arriving late counts nothing (test/helpers/redis-proxy.ts makes the faults).
 */

let redis: RedisServer | undefined;
const states: RedisState[] = [];
afterAll(async () => {
  await Promise.all(states.map((state) => state.close()));
  await redis?.close();
});

/** An instance behind the proxy and a watcher (test/helpers/lost-answers.ts), on this file's Redis. */
async function setup(options: { allowances?: boolean } = {}) {
  redis ??= await startRedisServer();
  return lostAnswersSetup(redis, states, options);
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

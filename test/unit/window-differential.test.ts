import { afterAll, describe, expect, test } from "bun:test";
import { createMemoryState } from "../../src/state/memory.ts";
import type { AdmitLine, StateLoaders, WindowCounter } from "../../src/state/state.ts";
import type { RedisState } from "../../src/state/redis/state.ts";
import { servicesSkipped } from "../helpers/redis-server.ts";
import { redisStates } from "../helpers/redis-state.ts";

/**
 * Sliding windows on Redis against the memory State, which is their definition
 * (`RingWindow`): random runs of admissions, corrections and reads on a pair of windows
 * and a window alone, with small steps, clock readings out of order, idle gaps of
 * several windows and corrections of old buckets, must get the same answers from both.
 * The Redis windows read only the slots a script visits and the whole string for longer
 * walks (lua-windows.ts); this is where a slot read wrongly would show.
 */

const T0 = Date.UTC(2026, 10, 28, 9);
const WINDOW = 6_000;
const loaders: StateLoaders = { seed: () => 0, balance: () => ({ balance: 0, staleAt: Infinity }) };

/** A small deterministic generator (mulberry32), so a failing seed can be run again. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const redis = redisStates();
afterAll(redis.close);

if (!servicesSkipped) describe("sliding windows on Redis answer as in memory", () => {
  for (const seed of [1, 2, 3, 4]) {
    test(`random run, seed ${seed}`, async () => {
      const next = random(seed);
      const memory = createMemoryState(loaders, () => T0);
      const shared = (await redis.state(loaders, () => T0)) as RedisState;
      const requests: WindowCounter = { kind: "window", key: "s:r", windowMs: WINDOW, lane: { key: "s:w", index: 0 } };
      const tokens: WindowCounter = { kind: "window", key: "s:t", windowMs: WINDOW, lane: { key: "s:w", index: 1 } };
      const alone: WindowCounter = { kind: "window", key: "alone", windowMs: WINDOW };
      const counters = [requests, tokens, alone];
      let now = T0;
      const admittedAt: number[] = [];
      for (let step = 0; step < 400; step++) {
        const roll = next();
        // Mostly small steps; sometimes back (another instance's older reading), sometimes an idle gap.
        if (roll < 0.05) now += Math.floor(next() * 4 * WINDOW);
        else if (roll < 0.15) now -= Math.floor(next() * 300);
        else now += Math.floor(next() * 400);
        const op = next();
        if (op < 0.6) {
          const lines: AdmitLine[] = [
            { counter: requests, limit: 6, add: 1, report: "requests" },
            { counter: tokens, limit: 900, add: 50 + Math.floor(next() * 200), report: "tokens" },
            { counter: alone, limit: 4, add: 1 },
          ];
          const [a, b] = [await memory.counts.admit(lines, now), await shared.counts.admit(lines, now)];
          expect({ step, verdict: b }).toEqual({ step, verdict: a });
          if (a.admitted) admittedAt.push(now);
        } else if (op < 0.8 && admittedAt.length > 0) {
          // A settlement corrects a reservation where it was made, sometimes one made long ago.
          const at = admittedAt[Math.floor(next() * admittedAt.length)]!;
          const changes = [{ counter: tokens, at, delta: -Math.floor(next() * 60) }, { counter: requests, at, delta: next() < 0.1 ? -1 : 0 }];
          await memory.counts.adjust(changes);
          await shared.counts.adjust(changes);
          await shared.settlementsApplied();
        } else {
          for (const counter of counters) {
            const [a, b] = [await memory.counts.read(counter, now), await shared.counts.read(counter, now)];
            expect({ step, key: counter.key, value: b }).toEqual({ step, key: counter.key, value: a });
          }
        }
      }
      shared.close();
    });
  }
});

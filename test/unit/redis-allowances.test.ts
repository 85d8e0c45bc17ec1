import { afterAll, describe, expect, test } from "bun:test";
import { ALLOWANCE_MAX_MS } from "../../src/state/redis/allowances.ts";
import type { AdmitLine, Counter, StateLoaders, WindowCounter } from "../../src/state/state.ts";
import { servicesSkipped } from "../helpers/redis-server.ts";
import { freshPrefix, redisStates } from "../helpers/redis-state.ts";

/**
 * Allowances (src/state/redis/allowances.ts) between instances: what one instance's
 * blocks do to another's admissions. One instance's exactness against the memory State
 * is in state-differential.test.ts ("admissions against allowances answer as in memory").
 */

const T0 = Date.UTC(2026, 10, 28, 12);
const MINUTE = 60_000;
const redis = redisStates();
afterAll(redis.close);

const funded = (balance: number): StateLoaders => ({ seed: () => 0, balance: () => ({ balance, staleAt: Infinity, version: 1 }) });

/** Two instances on one Redis, connected (an instance admits nothing against allowances before its connection is up). */
async function pair(loaders: StateLoaders) {
  const prefix = freshPrefix();
  const clock = () => T0;
  const a = await redis.state(loaders, clock, { prefix });
  const b = await redis.state(loaders, clock, { prefix });
  await Promise.all([a.counts.read(rpm, T0), b.counts.read(rpm, T0)]);
  return { a, b };
}

const rpm: WindowCounter = { kind: "window", key: "acct:rpm", windowMs: MINUTE };
const credit: Counter = { kind: "credit", accountId: 9 };

if (!servicesSkipped)
  describe("allowances between instances", () => {
    test("two instances admitting at once never pass a limit, and every call it allows is admitted once blocks go back", async () => {
      const { a, b } = await pair(funded(0));
      const lines: AdmitLine[] = [{ counter: rpm, limit: 2_000, add: 1, report: "requests" }];
      // Both admit as fast as they can, interleaved, within one second (one bucket of the window).
      const first = await Promise.all(Array.from({ length: 3_000 }, (_, i) => (i % 3 === 0 ? b : a).counts.admit(lines, T0 + Math.floor(i / 4))));
      const admitted = first.filter((v) => v.admitted).length;
      expect(a.allowances.drawn + b.allowances.drawn).toBeGreaterThan(300);
      expect(admitted).toBeLessThanOrEqual(2_000);
      // Past the allowances' end their unused parts are back: what the limit still allows is admitted, and no more.
      const later = T0 + ALLOWANCE_MAX_MS + 500;
      let more = 0;
      for (let i = 0; i < 3_000; i++) if ((await (i % 2 ? a : b).counts.admit(lines, later)).admitted) more++;
      expect(admitted + more).toBe(2_000);
      expect(await a.counts.read(rpm, later)).toBe(2_000);
      expect(await b.counts.read(rpm, later)).toBe(2_000);
    });

    test("an instance's unused block counts for the other until it goes back, and a closed instance gives it back", async () => {
      const { a, b } = await pair(funded(1_000_000));
      const lines: AdmitLine[] = [
        { counter: credit, limit: 0, add: 100 },
        { counter: rpm, limit: 10_000, add: 1 },
      ];
      expect((await a.counts.admit(lines, T0)).admitted).toBe(true);
      expect(a.allowances.granted).toBe(1);
      // A sees its own call; B sees A's block as counted (a block of 16 calls: FIRST_CALLS).
      expect(await a.counts.read(rpm, T0)).toBe(1);
      expect(await b.counts.read(rpm, T0)).toBe(16);
      expect(await a.credit.held(9)).toBe(100);
      expect(await b.credit.held(9)).toBe(1_600);
      await a.close();
      expect(await b.counts.read(rpm, T0)).toBe(1);
      expect(await b.credit.held(9)).toBe(100);
    });

    test("an account's calls of two shapes (two models with limits of their own) keep an allowance each", async () => {
      const { a } = await pair(funded(1_000_000));
      const modelA: WindowCounter = { kind: "window", key: "acct:model-a:rpm", windowMs: MINUTE };
      const modelB: WindowCounter = { kind: "window", key: "acct:model-b:rpm", windowMs: MINUTE };
      const shape = (model: WindowCounter): AdmitLine[] => [
        { counter: credit, limit: 0, add: 100 },
        { counter: rpm, limit: 100_000, add: 1 },
        { counter: model, limit: 50_000, add: 1 },
      ];
      const [one, two] = [shape(modelA), shape(modelB)];
      for (let i = 0; i < 200; i++) expect((await a.counts.admit(i % 2 ? one : two, T0 + i)).admitted).toBe(true);
      // Alternating, each shape still draws from its own block: a handful of grants, not one per call.
      expect(a.allowances.drawn).toBe(200);
      expect(a.allowances.granted).toBeLessThanOrEqual(8);
      expect(await a.counts.read(rpm, T0 + 200)).toBe(200);
      expect(await a.counts.read(modelA, T0 + 200)).toBe(100);
    });

    test("a call Redis admits on its own first gives back the blocks another shape holds of its counters", async () => {
      const { a } = await pair(funded(1_000_000));
      const calls: WindowCounter = { kind: "window", key: "acct:calls", windowMs: MINUTE };
      // Shape one takes an allowance (a block of 16 of the 200 calls).
      expect((await a.counts.admit([{ counter: calls, limit: 200, add: 1 }], T0)).admitted).toBe(true);
      expect(a.allowances.granted).toBe(1);
      // Shape two checks a gauge, which no block can stand for: Redis admits each of its calls.
      const other: AdmitLine[] = [
        { counter: calls, limit: 200, add: 1 },
        { counter: { kind: "gauge", key: "acct:in-flight" }, limit: 1_000, add: 1 },
      ];
      let admitted = 0;
      for (let i = 0; i < 250; i++) if ((await a.counts.admit(other, T0 + 1 + i)).admitted) admitted++;
      // Exactly the 199 the limit leaves: the unused block did not count against them.
      expect(admitted).toBe(199);
      expect(await a.counts.read(calls, T0 + 300)).toBe(200);
    });

    test("closing gives the blocks back without renewing the lease (a stopped instance's holdings still expire with it)", async () => {
      const { a, b } = await pair(funded(1_000_000));
      expect((await a.counts.admit([{ counter: credit, limit: 0, add: 100 }], T0)).admitted).toBe(true);
      const server = await redis.server();
      const { RedisClient } = await import("bun");
      const client = new RedisClient(server.url);
      try {
        const lease = `${a.owner}`;
        const keys = (await client.send("KEYS", [`*lease:${lease}`])) as string[];
        expect(keys).toHaveLength(1);
        await client.send("DEL", keys);
        await a.close();
        expect(await client.send("EXISTS", keys)).toBe(0);
        // Nothing A held counts once its lease is gone (the call's reservation included).
        expect(await b.credit.held(9)).toBe(0);
      } finally {
        client.close();
      }
    });

    test("a block held across a dropped connection goes back when Redis kept it (the connection lost, not the data)", async () => {
      const server = await redis.server();
      const { a, b } = await pair(funded(1_000_000));
      const perDay: Counter = { kind: "period", key: "acct:requests:day", seed: { measure: "requests", accountId: 9 } };
      const lines: AdmitLine[] = [
        { counter: credit, limit: 0, add: 100 },
        { counter: rpm, limit: 10_000, add: 1 },
        { counter: perDay, limit: 5_000, add: 1, period: "2026-11-28" },
      ];
      expect((await a.counts.admit(lines, T0)).admitted).toBe(true);
      expect(a.allowances.granted).toBe(1);
      const { RedisClient } = await import("bun");
      const admin = new RedisClient(server.url);
      try {
        // Every client but this one loses its connection; Redis keeps all it counted.
        await admin.send("CLIENT", ["KILL", "SKIPME", "yes", "TYPE", "normal"]);
      } finally {
        admin.close();
      }
      await Bun.sleep(20);
      // The next call connects again; the old block's unused part (15 calls, 1,500 of credit) goes back.
      expect((await a.counts.admit(lines, T0 + 1)).admitted).toBe(true);
      await a.close();
      expect(await b.counts.read(rpm, T0 + 1)).toBe(2);
      // Else the day's total would keep 15 calls nobody made until the day ends, and the credit 1,500 held while A lives.
      expect(await b.counts.read(perDay, T0 + 1, "2026-11-28")).toBe(2);
      expect(await b.credit.held(9)).toBe(200);
    });

    test("with Redis away an open allowance admits nothing; after Redis restarted empty it gives nothing back", async () => {
      const server = await redis.server();
      const { a, b } = await pair(funded(1_000_000));
      const lines: AdmitLine[] = [
        { counter: credit, limit: 0, add: 100 },
        { counter: rpm, limit: 10_000, add: 1 },
      ];
      expect((await a.counts.admit(lines, T0)).admitted).toBe(true);
      expect((await a.counts.admit(lines, T0 + 1)).admitted).toBe(true);
      expect(a.allowances.drawn).toBe(2);
      await server.stop();
      try {
        await expect(a.counts.admit(lines, T0 + 2)).rejects.toThrow(/Redis/);
        expect(a.allowances.drawn).toBe(2);
      } finally {
        await server.start();
      }
      // Redis lost the block with everything else: the old allowance is dropped, not taken off the new counts.
      expect((await a.counts.admit(lines, T0 + 3)).admitted).toBe(true);
      await a.close();
      expect(await b.counts.read(rpm, T0 + 3)).toBe(1);
      expect(await b.credit.held(9)).toBe(100);
    });
  });

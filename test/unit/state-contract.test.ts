import { afterAll, describe, expect, test } from "bun:test";
import { createMemoryState } from "../../src/state/memory.ts";
import type { StateLoaders } from "../../src/state/state.ts";
import { servicesSkipped } from "../helpers/redis-server.ts";
import { freshPrefix, redisStates } from "../helpers/redis-state.ts";
import { connectRedis } from "../../src/state/redis/connection.ts";
import type { Counter, GaugeCounter, KeySleep, PeriodCounter, State, WindowCounter } from "../../src/state/state.ts";

/**
 * What every State must do, whatever keeps it (one process's memory, a shared store):
 * the same suite runs against each implementation. Times are passed in, never read
 * from the wall clock, so window edges and day boundaries are exact.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
/** A whole minute, so one-second buckets of a one-minute window fall on round offsets. */
const T0 = Date.UTC(2026, 2, 10, 12);

interface Fixture {
  state: State;
  /** The rollups the State seeds period totals from: `${key}|${period}` → value. */
  rollups: Map<string, number>;
  /** Ledger balances the State reads credit from. */
  balances: Map<number, number>;
  /** How many times a balance was read, per account. */
  balanceReads: Map<number, number>;
  /** The ledger's version a balance read reports, per account (none: unknown). */
  versions: Map<number, number>;
  /** The expiring grants a balance read reports, per account (staleAt is the first one's expiry). */
  expiring: Map<number, Array<{ at: number; remaining: number }>>;
  /** While set, balance reads fail (the ledger cannot be read). */
  ledgerDown: { value: boolean };
  /** Run once, by the next balance read, between taking its figures and handing them back. */
  duringRead: { value?: () => Promise<void> };
  setNow(ms: number): void;
}

type Make = (loaders: StateLoaders, now: () => number) => State | Promise<State>;

const IMPLEMENTATIONS: Array<[string, Make]> = [["memory", (loaders, now) => createMemoryState(loaders, now)]];
// Each Redis fixture gets a prefix of its own on one throwaway server: an empty Redis per test.
const redis = redisStates();
afterAll(redis.close);
if (!servicesSkipped) IMPLEMENTATIONS.push(["redis", (loaders, now) => redis.state(loaders, now)]);

async function fixture(make: Make): Promise<Fixture> {
  const rollups = new Map<string, number>();
  const balances = new Map<number, number>();
  const balanceReads = new Map<number, number>();
  const versions = new Map<number, number>();
  const expiring = new Map<number, Array<{ at: number; remaining: number }>>();
  const ledgerDown = { value: false };
  const duringRead: { value?: () => Promise<void> } = {};
  let now = T0;
  const loaders: StateLoaders = {
    seed: (seed, period) => rollups.get(`${JSON.stringify(seed)}|${period}`) ?? 0,
    balance: (accountId) => {
      balanceReads.set(accountId, (balanceReads.get(accountId) ?? 0) + 1);
      if (ledgerDown.value) throw new Error("the ledger cannot be read");
      const grants = expiring.get(accountId);
      const read = { balance: balances.get(accountId) ?? 0, staleAt: grants?.[0]?.at ?? Infinity, version: versions.get(accountId), expiring: grants };
      const during = duringRead.value;
      if (!during) return read;
      duringRead.value = undefined;
      return during().then(() => read);
    },
  };
  return { state: await make(loaders, () => now), rollups, balances, balanceReads, versions, expiring, ledgerDown, duringRead, setNow: (ms) => (now = ms) };
}

const windowOf = (key: string, windowMs = MINUTE): WindowCounter => ({ kind: "window", key, windowMs });
const periodOf = (key: string, accountId = 7): PeriodCounter => ({ kind: "period", key, seed: { measure: "cost", accountId } });
const gaugeOf = (key: string): GaugeCounter => ({ kind: "gauge", key });
const credit = (accountId: number): Counter => ({ kind: "credit", accountId });

for (const [name, make] of IMPLEMENTATIONS) {
  describe(`State contract: ${name}`, () => {
    describe("windows", () => {
      test("an admission counts in the window; at the limit the next is refused with the wait until the oldest event leaves", async () => {
        const { state } = await fixture(make);
        const rpm = windowOf("w:rpm");
        for (let i = 0; i < 3; i++) expect(await state.counts.admit([{ counter: rpm, limit: 3, add: 1 }], T0 + i * 10 * SECOND)).toEqual({ admitted: true });
        const refused = await state.counts.admit([{ counter: rpm, limit: 3, add: 1 }], T0 + 30 * SECOND);
        expect(refused).toEqual({ admitted: false, refusal: { line: 0, used: 3, held: 0, retryAfterMs: 30 * SECOND } });
        // The first event leaves the window a full minute after it: admitted from then on, not before.
        expect((await state.counts.admit([{ counter: rpm, limit: 3, add: 1 }], T0 + MINUTE - 1)).admitted).toBe(false);
        expect((await state.counts.admit([{ counter: rpm, limit: 3, add: 1 }], T0 + MINUTE)).admitted).toBe(true);
        expect(await state.counts.read(rpm, T0 + MINUTE)).toBe(3);
      });

      test("a refusal reaching several lines names the first and lists the others with their waits (the meter words the longest)", async () => {
        const { state } = await fixture(make);
        const rpm = windowOf("w:many:m");
        const rph = windowOf("w:many:h", 60 * MINUTE);
        const lines = [
          { counter: rpm, limit: 1, add: 1 },
          { counter: windowOf("w:many:free"), limit: 9, add: 1 },
          { counter: rph, limit: 1, add: 1 },
        ];
        expect((await state.counts.admit(lines, T0)).admitted).toBe(true);
        expect(await state.counts.admit(lines, T0 + 30 * SECOND)).toEqual({
          admitted: false,
          refusal: { line: 0, used: 1, held: 0, retryAfterMs: 30 * SECOND, also: [{ line: 2, used: 1, held: 0, retryAfterMs: 59 * MINUTE + 30 * SECOND }] },
        });
      });

      test("an adjustment corrects the window where the reservation was made, and clear empties it", async () => {
        const { state } = await fixture(make);
        const tpm = windowOf("w:tpm");
        await state.counts.admit([{ counter: tpm, add: 100 }], T0);
        await state.counts.adjust([{ counter: tpm, at: T0, delta: -70 }]);
        expect(await state.counts.read(tpm, T0 + 30 * SECOND)).toBe(30);
        // The correction leaves with the reservation it corrected.
        expect(await state.counts.read(tpm, T0 + MINUTE)).toBe(0);
        await state.counts.admit([{ counter: tpm, add: 5 }], T0 + MINUTE);
        await state.counts.clear(tpm);
        expect(await state.counts.read(tpm, T0 + MINUTE)).toBe(0);
      });

      test("the two windows of a pair count apart: each its own amounts, refusals, waits, corrections and clear", async () => {
        const { state } = await fixture(make);
        const requests: WindowCounter = { kind: "window", key: "s:r:m", windowMs: MINUTE, lane: { key: "s:m", index: 0 } };
        const tokens: WindowCounter = { kind: "window", key: "s:t:m", windowMs: MINUTE, lane: { key: "s:m", index: 1 } };
        const call = (tokenLimit: number, add: number) => [
          { counter: requests, limit: 2, add: 1, report: "requests" as const },
          { counter: tokens, limit: tokenLimit, add, report: "tokens" as const },
        ];
        expect(await state.counts.admit(call(800, 300), T0)).toEqual({
          admitted: true,
          standings: { requests: { line: 0, remaining: 1, resetMs: MINUTE }, tokens: { line: 1, remaining: 500, resetMs: MINUTE } },
        });
        await state.counts.admit([{ counter: tokens, add: 600 }], T0 + 20 * SECOND);
        await state.counts.adjust([{ counter: tokens, at: T0 + 20 * SECOND, delta: -100 }]);
        // The token window is full, the request window is not: refused by the tokens, with their wait.
        expect(await state.counts.admit(call(800, 300), T0 + 30 * SECOND)).toEqual({ admitted: false, refusal: { line: 1, used: 800, held: 0, retryAfterMs: 30 * SECOND } });
        expect(await state.counts.read(requests, T0 + 30 * SECOND)).toBe(1);
        expect(await state.counts.read(tokens, T0 + 30 * SECOND)).toBe(800);
        await state.counts.admit([{ counter: requests, add: 1 }], T0 + 40 * SECOND);
        expect(await state.counts.read(requests, T0 + MINUTE)).toBe(1);
        expect(await state.counts.read(tokens, T0 + MINUTE)).toBe(500);
        await state.counts.clear(tokens);
        expect(await state.counts.read(tokens, T0 + MINUTE)).toBe(0);
        expect(await state.counts.read(requests, T0 + MINUTE)).toBe(1);
      });

      test("windows of different lengths under different keys are separate", async () => {
        const { state } = await fixture(make);
        await state.counts.admit([{ counter: windowOf("a", MINUTE), add: 2 }, { counter: windowOf("b", 60 * MINUTE), add: 5 }], T0);
        expect(await state.counts.read(windowOf("a", MINUTE), T0 + 2 * MINUTE)).toBe(0);
        expect(await state.counts.read(windowOf("b", 60 * MINUTE), T0 + 2 * MINUTE)).toBe(5);
      });
    });

    describe("period totals", () => {
      test("a new period starts from the rollups, and adds to it from there", async () => {
        const { state, rollups } = await fixture(make);
        const cost = periodOf("p:cost:7");
        rollups.set(`${JSON.stringify(cost.seed)}|2026-03-10`, 500);
        expect(await state.counts.read(cost, T0, "2026-03-10")).toBe(500);
        await state.counts.admit([{ counter: cost, period: "2026-03-10", add: 20 }], T0);
        await state.counts.adjust([{ counter: cost, period: "2026-03-10", delta: -5 }]);
        expect(await state.counts.read(cost, T0, "2026-03-10")).toBe(515);
      });

      test("concurrent admissions on a period nobody holds yet: seeded once from the rollups, the limit exact", async () => {
        const { state, rollups } = await fixture(make);
        const cost = periodOf("p:cost:8", 8);
        const rpm = windowOf("w:rpm:8");
        rollups.set(`${JSON.stringify(cost.seed)}|2026-03-10`, 90);
        // Ten at once: a State may send those that wait together; each is admitted as on its own.
        const verdicts = await Promise.all(
          Array.from({ length: 10 }, (_, i) => state.counts.admit([{ counter: cost, period: "2026-03-10", limit: 95, add: 1 }, { counter: rpm, limit: 100, add: 1, report: "requests" }], T0 + i)),
        );
        expect(verdicts.filter((v) => v.admitted)).toHaveLength(5);
        expect(await state.counts.read(cost, T0 + 10, "2026-03-10")).toBe(95);
        expect(await state.counts.read(rpm, T0 + 10)).toBe(5);
        // The admitted ones each saw the window as they left it: 99, 98, … remaining.
        const remaining = verdicts.flatMap((v) => (v.admitted && v.standings?.requests ? [v.standings.requests.remaining] : [])).sort((x, y) => y - x);
        expect(remaining).toEqual([99, 98, 97, 96, 95]);
      });

      test("the next business day starts afresh; a late change to the past day does not pull the total back", async () => {
        const { state } = await fixture(make);
        const cost = periodOf("p:cost:7");
        await state.counts.admit([{ counter: cost, period: "2026-03-10", add: 100 }], T0);
        await state.counts.admit([{ counter: cost, period: "2026-03-11", add: 30 }], T0 + 12 * 3_600_000);
        await state.counts.adjust([{ counter: cost, period: "2026-03-10", delta: -60 }]);
        expect(await state.counts.read(cost, T0 + 12 * 3_600_000, "2026-03-11")).toBe(30);
      });

      test("one settlement across midnight (release in the past day, cost in the new one): the new day starts from its rollups plus the cost", async () => {
        // What the meter sends when a call was admitted before midnight and its row is of
        // the day after (metering/meter.ts, settleSpend): two changes to one counter.
        const { state, rollups } = await fixture(make);
        const cost = periodOf("p:cost:9", 9);
        rollups.set(`${JSON.stringify(cost.seed)}|2026-03-11`, 7);
        await state.counts.admit([{ counter: cost, period: "2026-03-10", add: 100 }], T0);
        await state.counts.adjust([
          { counter: cost, period: "2026-03-10", delta: -100 },
          { counter: cost, period: "2026-03-11", delta: 40 },
        ]);
        expect(await state.counts.read(cost, T0 + 12 * 3_600_000, "2026-03-11")).toBe(47);
        // The same once the new day is held already: the past day's release is dropped, the cost counts.
        await state.counts.adjust([
          { counter: cost, period: "2026-03-10", delta: -100 },
          { counter: cost, period: "2026-03-11", delta: 40 },
        ]);
        expect(await state.counts.read(cost, T0 + 12 * 3_600_000, "2026-03-11")).toBe(87);
      });

      test("a limit on a period total refuses at the limit and reports what is held by calls in flight", async () => {
        const { state } = await fixture(make);
        const cost = periodOf("p:cost:7");
        const held = gaugeOf("g:held:7");
        const line = (add: number) => [{ counter: cost, period: "2026-03-10", limit: 100, add, held }, { counter: held, add }];
        expect((await state.counts.admit(line(60), T0)).admitted).toBe(true);
        expect((await state.counts.admit(line(60), T0)).admitted).toBe(true);
        expect(await state.counts.admit(line(60), T0)).toEqual({ admitted: false, refusal: { line: 0, used: 120, held: 120, retryAfterMs: 0 } });
      });
    });

    describe("gauges", () => {
      test("go up with admissions and down with adjustments, never below 0", async () => {
        const { state } = await fixture(make);
        const g = gaugeOf("g:x");
        await state.counts.admit([{ counter: g, add: 5 }], T0);
        await state.counts.adjust([{ counter: g, delta: -3 }]);
        expect(await state.counts.read(g, T0)).toBe(2);
        await state.counts.adjust([{ counter: g, delta: -10 }]);
        expect(await state.counts.read(g, T0)).toBe(0);
      });
    });

    describe("admission", () => {
      test("is all or nothing: a refusal by a later line counts nothing in the earlier ones", async () => {
        const { state } = await fixture(make);
        const a = windowOf("a");
        const b = windowOf("b");
        await state.counts.admit([{ counter: b, add: 1 }], T0);
        const verdict = await state.counts.admit([{ counter: a, limit: 10, add: 1 }, { counter: gaugeOf("g"), add: 4 }, { counter: b, limit: 1, add: 1 }], T0);
        expect(verdict.admitted).toBe(false);
        if (!verdict.admitted) expect(verdict.refusal.line).toBe(2);
        expect(await state.counts.read(a, T0)).toBe(0);
        expect(await state.counts.read(gaugeOf("g"), T0)).toBe(0);
      });

      test("the first line whose limit is reached answers; lines without a limit are counted, not checked", async () => {
        const { state } = await fixture(make);
        const a = windowOf("a");
        const b = windowOf("b");
        await state.counts.admit([{ counter: a, add: 1 }, { counter: b, add: 1 }], T0);
        const verdict = await state.counts.admit([{ counter: a, add: 1 }, { counter: a, limit: 1, add: 0 }, { counter: b, limit: 1, add: 1 }], T0);
        expect(verdict.admitted ? -1 : verdict.refusal.line).toBe(1);
      });

      test("amounts counted without a check are in the value the first check of their counter reads", async () => {
        const { state } = await fixture(make);
        await state.counts.admit([{ counter: windowOf("w:later"), add: 1 }], T0);
        await state.counts.admit([{ counter: windowOf("w:later"), add: 1 }], T0);
        expect(await state.counts.admit([{ counter: windowOf("w:later"), limit: 2, add: 1 }], T0)).toMatchObject({ admitted: false, refusal: { line: 0, used: 2 } });
      });

      test("refusals and standings name lines by their place in the admission, lines without a limit included", async () => {
        const { state } = await fixture(make);
        const lines = [
          { counter: windowOf("w:free"), add: 1, report: "requests" as const },
          { counter: periodOf("p:free"), period: "2026-03-10", add: 1 },
          { counter: windowOf("w:one"), limit: 1, add: 1, report: "requests" as const },
        ];
        expect(await state.counts.admit(lines, T0)).toEqual({ admitted: true, standings: { requests: { line: 2, remaining: 0, resetMs: MINUTE } } });
        expect(await state.counts.admit(lines, T0)).toMatchObject({ admitted: false, refusal: { line: 2, used: 1 } });
        expect(await state.counts.read(windowOf("w:free"), T0)).toBe(1);
        expect(await state.counts.read(periodOf("p:free"), T0, "2026-03-10")).toBe(1);
      });

      test("concurrent admissions never pass a limit together", async () => {
        const { state } = await fixture(make);
        const rpm = windowOf("w:concurrent");
        const verdicts = await Promise.all(Array.from({ length: 50 }, () => state.counts.admit([{ counter: rpm, limit: 10, add: 1 }], T0)));
        expect(verdicts.filter((v) => v.admitted)).toHaveLength(10);
        expect(await state.counts.read(rpm, T0)).toBe(10);
      });

      test("concurrent admissions see each other's gauge amounts: a gauge's limit holds, and a refusal reports what the gauge holds", async () => {
        const { state } = await fixture(make);
        const inFlight = gaugeOf("g:concurrent");
        const verdicts = await Promise.all(Array.from({ length: 12 }, () => state.counts.admit([{ counter: inFlight, limit: 10, add: 3 }], T0)));
        // Admitted while below the limit: 0, 3, 6 and 9 pass, then 12 is reached.
        expect(verdicts.filter((v) => v.admitted)).toHaveLength(4);
        expect(await state.counts.read(inFlight, T0)).toBe(12);
        const rpm = windowOf("w:held");
        await state.counts.admit([{ counter: rpm, add: 1 }], T0);
        const held = await Promise.all([1, 2].map(() => state.counts.admit([{ counter: inFlight, add: 2 }, { counter: rpm, limit: 2, add: 1, held: inFlight }], T0)));
        expect(held[0]).toEqual({ admitted: true });
        expect(held[1]).toMatchObject({ admitted: false, refusal: { line: 1, used: 2, held: 14 } });
      });

      test("admissions whose clock readings arrive out of order never pass a limit together", async () => {
        // Calls read the clock, then wait (for the store, another instance's network)
        // before admission: one counted at a later moment must count against the earlier.
        const { state } = await fixture(make);
        const rpm = windowOf("w:out-of-order");
        const readings = [5, 3, 4, 1, 2, 0].map((s) => T0 + s * SECOND);
        const verdicts = [];
        for (const now of readings) verdicts.push(await state.counts.admit([{ counter: rpm, limit: 3, add: 1 }], now));
        expect(verdicts.filter((v) => v.admitted)).toHaveLength(3);
        // A refusal waits until the window frees the oldest counted call, as ever.
        const refused = verdicts.find((v) => !v.admitted);
        if (refused && !refused.admitted) expect(refused.refusal.retryAfterMs).toBeGreaterThan(0);
      });
    });

    describe("standings of reported limits (rate-limit headers)", () => {
      test("an admission reports, per kind, the reported line with the least remaining, this call counted, and when its oldest amount leaves", async () => {
        const { state } = await fixture(make);
        const rpm = windowOf("s:rpm");
        const rph = windowOf("s:rph", 60 * MINUTE);
        const tpm = windowOf("s:tpm");
        const rpd = periodOf("s:rpd");
        const lines = (tokens: number) => [
          { counter: rpm, limit: 5, add: 1, report: "requests" as const },
          { counter: rph, limit: 100, add: 1, report: "requests" as const },
          { counter: rpd, period: "2026-03-10", limit: 1000, add: 1, report: "requests" as const },
          { counter: tpm, limit: 1000, add: tokens, report: "tokens" as const },
          // Counted, not limited: never reported.
          { counter: windowOf("s:free"), add: 1, report: "requests" as const },
        ];
        const first = await state.counts.admit(lines(300), T0);
        expect(first).toEqual({ admitted: true, standings: { requests: { line: 0, remaining: 4, resetMs: MINUTE }, tokens: { line: 3, remaining: 700, resetMs: MINUTE } } });
        // Ten seconds on: the counts go down, the wait runs to when the first call leaves the minute.
        const second = await state.counts.admit(lines(250), T0 + 10 * SECOND);
        expect(second).toEqual({ admitted: true, standings: { requests: { line: 0, remaining: 3, resetMs: 50 * SECOND }, tokens: { line: 3, remaining: 450, resetMs: 50 * SECOND } } });
        // After the minute, the minute windows start over; the hour's is the tighter one only if it has less left.
        const later = await state.counts.admit(lines(0), T0 + MINUTE + 10 * SECOND);
        expect(later.admitted && later.standings).toEqual({ requests: { line: 0, remaining: 4, resetMs: MINUTE }, tokens: { line: 3, remaining: 1000, resetMs: 0 } });
      });

      test("the least remaining wins across windows of different limits; a period total reports no reset of its own", async () => {
        const { state } = await fixture(make);
        const rpm = windowOf("t:rpm");
        const rpd = periodOf("t:rpd");
        const lines = [
          { counter: rpm, limit: 10, add: 1, report: "requests" as const },
          { counter: rpd, period: "2026-03-10", limit: 3, add: 1, report: "requests" as const },
        ];
        expect(await state.counts.admit(lines, T0)).toEqual({ admitted: true, standings: { requests: { line: 1, remaining: 2 } } });
        expect(await state.counts.admit(lines, T0)).toEqual({ admitted: true, standings: { requests: { line: 1, remaining: 1 } } });
        // A reservation larger than what is left reports 0, never less.
        const tpm = windowOf("t:tpm");
        expect(await state.counts.admit([{ counter: tpm, limit: 100, add: 150, report: "tokens" }], T0)).toEqual({ admitted: true, standings: { tokens: { line: 0, remaining: 0, resetMs: MINUTE } } });
      });

      test("no reported line, no standings", async () => {
        const { state } = await fixture(make);
        expect(await state.counts.admit([{ counter: windowOf("u:rpm"), limit: 10, add: 1 }], T0)).toEqual({ admitted: true });
      });
    });

    describe("credit", () => {
      test("an admission reserves against the ledger balance; settlement charges the actual cost in its place", async () => {
        const { state, balances } = await fixture(make);
        balances.set(7, 1000);
        expect((await state.counts.admit([{ counter: credit(7), limit: 0, add: 800 }], T0)).admitted).toBe(true);
        expect(await state.counts.read(credit(7), T0)).toBe(200);
        expect(await state.credit.held(7)).toBe(800);
        await state.counts.adjust([{ counter: { kind: "credit", accountId: 7 }, release: 800, charge: 300 }]);
        expect(await state.counts.read(credit(7), T0)).toBe(700);
        // Unwritten charges are held until they reach the ledger.
        expect(await state.credit.held(7)).toBe(300);
        balances.set(7, 700);
        await state.credit.flushed(new Map([[7, 300]]));
        expect(await state.credit.held(7)).toBe(0);
        // Written charges leave the balance, and are counted once.
        expect(await state.counts.read(credit(7), T0)).toBe(700);
      });

      test("a charge that will never reach the ledger (its row refused) stops counting once flushed and the balance is read again", async () => {
        const { state, balances } = await fixture(make);
        balances.set(7, 1000);
        await state.counts.admit([{ counter: credit(7), limit: 0, add: 400 }], T0);
        await state.counts.adjust([{ counter: { kind: "credit", accountId: 7 }, release: 400, charge: 300 }]);
        expect(await state.counts.read(credit(7), T0)).toBe(700);
        // What the recorder does for a set-aside row: the ledger still says 1000.
        await state.credit.flushed(new Map([[7, 300]]));
        await state.credit.invalidate(7);
        expect(await state.credit.held(7)).toBe(0);
        expect(await state.counts.read(credit(7), T0)).toBe(1000);
      });

      test("charges written at or before the version a balance was read at are in it already: flushed does not take them off again", async () => {
        const { state, balances, versions } = await fixture(make);
        balances.set(7, 1000);
        versions.set(7, 4);
        expect(await state.counts.read(credit(7), T0)).toBe(1000);
        // Two calls settle; another instance writes the first one's row (version 5) and the
        // balance is read again after that commit, before the write is announced.
        await state.counts.adjust([{ counter: { kind: "credit", accountId: 7 }, release: 0, charge: 300 }]);
        await state.counts.adjust([{ counter: { kind: "credit", accountId: 7 }, release: 0, charge: 200 }]);
        balances.set(7, 700);
        versions.set(7, 5);
        await state.credit.invalidate(7);
        // Counted twice until announced: too little, never too much.
        expect(await state.counts.read(credit(7), T0)).toBe(200);
        await state.credit.flushed(new Map([[7, 300]]), 5);
        expect(await state.counts.read(credit(7), T0)).toBe(500);
        // The second is written after that read (version 6): taken off the balance read.
        await state.credit.flushed(new Map([[7, 200]]), 6);
        expect(await state.counts.read(credit(7), T0)).toBe(500);
        expect(await state.credit.held(7)).toBe(0);
      });

      test("a balance that goes stale while the ledger cannot be read loses exactly what expired, and is served on", async () => {
        const { state, balances, versions, expiring, ledgerDown, setNow } = await fixture(make);
        // 1000, of which 300 expire in a minute and 200 in an hour.
        balances.set(7, 1000);
        versions.set(7, 1);
        expiring.set(7, [
          { at: T0 + MINUTE, remaining: 300 },
          { at: T0 + 60 * MINUTE, remaining: 200 },
        ]);
        expect(await state.counts.read(credit(7), T0)).toBe(1000);
        // A charge of 100 is written before the first expiry: drawn from the grant expiring first.
        await state.counts.adjust([{ counter: { kind: "credit", accountId: 7 }, release: 0, charge: 100 }]);
        await state.credit.flushed(new Map([[7, 100]]), 2);
        expect(await state.counts.read(credit(7), T0 + 1000)).toBe(900);
        // The ledger goes away; the first grant expires: its 200 left go, the rest stays.
        ledgerDown.value = true;
        setNow(T0 + MINUTE);
        expect(await state.counts.read(credit(7), T0 + MINUTE)).toBe(700);
        expect((await state.counts.admit([{ counter: credit(7), limit: 0, add: 50 }], T0 + MINUTE)).admitted).toBe(true);
        // The second expiry too, still without the ledger.
        setNow(T0 + 60 * MINUTE);
        expect(await state.counts.read(credit(7), T0 + 60 * MINUTE)).toBe(450);
      });

      test("a stale balance whose expiring grants are not known (a flush without a version) fails while the ledger cannot be read", async () => {
        const { state, balances, expiring, ledgerDown } = await fixture(make);
        balances.set(7, 1000);
        expiring.set(7, [{ at: T0 + MINUTE, remaining: 300 }]);
        expect(await state.counts.read(credit(7), T0)).toBe(1000);
        await state.counts.adjust([{ counter: { kind: "credit", accountId: 7 }, release: 0, charge: 100 }]);
        await state.credit.flushed(new Map([[7, 100]]));
        ledgerDown.value = true;
        await expect(state.counts.read(credit(7), T0 + MINUTE)).rejects.toThrow("the ledger cannot be read");
        // A balance never read cannot be brought forward either.
        await expect(state.counts.read(credit(8), T0)).rejects.toThrow("the ledger cannot be read");
      });

      test("a charge committed just after a balance was read, and announced before that read is stored, is taken off it", async () => {
        const { state, balances, versions, duringRead } = await fixture(make);
        balances.set(7, 1000);
        versions.set(7, 1);
        expect(await state.counts.read(credit(7), T0)).toBe(1000);
        await state.counts.adjust([{ counter: { kind: "credit", accountId: 7 }, release: 0, charge: 300 }]);
        // The balance is read again (a grant made elsewhere, say) at version 1; meanwhile another
        // instance commits the charge (version 2) and announces it before the read is stored.
        duringRead.value = () => state.credit.flushed(new Map([[7, 300]]), 2);
        await state.credit.invalidate(7);
        expect(await state.counts.read(credit(7), T0)).toBe(700);
        expect(await state.credit.held(7)).toBe(0);
        // A read that already holds the charge (version 2) does not lose it twice.
        versions.set(7, 2);
        balances.set(7, 700);
        await state.credit.invalidate(7);
        expect(await state.counts.read(credit(7), T0)).toBe(700);
      });

      test("charges flushed without a version leave the balance to be read again on its next use", async () => {
        const { state, balances, balanceReads } = await fixture(make);
        balances.set(7, 1000);
        expect(await state.counts.read(credit(7), T0)).toBe(1000);
        await state.counts.adjust([{ counter: { kind: "credit", accountId: 7 }, release: 0, charge: 300 }]);
        balances.set(7, 700);
        await state.credit.flushed(new Map([[7, 300]]));
        expect(await state.counts.read(credit(7), T0)).toBe(700);
        expect(balanceReads.get(7)).toBe(2);
        expect(await state.credit.held(7)).toBe(0);
      });

      test("a charge written and announced without a version while the balance is read: the read, not holding it, is not kept", async () => {
        const { state, balances, balanceReads, duringRead } = await fixture(make);
        balances.set(7, 1000);
        expect(await state.counts.read(credit(7), T0)).toBe(1000);
        await state.counts.adjust([{ counter: { kind: "credit", accountId: 7 }, release: 0, charge: 300 }]);
        // The balance is read again (a grant made elsewhere, say) before the charge is committed;
        // the charge is committed and announced without a version (rows written one at a time)
        // before that read is stored.
        duringRead.value = async () => {
          balances.set(7, 700);
          await state.credit.flushed(new Map([[7, 300]]));
        };
        await state.credit.invalidate(7);
        // The ledger holds the charge: it must count, once (before, the memory State kept the read of 1000).
        expect(await state.counts.read(credit(7), T0)).toBe(700);
        expect(await state.credit.held(7)).toBe(0);
        // Read three times: at first, again (under way when the charge was announced), and once more.
        expect(balanceReads.get(7)).toBe(3);
      });

      test("a call is admitted while anything is left, so concurrent calls overspend by at most one reservation", async () => {
        const { state, balances } = await fixture(make);
        balances.set(7, 1000);
        const verdicts = await Promise.all(Array.from({ length: 10 }, () => state.counts.admit([{ counter: credit(7), limit: 0, add: 300 }], T0)));
        expect(verdicts.filter((v) => v.admitted)).toHaveLength(4);
        const refused = verdicts.find((v) => !v.admitted);
        expect(refused).toEqual({ admitted: false, refusal: { line: 0, used: -200, held: 1200, retryAfterMs: 0 } });
      });

      test("invalidate re-reads the ledger and keeps what calls in flight hold", async () => {
        const { state, balances, balanceReads } = await fixture(make);
        balances.set(7, 1000);
        await state.counts.admit([{ counter: credit(7), limit: 0, add: 100 }], T0);
        balances.set(7, 5000);
        expect(await state.counts.read(credit(7), T0)).toBe(900);
        await state.credit.invalidate(7);
        expect(await state.counts.read(credit(7), T0)).toBe(4900);
        expect(balanceReads.get(7)).toBe(2);
      });

      test("a retired account's callback runs once nothing is held any more", async () => {
        const { state, balances } = await fixture(make);
        balances.set(7, 1000);
        await state.counts.admit([{ counter: credit(7), limit: 0, add: 100 }], T0);
        let settled = 0;
        await state.credit.retire(7, () => settled++);
        expect(settled).toBe(0);
        await state.counts.adjust([{ counter: { kind: "credit", accountId: 7 }, release: 100, charge: 40 }]);
        expect(settled).toBe(0);
        await state.credit.flushed(new Map([[7, 40]]));
        expect(settled).toBe(1);
        await state.credit.retire(8, () => settled++);
        expect(settled).toBe(2);
      });
    });

    describe("levels (switch-over)", () => {
      test("more errors than the threshold within the window switch; exactly one claim probes after a quiet time", async () => {
        const { state } = await fixture(make);
        for (let i = 0; i < 5; i++) expect((await state.levels.recordError(1, 2, T0 + i, 5, MINUTE)).switchedAt).toBeNull();
        expect((await state.levels.recordError(1, 2, T0 + 5, 5, MINUTE)).switchedAt).toBe(T0 + 5);
        expect((await state.levels.status(0, 2)).switchedAt).toBeNull();
        expect(await state.levels.claimProbe(1, 2, T0)).toBe(false);
        const claims = await Promise.all([1, 2, 3].map(() => state.levels.claimProbe(1, 2, T0 + MINUTE)));
        expect(claims.filter(Boolean)).toHaveLength(1);
        await state.levels.abandonProbe(1, 2);
        expect(await state.levels.claimProbe(1, 2, T0 + MINUTE)).toBe(true);
        await state.levels.recover(1, 2, true);
        expect(await state.levels.status(1, 2)).toEqual({ switchedAt: null, lastErrorAt: T0 + 5, probing: false });
        // The probe's success forgot the errors: one more does not switch again.
        expect((await state.levels.recordError(1, 2, T0 + MINUTE, 5, MINUTE)).switchedAt).toBeNull();
      });

      test("a success that is not the probe does not end a switch", async () => {
        const { state } = await fixture(make);
        for (let i = 0; i < 6; i++) await state.levels.recordError(0, 1, T0, 5, MINUTE);
        await state.levels.recover(0, 1, false);
        expect((await state.levels.status(0, 1)).switchedAt).toBe(T0);
      });
    });

    describe("provider keys' health", () => {
      const awake = { sleeping: false, reason: null, until: null, count: 0 } as const;
      const key = (id: number, stored: KeySleep = awake) => ({ id, stored });

      test("a key starts from its stored sleep; tenants do not share keys", async () => {
        const { state } = await fixture(make);
        const sleeping: KeySleep = { sleeping: true, reason: "errors", until: T0 + MINUTE, count: 2 };
        expect(await state.keys.health(1, [key(1, sleeping), key(2)])).toEqual([
          { ...sleeping, inFlight: 0, failures: 0, probing: false },
          { ...awake, inFlight: 0, failures: 0, probing: false },
        ]);
        await state.keys.take(1, key(2), false);
        expect((await state.keys.health(2, [key(2)]))[0]!.inFlight).toBe(0);
        // Once held, the State's health counts, not a stored sleep told again.
        expect((await state.keys.health(1, [key(2, sleeping)]))[0]).toMatchObject({ sleeping: false, inFlight: 1 });
      });

      test("calls in flight go up with take and down with release, never below zero; one probe at a time", async () => {
        const { state } = await fixture(make);
        await state.keys.take(0, key(1), false);
        await state.keys.take(0, key(1), false);
        await state.keys.release(0, 1);
        await state.keys.release(0, 1);
        await state.keys.release(0, 1);
        expect((await state.keys.health(0, [key(1)]))[0]!.inFlight).toBe(0);
        const claims = await Promise.all([1, 2, 3].map(() => state.keys.take(0, key(1), true)));
        expect(claims.filter(Boolean)).toHaveLength(1);
        expect((await state.keys.health(0, [key(1)]))[0]).toMatchObject({ probing: true, inFlight: 1 });
        // A probe that ends without a verdict frees the next one.
        await state.keys.release(0, 1);
        expect(await state.keys.take(0, key(1), true)).toBe(true);
      });

      test("verdicts follow the health rules: three failures sleep a key, a probe's success wakes it; NoSleep keys never sleep", async () => {
        const { state } = await fixture(make);
        const ref = { ...key(1), noSleep: false };
        expect(await state.keys.record(0, ref, { kind: "retryable" }, T0)).toBeUndefined();
        expect(await state.keys.record(0, ref, { kind: "retryable" }, T0)).toBeUndefined();
        expect(await state.keys.record(0, ref, { kind: "retryable", retryAfterMs: 5 * MINUTE }, T0)).toEqual({ sleeping: true, reason: "errors", until: T0 + 5 * MINUTE, count: 1 });
        expect(await state.keys.take(0, key(1), true)).toBe(true);
        expect(await state.keys.record(0, ref, { kind: "success" }, T0 + 5 * MINUTE)).toEqual({ sleeping: false, reason: null, until: null, count: 0 });
        expect((await state.keys.health(0, [key(1)]))[0]).toMatchObject({ sleeping: false, failures: 0, probing: false });
        expect(await state.keys.record(0, ref, { kind: "credential" }, T0)).toEqual({ sleeping: true, reason: "auth", until: null, count: 0 });
        const steady = { ...key(2), noSleep: true };
        for (let i = 0; i < 5; i++) expect(await state.keys.record(0, steady, { kind: "retryable" }, T0)).toBeUndefined();
        expect(await state.keys.record(0, steady, { kind: "credential" }, T0)).toBeUndefined();
      });

      test("failures add up across the health reads every call makes, and the third sleeps the key", async () => {
        const { state } = await fixture(make);
        const ref = { ...key(1), noSleep: false };
        await state.keys.take(0, key(1), false);
        for (let i = 1; i <= 2; i++) {
          expect(await state.keys.record(0, ref, { kind: "retryable" }, T0)).toBeUndefined();
          expect((await state.keys.health(0, [key(1)]))[0]).toMatchObject({ sleeping: false, failures: i, inFlight: 1 });
        }
        expect(await state.keys.record(0, ref, { kind: "retryable" }, T0)).toMatchObject({ sleeping: true, reason: "errors", count: 1 });
        // A success on a healthy key that nobody probes changes nothing; on a key with failures it forgets them.
        const other = { ...key(2), noSleep: false };
        expect(await state.keys.record(0, other, { kind: "success" }, T0)).toBeUndefined();
        await state.keys.record(0, other, { kind: "retryable" }, T0);
        expect(await state.keys.record(0, other, { kind: "success" }, T0)).toBeUndefined();
        expect((await state.keys.health(0, [key(2)]))[0]).toMatchObject({ sleeping: false, failures: 0 });
      });

      test("verdicts apply in the order they were given, a success not yet written included", async () => {
        const { state } = await fixture(make);
        const ref = { ...key(4), noSleep: false };
        await state.keys.record(0, ref, { kind: "retryable" }, T0);
        await state.keys.record(0, ref, { kind: "retryable" }, T0);
        // Not awaited: a State may gather successes; the failure after it must still come after it.
        const success = state.keys.record(0, ref, { kind: "success" }, T0);
        expect(await state.keys.record(0, ref, { kind: "retryable" }, T0)).toBeUndefined();
        await success;
        expect((await state.keys.health(0, [key(4)]))[0]).toMatchObject({ sleeping: false, failures: 1 });
      });

      test("setSleep puts a key to sleep or wakes it and forgets its failures", async () => {
        const { state } = await fixture(make);
        const ref = { ...key(1), noSleep: false };
        await state.keys.record(0, ref, { kind: "retryable" }, T0);
        await state.keys.setSleep(0, key(1), { sleeping: true, reason: "manual", until: null, count: 0 });
        expect((await state.keys.health(0, [key(1)]))[0]).toMatchObject({ sleeping: true, reason: "manual", failures: 0 });
        await state.keys.setSleep(0, key(1), awake);
        expect((await state.keys.health(0, [key(1)]))[0]).toMatchObject({ sleeping: false, reason: null });
      });
    });

    describe("pending entries and claims", () => {
      test("a pending entry is taken once, and not after it expired", async () => {
        const { state } = await fixture(make);
        await state.signups.put("a", { email: "a@example.com" }, MINUTE, T0);
        await state.signups.put("b", { email: "b@example.com", name: "bee" }, MINUTE, T0);
        expect(await state.signups.take("a", T0 + MINUTE)).toEqual({ email: "a@example.com" });
        expect(await state.signups.take("a", T0 + MINUTE)).toBeUndefined();
        expect(await state.signups.take("b", T0 + MINUTE + 1)).toBeUndefined();
        expect(await state.signups.take("never", T0)).toBeUndefined();
      });

      test("a claim has one winner until released or expired", async () => {
        const { state } = await fixture(make);
        const wins = await Promise.all([1, 2, 3].map(() => state.claims.claim("k", MINUTE, T0)));
        expect(wins.filter(Boolean)).toHaveLength(1);
        await state.claims.release("k");
        expect(await state.claims.claim("k", MINUTE, T0)).toBe(true);
        expect(await state.claims.claim("k", MINUTE, T0 + MINUTE - 1)).toBe(false);
        expect(await state.claims.claim("k", MINUTE, T0 + MINUTE)).toBe(true);
      });
    });
  });
}

/**
 * What only a shared State shows: two States on one Redis under one prefix stand for two
 * instances of the router.
 */
if (!servicesSkipped) {
  describe("State contract: redis, shared by two instances", () => {
    async function pair(options: { leaseMs?: number } = {}) {
      const prefix = freshPrefix();
      const balances = new Map<number, number>();
      const rollups = new Map<string, number>();
      const loaders: StateLoaders = {
        seed: (seed, period) => rollups.get(`${JSON.stringify(seed)}|${period}`) ?? 0,
        balance: (accountId) => ({ balance: balances.get(accountId) ?? 0, staleAt: Infinity }),
      };
      const a = await redis.state(loaders, () => T0, { prefix, ...options });
      const b = await redis.state(loaders, () => T0, { prefix, ...options });
      return { a, b, balances, rollups };
    }

    test("an admission by one is seen by the other", async () => {
      const { a, b, balances } = await pair();
      balances.set(7, 1000);
      const held = gaugeOf("g:held");
      await a.counts.admit([{ counter: credit(7), limit: 0, add: 300 }, { counter: windowOf("w:rpm"), limit: 5, add: 1 }, { counter: held, add: 300 }], T0);
      expect(await b.counts.read(credit(7), T0)).toBe(700);
      expect(await b.credit.held(7)).toBe(300);
      expect(await b.counts.read(windowOf("w:rpm"), T0)).toBe(1);
      // A line without a limit reaches Redis with the settlements its instance gathers, a few milliseconds on.
      await a.settlementsApplied();
      expect(await b.counts.read(held, T0)).toBe(300);
      // Settled on the instance that admitted it, seen everywhere.
      await a.counts.adjust([{ counter: { kind: "credit", accountId: 7 }, release: 300, charge: 120 }, { counter: held, delta: -300 }]);
      expect(await b.counts.read(credit(7), T0)).toBe(880);
      expect(await b.counts.read(held, T0)).toBe(0);
    });

    test("RPM 10 split over two instances admits exactly 10 under concurrency", async () => {
      const { a, b } = await pair();
      const rpm = windowOf("w:rpm");
      const verdicts = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).counts.admit([{ counter: rpm, limit: 10, add: 1 }], T0 + i)));
      expect(verdicts.filter((v) => v.admitted)).toHaveLength(10);
      expect(await a.counts.read(rpm, T0 + 40)).toBe(10);
      expect(await b.counts.read(rpm, T0 + 40)).toBe(10);
    });

    test("concurrent calls on both overspend credit by at most one reservation", async () => {
      const { a, b, balances } = await pair();
      balances.set(7, 1000);
      const verdicts = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).counts.admit([{ counter: credit(7), limit: 0, add: 300 }], T0)));
      expect(verdicts.filter((v) => v.admitted)).toHaveLength(4);
      expect(await a.counts.read(credit(7), T0)).toBe(-200);
    });

    test("a key slept by one is asleep for the other, and one probe is out across both", async () => {
      const { a, b } = await pair();
      const awake: KeySleep = { sleeping: false, reason: null, until: null, count: 0 };
      const ref = { id: 3, stored: awake };
      await a.keys.setSleep(1, ref, { sleeping: true, reason: "manual", until: null, count: 0 });
      expect((await b.keys.health(1, [ref]))[0]).toMatchObject({ sleeping: true, reason: "manual" });
      const failing = { ...ref, id: 4, noSleep: false };
      await a.keys.record(1, failing, { kind: "retryable" }, T0);
      await b.keys.record(1, failing, { kind: "retryable" }, T0);
      expect(await a.keys.record(1, failing, { kind: "retryable" }, T0)).toMatchObject({ sleeping: true, reason: "errors", count: 1 });
      expect((await b.keys.health(1, [failing]))[0]).toMatchObject({ sleeping: true, reason: "errors" });
      const probes = await Promise.all([a, b, a, b].map((s) => s.keys.take(1, failing, true)));
      expect(probes.filter(Boolean)).toHaveLength(1);
    });

    test("what a killed instance held expires with its lease; the other's holdings stay", async () => {
      const { a, b, balances } = await pair({ leaseMs: 1000 });
      balances.set(7, 1000);
      const held = gaugeOf("g:held");
      const ref = { id: 5, stored: { sleeping: false, reason: null, until: null, count: 0 } as KeySleep };
      await a.counts.admit([{ counter: credit(7), limit: 0, add: 300 }, { counter: held, add: 300 }], T0);
      await b.counts.admit([{ counter: credit(7), limit: 0, add: 100 }, { counter: held, add: 100 }], T0);
      await a.keys.take(0, ref, true);
      for (let i = 0; i < 6; i++) await a.levels.recordError(0, 1, T0, 5, MINUTE);
      expect(await a.levels.claimProbe(0, 1, T0)).toBe(true);
      expect(await b.credit.held(7)).toBe(400);
      // What it counted without a check is in Redis once its gathered settlements ran.
      await a.settlementsApplied();
      // The process dies: its heartbeat stops, nothing is released.
      a.close();
      expect(await b.counts.read(held, T0)).toBe(400);
      const deadline = Date.now() + 5000;
      while ((await b.counts.read(held, T0)) > 100 && Date.now() < deadline) await Bun.sleep(50);
      expect(await b.counts.read(held, T0)).toBe(100);
      expect(await b.credit.held(7)).toBe(100);
      expect(await b.counts.read(credit(7), T0)).toBe(900);
      expect((await b.keys.health(0, [ref]))[0]).toMatchObject({ inFlight: 0, probing: false });
      expect(await b.levels.claimProbe(0, 1, T0)).toBe(true);
    });

    test("a period total or balance Redis lost (a restart) is seeded again from the database", async () => {
      const { a, b, rollups, balances } = await pair();
      const cost = periodOf("p:cost:7");
      rollups.set(`${JSON.stringify(cost.seed)}|2026-03-10`, 500);
      balances.set(7, 1000);
      await a.counts.admit([{ counter: cost, period: "2026-03-10", add: 20 }, { counter: credit(7), limit: 0, add: 10 }], T0);
      await a.settlementsApplied();
      expect(await b.counts.read(cost, T0, "2026-03-10")).toBe(520);
      const server = await redis.server();
      const admin = connectRedis(server.url);
      await admin.send("FLUSHDB", []);
      admin.close();
      // The rollups now hold what was written meanwhile.
      rollups.set(`${JSON.stringify(cost.seed)}|2026-03-10`, 530);
      expect(await b.counts.read(cost, T0, "2026-03-10")).toBe(530);
      expect(await b.counts.read(credit(7), T0)).toBe(1000);
    });
  });
}

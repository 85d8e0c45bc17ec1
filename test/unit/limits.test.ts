import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createManualClock } from "../../src/core/clock.ts";
import { HttpError } from "../../src/core/errors.ts";
import { createMemoryCounters } from "../../src/state/memory-windows.ts";
import { createMemoryState } from "../../src/state/memory.ts";
import type { Adjustment, AdmitLine, Counter, Measure } from "../../src/state/state.ts";
import { limitSubjects, planWindows, settleTokens, type LimitSubject, type RefusalReason, type SystemLimits, type WindowLimits } from "../../src/metering/limits.ts";
import { createPeriodCounters, createPeriodSeeder } from "../../src/metering/quotas.ts";
import { openStore } from "../../src/store/open.ts";
import { compilePattern } from "../../src/routing/patterns.ts";
import type { AccountRow } from "../../src/store/store.ts";
import { accountRow } from "../helpers/account-row.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** 2026-03-10 12:00:00 UTC, a whole second. */
const T0 = Date.UTC(2026, 2, 10, 12);

const account = accountRow;

/** An in-memory State whose period totals start at 0 (no rollups), on a manual clock. */
function memoryState(clock: { now(): number }) {
  return createMemoryState({ seed: () => 0, balance: () => ({ balance: 0, staleAt: Infinity }) }, () => clock.now());
}

const system = (entries: Record<string, WindowLimits>): SystemLimits =>
  Object.entries(entries).map(([source, limits]) => ({ pattern: compilePattern(source), limits }));

/** One admission of the window limits, checked and counted in the State as the meter does. */
async function admitWindows(
  deps: { state: ReturnType<typeof memoryState>; periods: ReturnType<typeof createPeriodCounters>; clock: ReturnType<typeof createManualClock> },
  acct: AccountRow,
  model: string | undefined,
  sys: SystemLimits,
): Promise<LimitSubject[]> {
  const now = deps.clock.now();
  const day = deps.clock.businessDate(now);
  const subjects = limitSubjects(acct, model, deps.periods, sys);
  const lines: AdmitLine[] = [];
  const reasons: Array<RefusalReason | undefined> = [];
  planWindows({ subjects, day, now, tokens: 0, clock: deps.clock }, lines, reasons);
  const verdict = await deps.state.counts.admit(lines, now);
  if (!verdict.admitted) throw reasons[verdict.refusal.line]!(verdict.refusal);
  return subjects;
}

function harness(acct: AccountRow, sys: SystemLimits = []) {
  const clock = createManualClock(T0);
  const state = memoryState(clock);
  const periods = createPeriodCounters();
  const admit = (model: string | undefined = "m1") => admitWindows({ state, periods, clock }, acct, model, sys);
  const finish = async (subjects: LimitSubject[], tokens: number) => {
    const changes: Adjustment[] = [];
    settleTokens(subjects, clock.businessDate(), clock.now(), 0, tokens, changes);
    await state.counts.adjust(changes);
  };
  const refusal = async (model: string | undefined = "m1"): Promise<HttpError> => {
    try {
      await admit(model);
    } catch (error) {
      expect(error).toBeInstanceOf(HttpError);
      expect((error as HttpError).status).toBe(429);
      return error as HttpError;
    }
    throw new Error("admitted");
  };
  /** A counter's value now (a period total in `period`). */
  const read = (counter: Counter, period?: string) => state.counts.read(counter, clock.now(), period);
  const windowSum = (key: string, windowMs: number) => read({ kind: "window", key, windowMs });
  const total = (measure: Measure, period: string, accountId?: number, model?: string) => read(periods.of(measure, "day", accountId, model), period);
  return { clock, state, periods, admit, finish, refusal, windowSum, total };
}

const retryAfter = (e: HttpError) => Number(e.headers!["retry-after"]);

describe("window limits (planWindows in the State)", () => {
  test("no limits: no subjects, nothing counted", async () => {
    const h = harness(account());
    expect(await h.admit()).toEqual([]);
    expect(await h.total("requests", "2026-03-10", 7)).toBe(0);
  });

  test("RPM refuses the call after the limit, names it and the subject, and admits again after Retry-After", async () => {
    const h = harness(account({ rpm: 3 }));
    for (let i = 0; i < 3; i++) await h.admit();
    const e = await h.refusal();
    expect(e.code).toBe("rpm_limit_reached");
    expect(e.message).toContain("RPM limit of 3");
    expect(e.message).toContain("account");
    const wait = retryAfter(e);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(61);
    h.clock.advance((wait - 1) * SECOND);
    await h.refusal();
    h.clock.advance(1 * SECOND);
    await h.admit();
  });

  test("an edited account or MODEL_LIMITS applies at once, and what was counted still counts", async () => {
    const clock = createManualClock(T0);
    const deps = { clock, state: memoryState(clock), periods: createPeriodCounters() };
    const admit = (acct: AccountRow, sys: SystemLimits) => admitWindows(deps, acct, "acme-1", sys);
    const refused = async (acct: AccountRow, sys: SystemLimits) => {
      try {
        await admit(acct, sys);
      } catch (error) {
        return (error as HttpError).code;
      }
      return undefined;
    };
    // Subjects are remembered per account snapshot: an edit is a new snapshot of the same id.
    const before = account({ id: 5, rpm: 10 });
    for (let i = 0; i < 3; i++) await admit(before, []);
    expect(await refused(account({ id: 5, rpm: 3 }), [])).toBe("rpm_limit_reached");
    expect(await refused(account({ id: 5, rpm: 4 }), [])).toBeUndefined();
    // MODEL_LIMITS replaced: the new object takes effect on the next call.
    const loose = system({ "acme-*": { rpm: 100 } });
    await admit(before, loose);
    expect(await refused(before, system({ "acme-*": { rpm: 1 } }))).toBe("rpm_limit_reached");
    expect(await refused(before, loose)).toBeUndefined();
  });

  test("a refused call is not counted", async () => {
    const h = harness(account({ rpm: 1 }));
    await h.admit();
    await h.refusal();
    await h.refusal();
    expect(await h.windowSum("a:7:r:m", MINUTE)).toBe(1);
    expect(await h.total("requests", "2026-03-10", 7)).toBe(1);
  });

  test("RPM is a sliding window: calls spread over the minute leave one by one", async () => {
    const h = harness(account({ rpm: 2 }));
    await h.admit(); // T0
    h.clock.advance(30 * SECOND);
    await h.admit(); // T0+30s
    const e = await h.refusal();
    // The first call leaves the window first: about 30 s from now, not a full minute.
    expect(retryAfter(e)).toBeGreaterThanOrEqual(30);
    expect(retryAfter(e)).toBeLessThanOrEqual(31);
    h.clock.advance(retryAfter(e) * SECOND);
    await h.admit();
    await h.refusal();
  });

  test("RPH refuses with a Retry-After under an hour (plus one bucket)", async () => {
    const h = harness(account({ rph: 2 }));
    await h.admit();
    h.clock.advance(10 * MINUTE);
    await h.admit();
    const e = await h.refusal();
    expect(e.code).toBe("rph_limit_reached");
    expect(retryAfter(e)).toBeGreaterThan(49 * 60);
    expect(retryAfter(e)).toBeLessThanOrEqual(51 * 60);
    h.clock.advance(retryAfter(e) * SECOND - SECOND);
    await h.refusal();
    h.clock.advance(SECOND);
    await h.admit();
  });

  test("RPD resets at the business date, with Retry-After until midnight", async () => {
    const h = harness(account({ rpd: 2 }));
    h.clock.set(Date.UTC(2026, 2, 10, 23, 0));
    await h.admit();
    await h.admit();
    const e = await h.refusal();
    expect(e.code).toBe("rpd_limit_reached");
    expect(retryAfter(e)).toBe(3600);
    h.clock.set(Date.UTC(2026, 2, 10, 23, 59, 59));
    await h.refusal();
    h.clock.set(Date.UTC(2026, 2, 11, 0, 0, 1));
    await h.admit();
    await h.admit();
    await h.refusal();
  });

  test("token windows count tokens when calls finish; a call is refused once recorded tokens reached the limit", async () => {
    const h = harness(account({ tpm: 100 }));
    const first = await h.admit();
    // In flight: nothing recorded yet, so a second call is admitted.
    const second = await h.admit();
    await h.finish(first, 60);
    await h.admit();
    await h.finish(second, 39);
    // 99 < 100: still admitted.
    const third = await h.admit();
    await h.finish(third, 1);
    const e = await h.refusal();
    expect(e.code).toBe("tpm_limit_reached");
    expect(e.message).toContain("TPM limit of 100");
    expect(retryAfter(e)).toBeLessThanOrEqual(61);
    h.clock.advance(retryAfter(e) * SECOND);
    await h.admit();
  });

  test("TPH and TPD refuse at their boundaries", async () => {
    const hour = harness(account({ tph: 10 }));
    await hour.finish(await hour.admit(), 10);
    const e = await hour.refusal();
    expect(e.code).toBe("tph_limit_reached");
    expect(retryAfter(e)).toBeLessThanOrEqual(3660);
    expect(retryAfter(e)).toBeGreaterThan(3540);

    const day = harness(account({ tpd: 10 }));
    day.clock.set(Date.UTC(2026, 2, 10, 18));
    await day.finish(await day.admit(), 10);
    const d = await day.refusal();
    expect(d.code).toBe("tpd_limit_reached");
    expect(retryAfter(d)).toBe(6 * 3600);
    day.clock.set(Date.UTC(2026, 2, 11, 0, 0, 1));
    await day.admit();
  });

  test("zero tokens change nothing; a limit of 0 refuses every call", async () => {
    const h = harness(account({ tpm: 5 }));
    await h.finish(await h.admit(), 0);
    expect(await h.windowSum("a:7:t:m", MINUTE)).toBe(0);
    const zero = harness(account({ rpm: 0 }));
    expect((await zero.refusal()).code).toBe("rpm_limit_reached");
  });

  test("account ModelLimits apply to matching models only, per effective model, labelled as account model limits", async () => {
    const h = harness(account({ modelLimits: JSON.stringify({ "acme-*": { rpm: 1 }, "acme-big": { rpm: 2 } }) }));
    await h.admit("acme-small");
    const e = await h.refusal("acme-small");
    expect(e.message).toContain("account model acme-small");
    // The exact entry beats the pattern.
    await h.admit("acme-big");
    await h.admit("acme-big");
    expect((await h.refusal("acme-big")).message).toContain("RPM limit of 2");
    // Another model matching the pattern has its own counter; unmatched models are free.
    await h.admit("acme-other");
    for (let i = 0; i < 5; i++) await h.admit("gpt-4o");
    // No model (e.g. a model-less call): only account limits apply.
    await h.admit(undefined);
  });

  test("system MODEL_LIMITS are shared by every account", async () => {
    const sys = system({ "acme-*": { rpm: 2 } });
    const clock = createManualClock(T0);
    const deps = { clock, state: memoryState(clock), periods: createPeriodCounters() };
    const admit = (acct: AccountRow) => admitWindows(deps, acct, "acme-1", sys);
    await admit(account({ id: 1 }));
    await admit(account({ id: 2 }));
    let error: HttpError | undefined;
    try {
      await admit(account({ id: 3 }));
    } catch (e) {
      error = e as HttpError;
    }
    expect(error?.code).toBe("rpm_limit_reached");
    expect(error?.message).toContain("(model acme-1)");
  });

  test("system RPD and TPD count per model across accounts", async () => {
    const h = harness(account(), system({ "m*": { rpd: 1, tpd: 50 } }));
    const subjects = await h.admit("m1");
    expect(subjects.map((s) => s.label)).toEqual(["model m1"]);
    expect(await h.total("requests", "2026-03-10", undefined, "m1")).toBe(1);
    await h.finish(subjects, 50);
    expect(await h.total("tokens", "2026-03-10", undefined, "m1")).toBe(50);
    expect((await h.refusal("m1")).code).toBe("rpd_limit_reached");
  });

  test("checks run account, account model, system model — the first limit reached answers", async () => {
    const acct = account({ rpm: 1, modelLimits: JSON.stringify({ m1: { rpm: 1 } }) });
    const h = harness(acct, system({ m1: { rpm: 1 } }));
    const subjects = await h.admit("m1");
    expect(subjects.map((s) => s.label)).toEqual(["account", "account model m1", "model m1"]);
    expect((await h.refusal("m1")).message).toContain("(account)");

    const modelsOnly = harness(account({ modelLimits: JSON.stringify({ m1: { rpm: 1 } }) }), system({ m1: { rpm: 1 } }));
    await modelsOnly.admit("m1");
    expect((await modelsOnly.refusal("m1")).message).toContain("(account model m1)");
  });
});

describe("counters.retryAfterMs", () => {
  test("0 below the limit; otherwise when enough old buckets have left the window", () => {
    const c = createMemoryCounters();
    expect(c.retryAfterMs("none", T0, MINUTE, 1)).toBe(0);
    c.add("k", 2, T0, MINUTE);
    c.add("k", 1, T0 + 20 * SECOND, MINUTE);
    const now = T0 + 30 * SECOND;
    expect(c.retryAfterMs("k", now, MINUTE, 4)).toBe(0);
    // Dropping below 3 needs the first event (at T0) to leave: at T0 + 60 s.
    expect(c.retryAfterMs("k", now, MINUTE, 3)).toBe(30 * SECOND);
    expect(c.sum("k", now + 30 * SECOND - 1, MINUTE)).toBe(3);
    expect(c.sum("k", now + 30 * SECOND, MINUTE)).toBe(1);
    // Dropping below 1 needs both to leave.
    expect(c.retryAfterMs("k", now, MINUTE, 1)).toBe(50 * SECOND);
    expect(c.sum("k", now + 50 * SECOND, MINUTE)).toBe(0);
  });

  test("the wait never exceeds the window (60 s for a minute), and the window admits right after it", () => {
    for (let offset = 0; offset < 3000; offset += 250) {
      const c = createMemoryCounters();
      c.add("k", 1, T0 + offset, MINUTE);
      for (const later of [0, 400, 999]) {
        const wait = c.retryAfterMs("k", T0 + offset + later, MINUTE, 1);
        expect(wait).toBe(MINUTE - later);
        expect(c.sum("k", T0 + offset + later + wait, MINUTE)).toBe(0);
        expect(c.sum("k", T0 + offset + later + wait - 1, MINUTE)).toBe(1);
      }
    }
    const hour = createMemoryCounters();
    hour.add("h", 1, T0, HOUR);
    expect(hour.retryAfterMs("h", T0, HOUR, 1)).toBe(HOUR);
  });
});

interface QuotaOps {
  get(measure: Measure, period: string, accountId?: number, model?: string): Promise<number>;
  add(measure: Measure, period: string, delta: number, accountId?: number, model?: string): Promise<void>;
}

describe("period totals (day and month, seeded from the rollups)", () => {
  /** Period totals in a memory State seeded from a real store's rollups, read and changed as the meter does. */
  async function withStore(run: (quotas: QuotaOps, store: ReturnType<typeof openStore>) => Promise<void>) {
    const dir = mkdtempSync(join(tmpdir(), "quotas-"));
    const store = openStore(join(dir, "router.db"));
    const state = createMemoryState({ seed: createPeriodSeeder(store), balance: () => ({ balance: 0, staleAt: Infinity }) }, () => T0);
    const periods = createPeriodCounters();
    const counter = (measure: Measure, period: string, accountId?: number, model?: string) => periods.of(measure, period.length === 7 ? "month" : "day", accountId, model);
    const quotas: QuotaOps = {
      get: (measure, period, accountId, model) => state.counts.read(counter(measure, period, accountId, model), T0, period),
      add: (measure, period, delta, accountId, model) => state.counts.adjust([{ counter: counter(measure, period, accountId, model), period, delta }]),
    };
    try {
      await run(quotas, store);
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  test("a day and its month keep separate totals (in-memory amounts survive switching between them)", async () => {
    await withStore(async (quotas) => {
      await quotas.add("cost", "2026-03-10", 100, 7);
      await quotas.add("cost", "2026-03", 100, 7);
      await quotas.add("cost", "2026-03-10", 50, 7);
      await quotas.add("cost", "2026-03", 50, 7);
      expect(await quotas.get("cost", "2026-03-10", 7)).toBe(150);
      expect(await quotas.get("cost", "2026-03", 7)).toBe(150);
      expect(await quotas.get("cost", "2026-03-10", 7)).toBe(150);
      // Another account, another measure: separate.
      expect(await quotas.get("cost", "2026-03-10", 8)).toBe(0);
      expect(await quotas.get("requests", "2026-03-10", 7)).toBe(0);
    });
  });

  test("the first touch of a period seeds it from the daily rollups (a restart keeps quotas)", async () => {
    await withStore(async (quotas, store) => {
      const row = { accountId: 7, model: "m1", requests: 2, prompt: 10, completion: 5, reasoning: 0, cacheRead: 0, cacheWrite: 0 };
      await store.usage.addRollups([
        { ...row, day: "2026-03-09", costNanos: 1000 },
        { ...row, day: "2026-03-10", costNanos: 300 },
        { ...row, day: "2026-02-28", costNanos: 99 },
      ]);
      expect(await quotas.get("cost", "2026-03-10", 7)).toBe(300);
      expect(await quotas.get("cost", "2026-03", 7)).toBe(1300);
      expect(await quotas.get("requests", "2026-03-10", 7)).toBe(2);
      expect(await quotas.get("tokens", "2026-03-10", 7, "m1")).toBe(15);
      expect(await quotas.get("tokens", "2026-03-10", undefined, "m1")).toBe(15);
      await quotas.add("cost", "2026-03", 5, 7);
      expect(await quotas.get("cost", "2026-03", 7)).toBe(1305);
      // Charged spend (SoftLimit) seeds the same way and is kept apart from reservations.
      expect(await quotas.get("spent", "2026-03", 7)).toBe(1300);
    });
  });

  test("a call settling after midnight does not pull the slot back to the past day", async () => {
    await withStore(async (quotas) => {
      await quotas.add("cost", "2026-03-10", 500, 7); // reserved before midnight
      await quotas.add("cost", "2026-03-11", 200, 7); // reserved after midnight
      await quotas.add("cost", "2026-03-10", -100, 7); // the first call settles after midnight
      expect(await quotas.get("cost", "2026-03-11", 7)).toBe(200);
    });
  });
});

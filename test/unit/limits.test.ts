import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createManualClock } from "../../src/core/clock.ts";
import { HttpError } from "../../src/core/errors.ts";
import { createMemoryCounters } from "../../src/metering/counters.ts";
import { checkWindows, countRequest, settleTokens, type SystemLimits, type WindowLimits } from "../../src/metering/limits.ts";
import { createQuotas, type Quotas } from "../../src/metering/quotas.ts";
import { openStore } from "../../src/store/db.ts";
import { usageDaily } from "../../src/store/schema/usage.ts";
import { compilePattern } from "../../src/routing/patterns.ts";
import type { AccountRow } from "../../src/store/schema/accounts.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** 2026-03-10 12:00:00 UTC, a whole second. */
const T0 = Date.UTC(2026, 2, 10, 12);

function account(fields: Partial<AccountRow> = {}): AccountRow {
  return {
    id: 7,
    parentId: 1,
    path: "/1/7/",
    depth: 2,
    isOwner: false,
    email: "a@example.com",
    name: "acct",
    alias: null,
    billingEmail: null,
    rates: 1,
    rpm: null,
    rph: null,
    rpd: null,
    tpm: null,
    tph: null,
    tpd: null,
    dailyLimit: null,
    hardLimit: null,
    softLimit: null,
    modelLimits: null,
    allowIps: null,
    allowModels: null,
    resources: null,
    keyHash: "h",
    keyPrefix: "p",
    createdAt: 0,
    updatedAt: 0,
    deletedAt: null,
    ...fields,
  };
}

/** Day quotas in a map, keyed like the real ones (measure, period, account, model). */
function fakeQuotas() {
  const values = new Map<string, number>();
  const key = (measure: string, period: string, accountId?: number, model?: string) => `${measure}|${period}|${accountId ?? "*"}|${model ?? "*"}`;
  const quotas = {
    slot: (measure: string, _kind: string, accountId?: number, model?: string) => ({
      get: (period: string) => values.get(key(measure, period, accountId, model)) ?? 0,
      add: (period: string, amount: number) => {
        const k = key(measure, period, accountId, model);
        values.set(k, (values.get(k) ?? 0) + amount);
      },
    }),
  } as unknown as Quotas;
  return { quotas, values };
}

const system = (entries: Record<string, WindowLimits>): SystemLimits =>
  Object.entries(entries).map(([source, limits]) => ({ pattern: compilePattern(source), limits }));

/** One admission: check, then count the request, as the meter does. */
function harness(acct: AccountRow, sys: SystemLimits = []) {
  const clock = createManualClock(T0);
  const counters = createMemoryCounters();
  const { quotas, values } = fakeQuotas();
  const admit = (model: string | undefined = "m1") => {
    const now = clock.now();
    const day = clock.businessDate(now);
    const scopes = checkWindows({ account: acct, model, day, now, counters, quotas, clock, system: sys });
    countRequest(scopes, day, now);
    return scopes;
  };
  const finish = (scopes: ReturnType<typeof admit>, tokens: number) =>
    settleTokens(scopes, clock.businessDate(), clock.now(), 0, tokens);
  const refusal = (model: string | undefined = "m1"): HttpError => {
    try {
      admit(model);
    } catch (error) {
      expect(error).toBeInstanceOf(HttpError);
      expect((error as HttpError).status).toBe(429);
      return error as HttpError;
    }
    throw new Error("admitted");
  };
  return { clock, counters, quotas, values, admit, finish, refusal };
}

const retryAfter = (e: HttpError) => Number(e.headers!["retry-after"]);

describe("checkWindows and countRequest", () => {
  test("no limits: no scopes, nothing counted", () => {
    const h = harness(account());
    expect(h.admit()).toEqual([]);
    expect(h.values.size).toBe(0);
  });

  test("RPM refuses the call after the limit, names it and the scope, and admits again after Retry-After", () => {
    const h = harness(account({ rpm: 3 }));
    for (let i = 0; i < 3; i++) h.admit();
    const e = h.refusal();
    expect(e.code).toBe("rpm_limit_reached");
    expect(e.message).toContain("RPM limit of 3");
    expect(e.message).toContain("account");
    const wait = retryAfter(e);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(61);
    h.clock.advance((wait - 1) * SECOND);
    h.refusal();
    h.clock.advance(1 * SECOND);
    h.admit();
  });

  test("an edited account or MODEL_LIMITS applies at once, and what was counted still counts", () => {
    const clock = createManualClock(T0);
    const counters = createMemoryCounters();
    const { quotas } = fakeQuotas();
    const admit = (acct: AccountRow, sys: SystemLimits) => {
      const now = clock.now();
      const day = clock.businessDate(now);
      countRequest(checkWindows({ account: acct, model: "acme-1", day, now, counters, quotas, clock, system: sys }), day, now);
    };
    const refused = (acct: AccountRow, sys: SystemLimits) => {
      try {
        admit(acct, sys);
      } catch (error) {
        return (error as HttpError).code;
      }
      return undefined;
    };
    // Scopes are remembered per account snapshot: an edit is a new snapshot of the same id.
    const before = account({ id: 5, rpm: 10 });
    for (let i = 0; i < 3; i++) admit(before, []);
    expect(refused(account({ id: 5, rpm: 3 }), [])).toBe("rpm_limit_reached");
    expect(refused(account({ id: 5, rpm: 4 }), [])).toBeUndefined();
    // MODEL_LIMITS replaced: the new object takes effect on the next call.
    const loose = system({ "acme-*": { rpm: 100 } });
    admit(before, loose);
    expect(refused(before, system({ "acme-*": { rpm: 1 } }))).toBe("rpm_limit_reached");
    expect(refused(before, loose)).toBeUndefined();
  });

  test("a refused call is not counted", () => {
    const h = harness(account({ rpm: 1 }));
    h.admit();
    h.refusal();
    h.refusal();
    expect(h.counters.sum("a:7:r:m", h.clock.now(), MINUTE)).toBe(1);
    expect(h.values.get(`requests|2026-03-10|7|*`)).toBe(1);
  });

  test("RPM is a sliding window: calls spread over the minute leave one by one", () => {
    const h = harness(account({ rpm: 2 }));
    h.admit(); // T0
    h.clock.advance(30 * SECOND);
    h.admit(); // T0+30s
    const e = h.refusal();
    // The first call leaves the window first: about 30 s from now, not a full minute.
    expect(retryAfter(e)).toBeGreaterThanOrEqual(30);
    expect(retryAfter(e)).toBeLessThanOrEqual(31);
    h.clock.advance(retryAfter(e) * SECOND);
    h.admit();
    h.refusal();
  });

  test("RPH refuses with a Retry-After under an hour (plus one bucket)", () => {
    const h = harness(account({ rph: 2 }));
    h.admit();
    h.clock.advance(10 * MINUTE);
    h.admit();
    const e = h.refusal();
    expect(e.code).toBe("rph_limit_reached");
    expect(retryAfter(e)).toBeGreaterThan(49 * 60);
    expect(retryAfter(e)).toBeLessThanOrEqual(51 * 60);
    h.clock.advance(retryAfter(e) * SECOND - SECOND);
    h.refusal();
    h.clock.advance(SECOND);
    h.admit();
  });

  test("RPD resets at the business date, with Retry-After until midnight", () => {
    const h = harness(account({ rpd: 2 }));
    h.clock.set(Date.UTC(2026, 2, 10, 23, 0));
    h.admit();
    h.admit();
    const e = h.refusal();
    expect(e.code).toBe("rpd_limit_reached");
    expect(retryAfter(e)).toBe(3600);
    h.clock.set(Date.UTC(2026, 2, 10, 23, 59, 59));
    h.refusal();
    h.clock.set(Date.UTC(2026, 2, 11, 0, 0, 1));
    h.admit();
    h.admit();
    h.refusal();
  });

  test("token windows count tokens when calls finish; a call is refused once recorded tokens reached the limit", () => {
    const h = harness(account({ tpm: 100 }));
    const first = h.admit();
    // In flight: nothing recorded yet, so a second call is admitted.
    const second = h.admit();
    h.finish(first, 60);
    h.admit();
    h.finish(second, 39);
    // 99 < 100: still admitted.
    const third = h.admit();
    h.finish(third, 1);
    const e = h.refusal();
    expect(e.code).toBe("tpm_limit_reached");
    expect(e.message).toContain("TPM limit of 100");
    expect(retryAfter(e)).toBeLessThanOrEqual(61);
    h.clock.advance(retryAfter(e) * SECOND);
    h.admit();
  });

  test("TPH and TPD refuse at their boundaries", () => {
    const hour = harness(account({ tph: 10 }));
    hour.finish(hour.admit(), 10);
    const e = hour.refusal();
    expect(e.code).toBe("tph_limit_reached");
    expect(retryAfter(e)).toBeLessThanOrEqual(3660);
    expect(retryAfter(e)).toBeGreaterThan(3540);

    const day = harness(account({ tpd: 10 }));
    day.clock.set(Date.UTC(2026, 2, 10, 18));
    day.finish(day.admit(), 10);
    const d = day.refusal();
    expect(d.code).toBe("tpd_limit_reached");
    expect(retryAfter(d)).toBe(6 * 3600);
    day.clock.set(Date.UTC(2026, 2, 11, 0, 0, 1));
    day.admit();
  });

  test("zero tokens change nothing; a limit of 0 refuses every call", () => {
    const h = harness(account({ tpm: 5 }));
    h.finish(h.admit(), 0);
    expect(h.counters.sum("a:7:t:m", h.clock.now(), MINUTE)).toBe(0);
    const zero = harness(account({ rpm: 0 }));
    expect(zero.refusal().code).toBe("rpm_limit_reached");
  });

  test("account ModelLimits apply to matching models only, per effective model, labelled as account model limits", () => {
    const h = harness(account({ modelLimits: JSON.stringify({ "acme-*": { rpm: 1 }, "acme-big": { rpm: 2 } }) }));
    h.admit("acme-small");
    const e = h.refusal("acme-small");
    expect(e.message).toContain("account model acme-small");
    // The exact entry beats the pattern.
    h.admit("acme-big");
    h.admit("acme-big");
    expect(h.refusal("acme-big").message).toContain("RPM limit of 2");
    // Another model matching the pattern has its own counter; unmatched models are free.
    h.admit("acme-other");
    for (let i = 0; i < 5; i++) h.admit("gpt-4o");
    // No model (e.g. a model-less call): only account limits apply.
    h.admit(undefined);
  });

  test("system MODEL_LIMITS are shared by every account", () => {
    const sys = system({ "acme-*": { rpm: 2 } });
    const clock = createManualClock(T0);
    const counters = createMemoryCounters();
    const { quotas } = fakeQuotas();
    const admit = (acct: AccountRow) => {
      const now = clock.now();
      const day = clock.businessDate(now);
      countRequest(checkWindows({ account: acct, model: "acme-1", day, now, counters, quotas, clock, system: sys }), day, now);
    };
    admit(account({ id: 1 }));
    admit(account({ id: 2 }));
    let error: HttpError | undefined;
    try {
      admit(account({ id: 3 }));
    } catch (e) {
      error = e as HttpError;
    }
    expect(error?.code).toBe("rpm_limit_reached");
    expect(error?.message).toContain("(model acme-1)");
  });

  test("system RPD and TPD count per model across accounts", () => {
    const h = harness(account(), system({ "m*": { rpd: 1, tpd: 50 } }));
    const scopes = h.admit("m1");
    expect(scopes.map((s) => s.label)).toEqual(["model m1"]);
    expect(h.values.get("requests|2026-03-10|*|m1")).toBe(1);
    h.finish(scopes, 50);
    expect(h.values.get("tokens|2026-03-10|*|m1")).toBe(50);
    expect(h.refusal("m1").code).toBe("rpd_limit_reached");
  });

  test("checks run account, account model, system model — the first limit reached answers", () => {
    const acct = account({ rpm: 1, modelLimits: JSON.stringify({ m1: { rpm: 1 } }) });
    const h = harness(acct, system({ m1: { rpm: 1 } }));
    const scopes = h.admit("m1");
    expect(scopes.map((s) => s.label)).toEqual(["account", "account model m1", "model m1"]);
    expect(h.refusal("m1").message).toContain("(account)");

    const modelsOnly = harness(account({ modelLimits: JSON.stringify({ m1: { rpm: 1 } }) }), system({ m1: { rpm: 1 } }));
    modelsOnly.admit("m1");
    expect(modelsOnly.refusal("m1").message).toContain("(account model m1)");
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

describe("quotas (day and month totals over the counters)", () => {
  function withStore(run: (quotas: Quotas, store: ReturnType<typeof openStore>) => void) {
    const dir = mkdtempSync(join(tmpdir(), "quotas-"));
    const store = openStore(join(dir, "router.db"));
    try {
      run(createQuotas({ store, counters: createMemoryCounters() }), store);
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  test("a day and its month keep separate totals (in-memory amounts survive switching between them)", () => {
    withStore((quotas) => {
      quotas.add("cost", "2026-03-10", 100, 7);
      quotas.add("cost", "2026-03", 100, 7);
      quotas.add("cost", "2026-03-10", 50, 7);
      quotas.add("cost", "2026-03", 50, 7);
      expect(quotas.get("cost", "2026-03-10", 7)).toBe(150);
      expect(quotas.get("cost", "2026-03", 7)).toBe(150);
      expect(quotas.get("cost", "2026-03-10", 7)).toBe(150);
      // Another account, another measure: separate.
      expect(quotas.get("cost", "2026-03-10", 8)).toBe(0);
      expect(quotas.get("requests", "2026-03-10", 7)).toBe(0);
    });
  });

  test("the first touch of a period seeds it from the daily rollups (a restart keeps quotas)", () => {
    withStore((quotas, store) => {
      const row = { accountId: 7, model: "m1", requests: 2, promptTokens: 10, completionTokens: 5, reasoningTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
      store.db.insert(usageDaily).values({ ...row, day: "2026-03-09", costNanos: 1000 }).run();
      store.db.insert(usageDaily).values({ ...row, day: "2026-03-10", costNanos: 300 }).run();
      store.db.insert(usageDaily).values({ ...row, day: "2026-02-28", costNanos: 99 }).run();
      expect(quotas.get("cost", "2026-03-10", 7)).toBe(300);
      expect(quotas.get("cost", "2026-03", 7)).toBe(1300);
      expect(quotas.get("requests", "2026-03-10", 7)).toBe(2);
      expect(quotas.get("tokens", "2026-03-10", 7, "m1")).toBe(15);
      expect(quotas.get("tokens", "2026-03-10", undefined, "m1")).toBe(15);
      quotas.add("cost", "2026-03", 5, 7);
      expect(quotas.get("cost", "2026-03", 7)).toBe(1305);
      // Charged spend (SoftLimit) seeds the same way and is kept apart from reservations.
      expect(quotas.get("spent", "2026-03", 7)).toBe(1300);
    });
  });

  test("a call settling after midnight does not pull the slot back to the past day", () => {
    withStore((quotas) => {
      quotas.add("cost", "2026-03-10", 500, 7); // reserved before midnight
      quotas.add("cost", "2026-03-11", 200, 7); // reserved after midnight
      quotas.add("cost", "2026-03-10", -100, 7); // the first call settles after midnight
      expect(quotas.get("cost", "2026-03-11", 7)).toBe(200);
    });
  });
});

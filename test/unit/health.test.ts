import { describe, expect, test } from "bun:test";
import { nextStep, sameKeyBackoffMs, type AttemptFailure } from "../../src/routing/failover.ts";
import {
  applyOutcome,
  availability,
  BASE_COOLDOWN_MS,
  cooldownMs,
  FAILURES_BEFORE_SLEEP,
  MAX_COOLDOWN_MS,
} from "../../src/routing/health.ts";
import { poolKey } from "../helpers/pool-key.ts";

const NOW = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

const retryable = { kind: "retryable" } as const;

describe("cooldownMs", () => {
  test("starts at one minute and doubles with each consecutive sleep, capped at one hour", () => {
    expect(BASE_COOLDOWN_MS).toBe(MINUTE);
    expect(MAX_COOLDOWN_MS).toBe(60 * MINUTE);
    expect(cooldownMs(1)).toBe(MINUTE);
    expect(cooldownMs(2)).toBe(2 * MINUTE);
    expect(cooldownMs(3)).toBe(4 * MINUTE);
    expect(cooldownMs(6)).toBe(32 * MINUTE);
    expect(cooldownMs(7)).toBe(60 * MINUTE);
    expect(cooldownMs(40)).toBe(60 * MINUTE);
  });

  test("a count of zero (never slept) is treated as the first sleep", () => {
    expect(cooldownMs(0)).toBe(MINUTE);
  });
});

describe("applyOutcome", () => {
  test(`${FAILURES_BEFORE_SLEEP} retryable failures in a row sleep the key for the first cool-down`, () => {
    const key = poolKey();
    expect(applyOutcome(key, retryable, NOW)).toBeUndefined();
    expect(applyOutcome(key, retryable, NOW)).toBeUndefined();
    expect(key.sleeping).toBe(false);
    const change = applyOutcome(key, retryable, NOW);
    expect(change).toEqual({ sleeping: true, reason: "errors", until: NOW + MINUTE, count: 1 });
    expect(key).toMatchObject({ sleeping: true, sleepReason: "errors", sleepUntil: NOW + MINUTE, sleepCount: 1, failures: 0 });
  });

  test("a success in between resets the run of failures", () => {
    const key = poolKey();
    applyOutcome(key, retryable, NOW);
    applyOutcome(key, retryable, NOW);
    expect(applyOutcome(key, { kind: "success" }, NOW)).toBeUndefined();
    expect(key.failures).toBe(0);
    applyOutcome(key, retryable, NOW);
    expect(applyOutcome(key, retryable, NOW)).toBeUndefined();
    expect(key.sleeping).toBe(false);
  });

  test("a Retry-After longer than the cool-down extends the sleep; a shorter one does not shorten it", () => {
    const long = poolKey();
    applyOutcome(long, retryable, NOW);
    applyOutcome(long, retryable, NOW);
    expect(applyOutcome(long, { kind: "retryable", retryAfterMs: 10 * MINUTE }, NOW)?.until).toBe(NOW + 10 * MINUTE);

    const short = poolKey();
    applyOutcome(short, retryable, NOW);
    applyOutcome(short, retryable, NOW);
    expect(applyOutcome(short, { kind: "retryable", retryAfterMs: 5_000 }, NOW)?.until).toBe(NOW + MINUTE);
  });

  test("a bad credential sleeps the key until woken, keeping its cool-down count", () => {
    const key = poolKey({ sleepCount: 2, failures: 1 });
    expect(applyOutcome(key, { kind: "credential" }, NOW)).toEqual({ sleeping: true, reason: "auth", until: null, count: 2 });
    expect(key).toMatchObject({ sleeping: true, sleepReason: "auth", sleepUntil: null, failures: 0 });
    expect(availability(key, NOW + 365 * 24 * 60 * MINUTE)).toBe("unavailable");
  });

  test("NoSleep keys never sleep automatically", () => {
    const key = poolKey({ noSleep: true });
    for (let i = 0; i < 10; i++) expect(applyOutcome(key, { kind: "retryable", retryAfterMs: MINUTE }, NOW)).toBeUndefined();
    expect(applyOutcome(key, { kind: "credential" }, NOW)).toBeUndefined();
    expect(key.sleeping).toBe(false);
    expect(availability(key, NOW)).toBe("ready");
  });

  test("a failed probe sleeps the key again at once, for twice as long", () => {
    const key = poolKey({ sleeping: true, sleepReason: "errors", sleepUntil: NOW, sleepCount: 1, probing: true });
    const change = applyOutcome(key, retryable, NOW);
    expect(change).toEqual({ sleeping: true, reason: "errors", until: NOW + 2 * MINUTE, count: 2 });
    expect(key.probing).toBe(false);
    key.probing = true;
    expect(applyOutcome(key, retryable, NOW + 2 * MINUTE)?.until).toBe(NOW + 2 * MINUTE + 4 * MINUTE);
  });

  test("a successful probe wakes the key and resets its cool-down", () => {
    const key = poolKey({ sleeping: true, sleepReason: "errors", sleepUntil: NOW, sleepCount: 3, probing: true });
    expect(applyOutcome(key, { kind: "success" }, NOW)).toEqual({ sleeping: false, reason: null, until: null, count: 0 });
    expect(key).toMatchObject({ sleeping: false, sleepReason: null, sleepUntil: null, sleepCount: 0, probing: false });
    expect(availability(key, NOW)).toBe("ready");
  });

  test("a success does not wake a key that sleeps manually or for its credential", () => {
    for (const reason of ["manual", "auth"] as const) {
      const key = poolKey({ sleeping: true, sleepReason: reason });
      expect(applyOutcome(key, { kind: "success" }, NOW)).toBeUndefined();
      expect(key.sleeping).toBe(true);
      expect(key.sleepReason).toBe(reason);
    }
  });
});

describe("availability", () => {
  test("a disabled key is never available, even awake", () => {
    expect(availability(poolKey({ status: false }), NOW)).toBe("unavailable");
  });

  test("an awake key is ready", () => {
    expect(availability(poolKey(), NOW)).toBe("ready");
  });

  test("an automatic sleep becomes a single probe once its cool-down has passed", () => {
    const key = poolKey({ sleeping: true, sleepReason: "errors", sleepUntil: NOW + MINUTE, sleepCount: 1 });
    expect(availability(key, NOW)).toBe("unavailable");
    expect(availability(key, NOW + MINUTE - 1)).toBe("unavailable");
    expect(availability(key, NOW + MINUTE)).toBe("probe");
    key.probing = true;
    expect(availability(key, NOW + MINUTE)).toBe("unavailable");
  });

  test("manual and credential sleeps last until woken, whatever the clock says", () => {
    for (const reason of ["manual", "auth"] as const) {
      expect(availability(poolKey({ sleeping: true, sleepReason: reason }), NOW + 10 ** 12)).toBe("unavailable");
      // Even a stale wake time from an earlier automatic sleep does not end them.
      expect(availability(poolKey({ sleeping: true, sleepReason: reason, sleepUntil: NOW }), NOW + 10 ** 12)).toBe("unavailable");
    }
  });
});

describe("failover.nextStep (no replay of a non-idempotent call)", () => {
  const refused: AttemptFailure = { kind: "refused" };
  const mayHaveArrived: AttemptFailure[] = [
    { kind: "network" },
    { kind: "timeout" },
    { kind: "status", status: 500 },
    { kind: "status", status: 503 },
    { kind: "status", status: 429 },
  ];

  test("a refused connection is retried even for a non-idempotent call: the upstream never saw it", () => {
    expect(nextStep(refused, false, 1, 3)).toBe("retry");
    expect(nextStep(refused, true, 1, 3)).toBe("retry");
  });

  test("network failures, timeouts and 5xx/429 are retried for idempotent calls only", () => {
    for (const failure of mayHaveArrived) {
      expect(nextStep(failure, true, 1, 3)).toBe("retry");
      expect(nextStep(failure, false, 1, 3)).toBe("give_up");
    }
  });

  test("a rejected upstream credential is retried on another key", () => {
    expect(nextStep({ kind: "status", status: 401 }, true, 1, 3)).toBe("retry");
    expect(nextStep({ kind: "status", status: 403 }, true, 2, 3)).toBe("retry");
  });

  test("the last allowed attempt always gives up", () => {
    for (const failure of [refused, ...mayHaveArrived, { kind: "status", status: 401 } as const]) {
      expect(nextStep(failure, true, 3, 3)).toBe("give_up");
      expect(nextStep(failure, true, 1, 1)).toBe("give_up");
    }
  });
});

describe("failover.sameKeyBackoffMs (spec 7, rule 1: exponential backoff and jitter)", () => {
  test("doubles from 100 ms up to 1.6 s, and the random half moves each wait", () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => sameKeyBackoffMs(n, () => 0.999999))).toEqual([100, 200, 400, 800, 1600, 1600]);
    expect([0, 1, 2, 3, 4, 5].map((n) => sameKeyBackoffMs(n, () => 0))).toEqual([50, 100, 200, 400, 800, 800]);
  });
});

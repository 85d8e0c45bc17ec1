import { applyVerdict, availability as availabilityOf } from "../state/key-health.ts";
import type { KeyHealth, KeySleep, KeyVerdict } from "../state/state.ts";
import type { PoolKey } from "./pool-key.ts";

export { BASE_COOLDOWN_MS, cooldownMs, FAILURES_BEFORE_SLEEP, MAX_COOLDOWN_MS } from "../state/key-health.ts";

/** What one upstream attempt said about the key that served it. */
export type KeyOutcome = KeyVerdict;
export type SleepChange = KeySleep;

/** The health a pool key last saw, as the State's rules read it. */
export function healthOf(key: PoolKey): KeyHealth {
  return {
    sleeping: key.sleeping,
    reason: key.sleepReason,
    until: key.sleepUntil,
    count: key.sleepCount,
    inFlight: key.inFlight,
    failures: key.failures,
    probing: key.probing,
  };
}

/** Copies a health into the pool key's view of it. */
export function mirrorHealth(key: PoolKey, health: KeyHealth): void {
  key.sleeping = health.sleeping;
  key.sleepReason = health.reason;
  key.sleepUntil = health.until;
  key.sleepCount = health.count;
  key.inFlight = health.inFlight;
  key.failures = health.failures;
  key.probing = health.probing;
}

/**
 * Applies an outcome to a key's own view of its health by the State's rules
 * (`state/key-health.ts`) and returns the new sleep when it changed.
 */
export function applyOutcome(key: PoolKey, outcome: KeyOutcome, now: number): SleepChange | undefined {
  const health = healthOf(key);
  const change = applyVerdict(health, key.noSleep, outcome, now);
  mirrorHealth(key, health);
  return change;
}

/** A key can take traffic: enabled, and awake (or due for its single probe after a cool-down). */
export function availability(key: PoolKey, now: number): "ready" | "probe" | "unavailable" {
  return availabilityOf(key.status, healthOf(key), now);
}

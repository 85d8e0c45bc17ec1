import type { KeyHealth, KeySleep, KeyVerdict } from "./state.ts";

/**
 * The health rules of provider keys, applied by every State implementation to the
 * health it holds (a shared one applies them atomically where the health lives).
 */

/** Retryable failures in a row (429, 5xx, network, timeout) that put a key to sleep. */
export const FAILURES_BEFORE_SLEEP = 3;
/** First automatic cool-down; it doubles with every sleep in a row, up to the maximum. */
export const BASE_COOLDOWN_MS = 60_000;
export const MAX_COOLDOWN_MS = 3_600_000;

export function cooldownMs(sleepCount: number): number {
  return Math.min(BASE_COOLDOWN_MS * 2 ** Math.max(0, sleepCount - 1), MAX_COOLDOWN_MS);
}

/**
 * Applies a verdict to a key's health (changing it) and returns the new sleep when it
 * changed (to be stored), else undefined. A success wakes a key that was probing
 * after a cool-down; a bad credential sleeps the key until an owner wakes it; repeated
 * retryable failures (or a failed probe) sleep it for an exponential cool-down that
 * honours Retry-After. NoSleep keys never sleep automatically.
 */
export function applyVerdict(health: KeyHealth, noSleep: boolean, verdict: KeyVerdict, now: number): KeySleep | undefined {
  const wasProbing = health.probing;
  health.probing = false;
  if (verdict.kind === "success") {
    health.failures = 0;
    if (!health.sleeping && health.count === 0) return undefined;
    if (health.sleeping && health.reason !== "errors") return undefined;
    return setSleep(health, { sleeping: false, reason: null, until: null, count: 0 });
  }
  if (noSleep) return undefined;
  if (verdict.kind === "credential") {
    health.failures = 0;
    return setSleep(health, { sleeping: true, reason: "auth", until: null, count: health.count });
  }
  health.failures++;
  if (!wasProbing && health.failures < FAILURES_BEFORE_SLEEP) return undefined;
  health.failures = 0;
  const count = health.count + 1;
  const until = now + Math.max(cooldownMs(count), verdict.retryAfterMs ?? 0);
  return setSleep(health, { sleeping: true, reason: "errors", until, count });
}

/** Sets a key's sleep on its health and returns it. */
export function setSleep(health: KeyHealth, sleep: KeySleep): KeySleep {
  health.sleeping = sleep.sleeping;
  health.reason = sleep.reason;
  health.until = sleep.until;
  health.count = sleep.count;
  return { ...sleep };
}

/** A key can take traffic: enabled, and awake (or due for its single probe after a cool-down). */
export function availability(enabled: boolean, health: KeyHealth, now: number): "ready" | "probe" | "unavailable" {
  if (!enabled) return "unavailable";
  if (!health.sleeping) return "ready";
  if (health.reason === "errors" && health.until !== null && health.until <= now && !health.probing) return "probe";
  return "unavailable";
}

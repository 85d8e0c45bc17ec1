import type { PoolKey, SleepReason } from "./pool-key.ts";

/** Retryable failures in a row (429, 5xx, network, timeout) that put a key to sleep. */
export const FAILURES_BEFORE_SLEEP = 3;
/** First automatic cool-down; it doubles with every sleep in a row, up to the maximum. */
export const BASE_COOLDOWN_MS = 60_000;
export const MAX_COOLDOWN_MS = 3_600_000;

/** What one upstream attempt said about the key that served it. */
export type KeyOutcome =
  | { kind: "success" }
  /** 401/403 from the upstream: the credential itself is bad. */
  | { kind: "credential" }
  /** 429, 5xx, network error or timeout: maybe temporary. */
  | { kind: "retryable"; retryAfterMs?: number };

export interface SleepChange {
  sleeping: boolean;
  reason: SleepReason | null;
  until: number | null;
  count: number;
}

export function cooldownMs(sleepCount: number): number {
  return Math.min(BASE_COOLDOWN_MS * 2 ** Math.max(0, sleepCount - 1), MAX_COOLDOWN_MS);
}

/**
 * Applies an outcome to a key's health and returns the new sleep state when it
 * changed (to be persisted), else undefined. Rules: a success wakes a key that was
 * probing after a cool-down; a bad credential sleeps the key until an owner wakes
 * it; repeated retryable failures (or a failed probe) sleep it for an exponential
 * cool-down that honours Retry-After. NoSleep keys never sleep automatically.
 */
export function applyOutcome(key: PoolKey, outcome: KeyOutcome, now: number): SleepChange | undefined {
  const wasProbing = key.probing;
  key.probing = false;
  if (outcome.kind === "success") {
    key.failures = 0;
    if (!key.sleeping && key.sleepCount === 0) return undefined;
    if (key.sleeping && key.sleepReason !== "errors") return undefined;
    return set(key, { sleeping: false, reason: null, until: null, count: 0 });
  }
  if (key.noSleep) return undefined;
  if (outcome.kind === "credential") {
    key.failures = 0;
    return set(key, { sleeping: true, reason: "auth", until: null, count: key.sleepCount });
  }
  key.failures++;
  if (!wasProbing && key.failures < FAILURES_BEFORE_SLEEP) return undefined;
  key.failures = 0;
  const count = key.sleepCount + 1;
  const until = now + Math.max(cooldownMs(count), outcome.retryAfterMs ?? 0);
  return set(key, { sleeping: true, reason: "errors", until, count });
}

function set(key: PoolKey, change: SleepChange): SleepChange {
  key.sleeping = change.sleeping;
  key.sleepReason = change.reason;
  key.sleepUntil = change.until;
  key.sleepCount = change.count;
  return change;
}

/** A key can take traffic: enabled, and awake (or due for its single probe after a cool-down). */
export function availability(key: PoolKey, now: number): "ready" | "probe" | "unavailable" {
  if (!key.status) return "unavailable";
  if (!key.sleeping) return "ready";
  if (key.sleepReason === "errors" && key.sleepUntil !== null && key.sleepUntil <= now && !key.probing) return "probe";
  return "unavailable";
}

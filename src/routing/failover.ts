/**
 * What went wrong with one upstream attempt, classified once where the call
 * happened, and what to do about it. Pure: the relay asks, this answers.
 */
export type AttemptFailure =
  /** The connection was refused before anything was sent: always safe to retry. */
  | { kind: "refused" }
  /** Network failure or timeout after the request may have reached the upstream. */
  | { kind: "network" }
  | { kind: "timeout" }
  /**
   * The upstream answered with this status (3xx, 429 or 5xx, or 401/403 for a bad
   * credential); `deadKey` when its body said the key's account cannot serve at all
   * (out of quota or credit, a key not valid: `provider-errors.ts`), whatever the status.
   */
  | { kind: "status"; status: number; deadKey?: true }
  /** The key's URL reaches an address the upstream policy refuses: nothing was sent. */
  | { kind: "blocked"; reason: string }
  /** The upstream said 2xx but sent no answer: an error object, cut-short or unreadable JSON, a stream whose first event is an error. */
  | { kind: "non_answer" };

export type Verdict = "retry" | "give_up";

/** Statuses that blame the upstream (or our key), not the client's request. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * A redirect is never followed (it would take the key's secret to another host): it is
 * a failure of the key's upstream, retried elsewhere like a 5xx.
 */
export function isRedirectStatus(status: number): boolean {
  return status >= 300 && status < 400;
}

export function isCredentialStatus(status: number): boolean {
  return status === 401 || status === 403;
}

/** The key's own fault (a refused credential or a dead account): it sleeps until woken, and another key is tried. */
export function isKeyFault(failure: AttemptFailure): boolean {
  return failure.kind === "status" && (failure.deadKey === true || isCredentialStatus(failure.status));
}

/**
 * Whether a failed attempt may be tried again on the same key when no other key can
 * take the call: a refused connection (nothing was sent) on any endpoint, a connection
 * lost after sending only on endpoints that are replayed anyway.
 */
export function sameKeyMayRetry(failure: AttemptFailure, idempotent: boolean): boolean {
  return failure.kind === "refused" || (failure.kind === "network" && idempotent);
}

/**
 * Wait before trying the same key again: 100 ms, doubling, at most 1.6 s, with "equal
 * jitter" (half of it fixed, half random), so the calls that found one restarting
 * upstream do not all come back at the same instant (spec 7, rule 1: exponential
 * backoff and jitter).
 */
export function sameKeyBackoffMs(retries: number, random: () => number = Math.random): number {
  const full = Math.min(1600, 100 * 2 ** retries);
  return Math.round(full / 2 + (full / 2) * random());
}

/**
 * Whether another attempt may follow. Non-idempotent calls (image and video
 * generation) are replayed only when the upstream certainly never received them.
 */
export function nextStep(failure: AttemptFailure, idempotent: boolean, attempt: number, maxAttempts: number): Verdict {
  if (attempt >= maxAttempts) return "give_up";
  if (failure.kind === "refused" || failure.kind === "blocked") return "retry";
  if (isKeyFault(failure)) return "retry";
  return idempotent ? "retry" : "give_up";
}

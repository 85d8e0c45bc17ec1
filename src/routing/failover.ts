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
  /** The upstream answered with this status (3xx, 429 or 5xx, or 401/403 for a bad credential). */
  | { kind: "status"; status: number };

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

/**
 * Whether another attempt may follow. Non-idempotent calls (image and video
 * generation) are replayed only when the upstream certainly never received them.
 */
export function nextStep(failure: AttemptFailure, idempotent: boolean, attempt: number, maxAttempts: number): Verdict {
  if (attempt >= maxAttempts) return "give_up";
  if (failure.kind === "refused") return "retry";
  if (failure.kind === "status" && isCredentialStatus(failure.status)) return "retry";
  return idempotent ? "retry" : "give_up";
}

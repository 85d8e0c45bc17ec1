/**
 * What the attempts say when they end without an answer, and their small waits: the
 * errors a client gets in its envelope (no key, rate limited, timed out, failed), an
 * upstream's error translated into the client's format, and a back-off that ends early
 * when the client leaves.
 */
import { HttpError, retryAfterSeconds } from "../core/errors.ts";
import type { Translator } from "../formats/translate/translator.ts";
import { isKeyFault, type AttemptFailure } from "../routing/failover.ts";

/** Waits `ms`, or less when the client goes away meanwhile. */
export function waitUnlessClientLeaves(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}

export function keyGone(): HttpError {
  return new HttpError("unavailable", "The provider key that holds this object was deleted or disabled; the object cannot be reached", {
    code: "object_key_unavailable",
  });
}

/**
 * The error of a call whose attempts all failed (or found no key), from the last failure;
 * `wakeMs`: when the call's Levels will have a key again by themselves (`keyWakeMs`).
 */
export function finalError(model: string | undefined, last: { failure: AttemptFailure; retryAfter?: number } | undefined, wakeMs?: number): HttpError {
  if (!last) {
    // The SDKs retry a 503: told when a key wakes (`keyWakeMs`), or not to when none will by itself.
    if (wakeMs === undefined) {
      return new HttpError("unavailable", `No upstream key is available for model ${model ?? "(none)"}`, { code: "no_available_key", headers: { "x-should-retry": "false" } });
    }
    return new HttpError("unavailable", `No upstream key is available for model ${model ?? "(none)"}; try again later`, {
      code: "no_available_key",
      headers: { "retry-after": retryAfterSeconds(wakeMs) },
    });
  }
  if (isKeyFault(last.failure)) {
    // Not the client's fault, nor one waiting cures on this key: said so, in the family's 502.
    return new HttpError("upstream", "The upstream refused the provider key (revoked, not permitted, or out of quota or credit) and no other key could take the call", {
      code: "upstream_error",
    });
  }
  if (last.failure.kind === "status" && last.failure.status === 429) {
    // The upstream's wait, unless the 429s put the keys to sleep for longer (a retry
    // sooner would find no key): then until the soonest wakes.
    return new HttpError("rate_limit", "The upstream is rate limiting; retry later", {
      code: "upstream_rate_limited",
      headers: { "retry-after": retryAfterSeconds(Math.max(last.retryAfter ?? 1000, wakeMs ?? 0)) },
    });
  }
  if (last.failure.kind === "timeout") {
    // 502, not 504: spec 7 answers an upstream that is temporarily unavailable with 502 or
    // 503, the statuses its clients retry; a timeout is the most transient case of it.
    return new HttpError("upstream", "The upstream did not answer in time; try again later", { code: "upstream_timeout" });
  }
  if (last.failure.kind === "non_answer") {
    return new HttpError("upstream", "The upstream answered without an answer (an error object or an unreadable body); try again later", { code: "upstream_error" });
  }
  return new HttpError("upstream", "The upstream failed; try again later", { code: "upstream_error" });
}

/** An upstream's error answer in the client's envelope, with the status the client's format uses for it. */
export function translatedError(translator: Translator, status: number, text: string): Response {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = { error: { message: text } };
  }
  const client = translator.error(status, body);
  return new Response(JSON.stringify(client.body), { status: client.status, headers: { "content-type": "application/json" } });
}

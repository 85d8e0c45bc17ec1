import { redact, redactSecret } from "../core/redact.ts";
import { MAX_MESSAGE } from "../metering/request-log.ts";
import { bodyRetryAfterMs, isDeadKeyAnswer } from "../routing/provider-errors.ts";
import type { AttemptFailure } from "../routing/failover.ts";
import { AddressRefusedError } from "../upstreams/address-policy.ts";
import { CredentialRefusedError } from "../upstreams/types.ts";

/** What of a failed attempt's error body is read: enough for its message, never a wait on a slow body. */
const READ_BYTES = 4096;
const READ_MS = 1000;

/**
 * The start of an upstream's error body as sent (up to 4 KB, read for at most a second),
 * for judging what it says (a spent quota, a wait); never logged as it is.
 */
export async function errorText(response: Response): Promise<string | undefined> {
  const reader = response.body?.getReader();
  if (!reader) return undefined;
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), READ_MS);
  });
  try {
    while (size < READ_BYTES) {
      const next = await Promise.race([reader.read(), deadline]);
      if (!next || next.done) break;
      chunks.push(next.value);
      size += next.value.byteLength;
    }
  } catch {
    // A body that breaks off leaves what was read.
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => {});
  }
  const text = Buffer.concat(chunks).subarray(0, READ_BYTES).toString("utf8").trim();
  return text || undefined;
}

/**
 * An error body's words for the request log, without the key's secret in any spelling
 * and without anything secret-shaped; cut to 500 characters after redaction, so a secret
 * the 4 KB read splits in two lies far beyond what is kept.
 */
export const messageFrom = (text: string, secret: string | readonly string[]): string => redact(redactSecret(text, secret)).slice(0, MAX_MESSAGE);

/** The start of an upstream's error body for the request log (see `errorText`, `messageFrom`); the rest is dropped. */
export async function errorMessage(response: Response, secret: string | readonly string[]): Promise<string | undefined> {
  const text = await errorText(response);
  return text === undefined ? undefined : messageFrom(text, secret);
}

/** A connection error's message for the request log (addresses stay; anything secret-shaped goes). */
export const failureMessage = (error: unknown): string => redact(String((error as Error)?.message ?? error)).slice(0, MAX_MESSAGE);

/**
 * What a 429's body says: its words for the log, whether the key's quota is spent (not a
 * rate limit: OpenAI's `insufficient_quota`), and the wait Gemini's RetryInfo gives.
 */
export async function rateLimitFacts(response: Response, secret: string | readonly string[]): Promise<{ message?: string; deadKey: boolean; retryAfterMs?: number }> {
  const text = await errorText(response);
  if (text === undefined) return { deadKey: false };
  return { message: messageFrom(text, secret), deadKey: isDeadKeyAnswer(429, text), retryAfterMs: bodyRetryAfterMs(text) };
}

/** What an attempt that threw (before any answer) failed of; `timedOut` when the attempt's own first-byte timer cut it. */
export function thrownFailure(error: unknown, timedOut: boolean): AttemptFailure {
  if (error instanceof AddressRefusedError) return { kind: "blocked", reason: error.reason };
  // The key's credential was refused before the call went out: its fault, as a 401.
  if (error instanceof CredentialRefusedError) return { kind: "status", status: error.status, deadKey: true };
  if (timedOut) return { kind: "timeout" };
  const code = (error as { code?: string }).code;
  return code === "ConnectionRefused" || code === "ECONNREFUSED" ? { kind: "refused" } : { kind: "network" };
}

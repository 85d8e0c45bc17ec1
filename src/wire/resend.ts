/**
 * How the admin CLI and the console send a management write (docs/api.md, "Idempotent
 * writes"): under an Idempotency-Key, and again under the same key when its answer is
 * lost (a dropped connection, a timeout), when a proxy in front answers 502 for a
 * connection it lost, when the router was briefly unable to run it (503: a server-side
 * failure gives the key up), or while the key is still held by the first send.
 *
 * Spec 7, rule 1: clients retry only 429, 502, 503 and network failures, a finite number
 * of times, with exponential backoff and jitter. A management 429 (test mail, sign-up)
 * asks for minutes or an hour, so it is reported rather than waited out here.
 */

/** The methods that write, and so carry an Idempotency-Key: what the router holds to the key and the clients send one with. */
const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
export const isWrite = (method: string): boolean => WRITE_METHODS.has(method.toUpperCase());

/** Answers after which a write is sent again: a proxy's lost connection, a router briefly unavailable (spec 7: 502, 503; not 504). */
const RESEND_STATUSES = new Set([502, 503]);

/** Sends of one write at most: the first and two more. */
const WRITE_SENDS = 3;
/** The wait before the second send, doubled before each later one (ms), before jitter. */
const RESEND_BASE_MS = 1000;

/**
 * The wait before send `attempt + 1`: exponential, with "equal jitter" (half of it
 * fixed, half random), so clients that lost their answers together do not all come
 * back at the same instant. 0.5–1 s, then 1–2 s.
 */
export function resendWaitMs(attempt: number, random: () => number = Math.random): number {
  const full = RESEND_BASE_MS * 2 ** (attempt - 1);
  return Math.round(full / 2 + (full / 2) * random());
}

/** The last answer and its text, or what lost every send. */
export type Sent = { response: Response; text: string } | { lost: unknown };

/**
 * Runs `send` (which makes the request, the same headers each time) once for a read; for a
 * write, up to three times while its answer is lost or the server says its key is still
 * in use.
 */
export async function sendWithResends(
  write: boolean,
  send: () => Promise<Response>,
  wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  random: () => number = Math.random,
): Promise<Sent> {
  for (let attempt = 1; ; attempt++) {
    let sent: Sent;
    try {
      const response = await send();
      sent = { response, text: await response.text() };
    } catch (error) {
      sent = { lost: error };
    }
    const again =
      write &&
      attempt < WRITE_SENDS &&
      ("lost" in sent || RESEND_STATUSES.has(sent.response.status) || (sent.response.status === 409 && sent.text.includes('"idempotency_key_in_use"')));
    if (!again) return sent;
    await wait(resendWaitMs(attempt, random));
  }
}

/** A new Idempotency-Key: 128 random bits in hex (crypto.randomUUID needs a secure context, which a console on plain HTTP is not). */
export function newIdempotencyKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

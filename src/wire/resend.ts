/**
 * How the admin CLI and the console send a management write (docs/api.md, "Idempotent
 * writes"): under an Idempotency-Key, and again under the same key when its answer is
 * lost (a dropped connection, a timeout, a proxy in front answering 502 or 504 for a
 * connection it lost), when the router was briefly unable to run it (503: a server-side
 * failure gives the key up), or while the key is still held by the first send.
 */

/** The methods that write, and so carry an Idempotency-Key: what the router holds to the key and the clients send one with. */
const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
export const isWrite = (method: string): boolean => WRITE_METHODS.has(method.toUpperCase());

/** Answers after which a write is sent again: a proxy's lost connection or timeout, a router briefly unavailable. */
const RESEND_STATUSES = new Set([502, 503, 504]);

/** Sends of one write at most: the first and two more. */
const WRITE_SENDS = 3;
/** Waits before the second and the third send (ms). */
const RESEND_WAITS_MS = [500, 1500];

/** The last answer and its text, or what lost every send. */
export type Sent = { response: Response; text: string } | { lost: unknown };

/**
 * Runs `send` (which makes the request, the same headers each time) once for a read; for a
 * write, up to three times while its answer is lost or the server says its key is still
 * in use.
 */
export async function sendWithResends(write: boolean, send: () => Promise<Response>, wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))): Promise<Sent> {
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
    await wait(RESEND_WAITS_MS[attempt - 1] ?? RESEND_WAITS_MS[RESEND_WAITS_MS.length - 1]!);
  }
}

/** A new Idempotency-Key: 128 random bits in hex (crypto.randomUUID needs a secure context, which a console on plain HTTP is not). */
export function newIdempotencyKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

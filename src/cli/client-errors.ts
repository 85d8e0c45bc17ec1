/**
 * What the admin CLI says when a request did not succeed (client.ts): the server's own
 * message from its error envelope, where a redirect points, and, for an answer that never
 * came, whether a write may have been made.
 */

/** The message of an error envelope (OpenAI, Anthropic or Gemini shape), else a short description of the answer. */
export function refusalMessage(status: number, statusText: string, text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown };
    const error = body.error;
    if (error && typeof error === "object" && typeof (error as { message?: unknown }).message === "string") {
      return (error as { message: string }).message;
    }
    if (typeof error === "string") return error;
    if (typeof body.message === "string") return body.message;
  } catch {
    // not JSON: fall through
  }
  const snippet = text.replace(/\s+/g, " ").trim().slice(0, 200);
  return `HTTP ${status} ${statusText}${snippet ? `: ${snippet}` : ""}`.trim();
}

/**
 * A redirect is not followed (the key would go wherever it points): it says where the
 * server is, e.g. http:// moved to https://, so the user can point --url there.
 */
export function redirectMessage(baseUrl: string, response: Response): string | undefined {
  const location = response.headers.get("location");
  if (response.status < 300 || response.status > 399 || location === null) return undefined;
  let target: URL;
  try {
    target = new URL(location, baseUrl);
  } catch {
    return undefined;
  }
  return `${baseUrl} redirects to ${target.origin}: give that as --url (or ROUTER_URL); the key is not sent on a redirect`;
}

const isTimeout = (error: unknown) => error instanceof DOMException && (error.name === "TimeoutError" || error.name === "AbortError");

/** Failures before the request could reach the server: a write that met only these was not made. */
const NOT_SENT = new Set(["ECONNREFUSED", "ConnectionRefused", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "FailedToOpenSocket"]);
/** A certificate refused at the handshake (UNABLE_TO_VERIFY_LEAF_SIGNATURE, CERT_HAS_EXPIRED, …): nothing was sent either. */
const CERTIFICATE = /CERT|SELF_SIGNED|UNABLE_TO_(VERIFY|GET)|ERR_TLS/;

const codeOf = (error: unknown) => String((error as { code?: unknown }).code);
const notSent = (error: unknown) => NOT_SENT.has(codeOf(error)) || CERTIFICATE.test(codeOf(error));

function networkMessage(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown };
  const message = typeof e.message === "string" ? e.message : String(error);
  return typeof e.code === "string" && !message.includes(e.code) ? `${e.code}: ${message}` : message;
}

/**
 * Why a request got no answer. A write that may have reached the server has an unknown
 * outcome: said plainly, with the key that makes a repeat of the command run it at most once.
 */
export function lostMessage(baseUrl: string, seconds: number, errors: readonly unknown[], writeKey: string | undefined): string {
  const last = errors[errors.length - 1];
  const what = isTimeout(last) ? `no answer from the router at ${baseUrl} within ${seconds} s` : `cannot reach the router at ${baseUrl}: ${networkMessage(last)}`;
  const maybeMade = writeKey !== undefined && errors.some((error) => isTimeout(error) || !notSent(error));
  if (maybeMade) {
    return (
      `${what}: the change may or may not have been made. Check before repeating it, or repeat the same command with ` +
      `--idempotency-key ${writeKey}: it is then carried out at most once`
    );
  }
  if (isTimeout(last)) return `${what} (wait longer with --timeout SECONDS or ROUTER_TIMEOUT)`;
  // A router behind a private CA: the runtime trusts more than the public roots through this variable.
  if (CERTIFICATE.test(codeOf(last))) return `${what} (a private CA: trust it with NODE_EXTRA_CA_CERTS=ca.pem)`;
  return what;
}

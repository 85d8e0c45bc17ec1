/**
 * Header hygiene between client, router and upstream. Requests: hop-by-hop headers,
 * the client's credentials, its encoding wishes and proxy headers never travel on.
 * Responses: only headers that describe the body come back, never the upstream's
 * auth, cookies, rate-limit state of our provider key or internal ids; and since
 * fetch already decoded the body, no content-encoding or length.
 */
const DROP_REQUEST = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "content-length",
  "accept-encoding",
  "authorization",
  "x-api-key",
  "x-goog-api-key",
  "api-key",
  "cookie",
  "forwarded",
  "x-forwarded-for",
  "x-forwarded-host",
  "x-forwarded-proto",
  "x-real-ip",
  // The client's organisation/project belong to its own OpenAI account, not to our provider key.
  "openai-organization",
  "openai-project",
  // Google reads this as the project to bill and count quota against: with a Vertex service
  // account's token it would let a client spend on any project that account may use.
  "x-goog-user-project",
  // Google and other front ends honour these, turning the POST the router checked and
  // priced into another method (a GET or DELETE) on the provider's side.
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
  "x-request-id",
]);

export function forwardableRequestHeaders(incoming: Headers): Headers {
  const out = new Headers();
  incoming.forEach((value, name) => {
    if (!DROP_REQUEST.has(name) && !name.startsWith("cf-") && !name.startsWith("x-router-")) out.set(name, value);
  });
  return out;
}

const KEEP_RESPONSE = ["content-type", "cache-control", "content-disposition", "retry-after"];

export function clientResponseHeaders(upstream: Headers): Headers {
  const out = new Headers();
  for (const name of KEEP_RESPONSE) {
    const value = upstream.get(name);
    if (value !== null) out.set(name, value);
  }
  return out;
}

/**
 * How long a 429 asks to wait, in milliseconds, if it says and sanely: `Retry-After`
 * (seconds or HTTP date), else `retry-after-ms` (Azure), else the reset of the limit
 * OpenAI says is spent (`x-ratelimit-remaining-{requests,tokens}: 0` with its
 * `x-ratelimit-reset-*`, a duration like "6m0s" or "20ms"), since OpenAI's 429s often
 * carry no Retry-After. Gemini's wait is in its body (`routing/provider-errors.ts`).
 */
export function retryAfterMs(headers: Headers, now: number): number | undefined {
  const value = headers.get("retry-after");
  if (value) {
    if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value) * 1000;
    const at = Date.parse(value);
    if (!Number.isNaN(at)) return Math.max(0, at - now);
  }
  const ms = headers.get("retry-after-ms");
  if (ms && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.round(Number(ms));
  let wait: number | undefined;
  for (const limit of ["requests", "tokens"]) {
    if (headers.get(`x-ratelimit-remaining-${limit}`)?.trim() !== "0") continue;
    const reset = durationMs(headers.get(`x-ratelimit-reset-${limit}`) ?? "");
    if (reset !== undefined) wait = Math.max(wait ?? 0, reset);
  }
  return wait;
}

const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };

/** A Go-style duration ("1h2m3.5s", "6m0s", "20ms") in milliseconds; undefined when it is not one. */
function durationMs(text: string): number | undefined {
  const parts = [...text.trim().matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text.trim()) return undefined;
  return Math.round(parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]!]!, 0));
}

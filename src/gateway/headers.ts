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

/** Retry-After (seconds or HTTP date) in milliseconds, if present and sane. */
export function retryAfterMs(headers: Headers, now: number): number | undefined {
  const value = headers.get("retry-after");
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

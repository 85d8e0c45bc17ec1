/**
 * Cross-origin calls from browser apps (a chat front end that runs in the page, the
 * OpenAI or Anthropic SDK with their browser switches, @google/genai in a page): the
 * browser first asks with an OPTIONS preflight whether the router takes the call, then
 * lets the page read only the answers that carry `Access-Control-Allow-Origin`.
 *
 * Keys travel as headers, never as cookies, so nothing here ever allows credentials:
 * a page can only call with a key it was given. `--cors-origins` says which pages:
 * `*` (any, the default, as OpenAI's and OpenRouter's APIs do), `off`, or a list.
 *
 * Only the model API: the management paths (`/x-*`, `/dashboard/*`) and `/metrics` are
 * for the console (served from the router's own origin), the CLI and servers, and no
 * page of another origin has a reason to hold an owner's or a manager's key.
 */

/** Which pages may call: every one, none, or these exact origins (`https://chat.example.com`). */
export type CorsOrigins = "*" | "off" | readonly string[];

export const DEFAULT_CORS_ORIGINS: CorsOrigins = "*";

/** The router's own headers a page may read: request ids, waits and limits. */
const EXPOSED = [
  "x-request-id",
  "request-id",
  "retry-after",
  "x-should-retry",
  "x-ratelimit-limit-requests",
  "x-ratelimit-remaining-requests",
  "x-ratelimit-reset-requests",
  "x-ratelimit-limit-tokens",
  "x-ratelimit-remaining-tokens",
  "x-ratelimit-reset-tokens",
  "anthropic-ratelimit-requests-limit",
  "anthropic-ratelimit-requests-remaining",
  "anthropic-ratelimit-requests-reset",
  "anthropic-ratelimit-tokens-limit",
  "anthropic-ratelimit-tokens-remaining",
  "anthropic-ratelimit-tokens-reset",
  "x-router-count",
  "content-disposition",
].join(", ");

const METHODS = "GET, POST, PUT, PATCH, DELETE";
/** Chromium caps a preflight's life at two hours; longer values buy nothing. */
const MAX_AGE_SECONDS = "7200";
/** A header list as browsers send it: names and commas only (echoed back, so checked). */
const HEADER_LIST = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(?:\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$/;
const MAX_HEADER_LIST = 2048;

/**
 * Reads `--cors-origins`: `*`, `off`, or origins separated by commas, each
 * `scheme://host[:port]` with nothing after it (what a browser sends as `Origin`).
 * Throws a message naming the first value that is not one.
 */
export function parseCorsOrigins(value: string): CorsOrigins {
  const trimmed = value.trim();
  if (trimmed === "*") return "*";
  if (trimmed.toLowerCase() === "off") return "off";
  const origins: string[] = [];
  for (const part of trimmed.split(",")) {
    const item = part.trim();
    if (item === "") continue;
    const origin = URL.canParse(item) ? new URL(item) : undefined;
    // `new URL("https://a.example/").origin` drops the slash: compare to what was given.
    if (!origin || (origin.protocol !== "https:" && origin.protocol !== "http:") || origin.origin !== item.replace(/\/$/, "").toLowerCase()) {
      throw new Error(`"${item}" is not an origin: give scheme://host[:port] with no path, for example https://chat.example.com`);
    }
    origins.push(origin.origin);
  }
  if (origins.length === 0) throw new Error("give *, off, or a list of origins such as https://chat.example.com");
  return origins;
}

/** Whether a path is the model API's (CORS applies) rather than management's or the metrics' (never). */
export function corsApplies(path: string): boolean {
  return !path.startsWith("/x-") && !path.startsWith("/dashboard/") && path !== "/metrics";
}

export interface CorsPolicy {
  /** The answer to a browser's preflight, or undefined when this request is not one (it is routed as usual). */
  preflight(request: Request, path: string): Response | undefined;
  /** The answer with the headers that let the calling page read it (unchanged without an allowed `Origin`). */
  decorate(request: Request, path: string, response: Response): Response;
}

export interface CorsDeps {
  /** Sets one header, re-wrapping an answer whose headers are immutable. */
  setHeader(response: Response, name: string, value: string): Response;
  /** The 403 a preflight from another origin gets, in the envelope of the path's API family (read by a person with curl: a browser shows the page none). */
  refuse(request: Request): Response;
}

export function corsPolicy(origins: CorsOrigins, { setHeader, refuse }: CorsDeps): CorsPolicy {
  const allowed = origins === "*" || origins === "off" ? undefined : new Set(origins);
  /** The `Access-Control-Allow-Origin` value for this page, or undefined when it may not call. */
  const allowOrigin = (origin: string): string | undefined => (origins === "*" ? "*" : allowed?.has(origin) ? origin : undefined);
  return {
    preflight(request, path) {
      if (origins === "off" || request.method !== "OPTIONS" || !corsApplies(path)) return undefined;
      const origin = request.headers.get("origin");
      const method = request.headers.get("access-control-request-method");
      if (origin === null || method === null) return undefined;
      const allow = allowOrigin(origin);
      if (allow === undefined) return setHeader(refuse(request), "vary", "Origin");
      const headers = new Headers({
        "access-control-allow-origin": allow,
        "access-control-allow-methods": METHODS,
        "access-control-max-age": MAX_AGE_SECONDS,
        vary: "Origin, Access-Control-Request-Headers",
      });
      // The page's own headers (Authorization, x-api-key, the SDKs' x-stainless-*,
      // anthropic-version...) are echoed: a `*` here would not cover Authorization.
      const asked = request.headers.get("access-control-request-headers");
      if (asked !== null && asked.length <= MAX_HEADER_LIST && HEADER_LIST.test(asked.trim())) headers.set("access-control-allow-headers", asked.trim());
      return new Response(null, { status: 204, headers });
    },
    decorate(request, path, response) {
      if (origins === "off" || !corsApplies(path)) return response;
      const origin = request.headers.get("origin");
      if (origin === null) return response;
      const allow = allowOrigin(origin);
      if (allow === undefined) return response;
      let decorated = setHeader(response, "access-control-allow-origin", allow);
      decorated = setHeader(decorated, "access-control-expose-headers", EXPOSED);
      // A listed origin is echoed, so a shared cache must keep one answer per origin.
      if (allow === "*") return decorated;
      const vary = decorated.headers.get("vary");
      return setHeader(decorated, "vary", vary ? `${vary}, Origin` : "Origin");
    },
  };
}

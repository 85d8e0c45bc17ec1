/**
 * One typed error for the whole service. Domain code throws it with a kind and a
 * message fit for a client; the HTTP layer renders it once, in the envelope of the
 * caller's API family. Messages must never carry a secret.
 */
export type ErrorKind =
  | "invalid_request"
  | "authentication"
  | "permission"
  | "not_found"
  | "conflict"
  | "too_large"
  | "rate_limit"
  | "upstream"
  | "unavailable"
  | "timeout"
  | "internal";

const STATUS_OF: Record<ErrorKind, number> = {
  invalid_request: 400,
  authentication: 401,
  permission: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  rate_limit: 429,
  upstream: 502,
  unavailable: 503,
  timeout: 504,
  internal: 500,
};

export interface HttpErrorOptions {
  /** Machine-readable code, e.g. `invalid_api_key`, `model_not_allowed`. */
  code?: string;
  /** The request field the error is about, e.g. `SecretKey`. */
  param?: string;
  /** Overrides the kind's default status (e.g. an upstream 429 passed on). */
  status?: number;
  /** Extra response headers, e.g. Retry-After. */
  headers?: Record<string, string>;
  /** The wait a refusal names (ms), before Retry-After rounds it to whole seconds: what a rate-limit reset header says too. */
  retryAfterMs?: number;
}

export class HttpError extends Error {
  readonly kind: ErrorKind;
  readonly status: number;
  readonly code?: string;
  readonly param?: string;
  readonly headers?: Record<string, string>;
  readonly retryAfterMs?: number;

  constructor(kind: ErrorKind, message: string, options: HttpErrorOptions = {}) {
    super(message);
    this.name = "HttpError";
    this.kind = kind;
    this.status = options.status ?? STATUS_OF[kind];
    this.code = options.code;
    this.param = options.param;
    this.headers = options.headers;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** A wait as Retry-After says it: whole seconds, at least one. */
export const retryAfterSeconds = (ms: number) => String(Math.max(1, Math.ceil(ms / 1000)));
/** 429 `code`, with the wait as Retry-After and as `retryAfterMs` (what rate-limit reset headers say). */
export const rateLimited = (message: string, code: string, retryAfterMs: number) =>
  new HttpError("rate_limit", message, { code, headers: { "retry-after": retryAfterSeconds(retryAfterMs) }, retryAfterMs });
export const badRequest = (message: string, param?: string, code = "invalid_request") =>
  new HttpError("invalid_request", message, { param, code });
export const unauthorized = (message: string, code = "invalid_api_key") =>
  new HttpError("authentication", message, { code });
export const forbidden = (message: string, code = "access_denied") => new HttpError("permission", message, { code });
export const notFound = (message: string, code = "not_found") => new HttpError("not_found", message, { code });
export const conflict = (message: string, param?: string, code = "conflict") =>
  new HttpError("conflict", message, { param, code });
export const tooLarge = (limit: number) =>
  new HttpError("too_large", `Request body exceeds the limit of ${limit} bytes`, { code: "request_too_large" });

/**
 * What an error says for a log line: the innermost cause's message. drizzle wraps a
 * driver's error in one whose message is the query and its parameters (a provider key's
 * sealed secret among them), which is not for logs.
 */
export function causeMessage(error: unknown): string {
  const inner = causesOf(error).at(-1);
  return inner instanceof Error ? inner.message : String(inner);
}

/** An error and the causes it wraps, outermost first (at most four: wrappers nest shallowly). */
export function causesOf(error: unknown): unknown[] {
  const chain = [error];
  for (let inner = error; chain.length < 4 && inner instanceof Error && inner.cause !== undefined; ) chain.push((inner = inner.cause));
  return chain;
}

/**
 * A request value nested so deeply that walking it overflowed the call stack (JSON.parse
 * reads 100,000 levels of `[`; the recursive walks after it, and JSON.stringify, stop at
 * some tens of thousands). No check is made on every body to find this out, which would
 * cost each call a pass over its bytes: the overflow itself is the check, and it is the
 * client's mistake, a 400, never a 500. Such walks read and build; they write nothing
 * shared, so nothing is left half done.
 */
export function asClientMistake(error: unknown): unknown {
  if (error instanceof RangeError && /call stack/i.test(error.message)) {
    return badRequest("The request is nested too deeply to be read (JSON nested thousands of levels deep)", undefined, "nesting_too_deep");
  }
  return error;
}

/** A model name taken from a request path, percent-decoded; a malformed escape (`%E0`) is the client's 400, not a 500. */
export function modelFromPath(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw badRequest("The model name in the path is not valid percent-encoding", "model");
  }
}

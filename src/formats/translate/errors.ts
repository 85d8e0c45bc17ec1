/** Upstream errors read from either envelope and rendered in the client's. */
import { HttpError, type ErrorKind } from "../../core/errors.ts";
import { ERROR_TYPE_OF } from "../envelope.ts";
import { field } from "../json.ts";

/** Error type names of both envelopes (they share Anthropic's vocabulary) and OpenAI's own extras. */
const KIND_OF_TYPE: Record<string, ErrorKind> = {
  ...Object.fromEntries(Object.entries(ERROR_TYPE_OF).map(([kind, type]) => [type, kind as ErrorKind])),
  api_error: "upstream",
  server_error: "upstream",
  insufficient_quota: "rate_limit",
  tokens: "rate_limit",
  requests: "rate_limit",
};

function kindOfStatus(status: number): ErrorKind {
  switch (status) {
    case 400: return "invalid_request";
    case 401: return "authentication";
    case 403: return "permission";
    case 404: return "not_found";
    case 409: return "conflict";
    case 413: return "too_large";
    case 429: return "rate_limit";
    case 503: case 529: return "unavailable";
    case 504: return "timeout";
  }
  return status >= 500 ? "upstream" : "invalid_request";
}

/** Google's canonical status names (a Gemini error's `error.status`). */
const KIND_OF_GOOGLE_STATUS: Record<string, ErrorKind> = {
  INVALID_ARGUMENT: "invalid_request",
  FAILED_PRECONDITION: "invalid_request",
  OUT_OF_RANGE: "invalid_request",
  UNAUTHENTICATED: "authentication",
  PERMISSION_DENIED: "permission",
  NOT_FOUND: "not_found",
  ALREADY_EXISTS: "conflict",
  ABORTED: "conflict",
  RESOURCE_EXHAUSTED: "rate_limit",
  UNAVAILABLE: "unavailable",
  DEADLINE_EXCEEDED: "timeout",
  INTERNAL: "upstream",
  UNKNOWN: "upstream",
};

/** Statuses that say what went wrong by themselves (OpenAI calls a bad key an `invalid_request_error` with a 401). */
const TELLING_STATUS = new Set([401, 403, 404, 409, 413, 429, 503, 504, 529]);

/**
 * An upstream error answer (Anthropic's `{type:"error", error:{type, message}}`,
 * OpenAI's `{error:{message, type, param, code}}` or Gemini's
 * `{error:{code, message, status}}`) as an HttpError keeping its status, message, code
 * and param. A telling status decides the kind; otherwise the type (or Google status
 * name) does when it is one the router knows, and the status when it is not.
 */
export function upstreamError(status: number, body: unknown): HttpError {
  const error = field(body, "error");
  const type = field(error, "type");
  const message = field(error, "message");
  const code = field(error, "code");
  const param = field(error, "param");
  const google = field(error, "status");
  const byType = typeof type === "string" ? KIND_OF_TYPE[type] : typeof google === "string" ? KIND_OF_GOOGLE_STATUS[google] : undefined;
  const kind = TELLING_STATUS.has(status) ? kindOfStatus(status) : (byType ?? kindOfStatus(status));
  return new HttpError(kind, typeof message === "string" && message !== "" ? message : `The upstream answered ${status}`, {
    status,
    code: typeof code === "string" ? code : undefined,
    param: typeof param === "string" ? param : undefined,
  });
}

/**
 * A stream's in-band error event body as an HttpError. No status rides with it: it is
 * read as a server error (its type decides the kind) and given the kind's own status.
 */
export function streamedError(body: unknown): HttpError {
  const error = upstreamError(500, body);
  return new HttpError(error.kind, error.message, { code: error.code, param: error.param });
}

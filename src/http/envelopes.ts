import type { ErrorKind, HttpError } from "../core/errors.ts";
import type { Family } from "./family.ts";

/** Type names shared by the OpenAI and Anthropic envelopes (Anthropic's vocabulary, which OpenAI SDKs accept). */
const TYPE_OF: Record<ErrorKind, string> = {
  invalid_request: "invalid_request_error",
  authentication: "authentication_error",
  permission: "permission_error",
  not_found: "not_found_error",
  conflict: "conflict_error",
  too_large: "request_too_large",
  rate_limit: "rate_limit_error",
  upstream: "api_error",
  unavailable: "overloaded_error",
  timeout: "timeout_error",
  internal: "api_error",
};

/** google.rpc.Code names, as the Gemini API reports them. */
const GOOGLE_STATUS_OF: Record<ErrorKind, string> = {
  invalid_request: "INVALID_ARGUMENT",
  authentication: "UNAUTHENTICATED",
  permission: "PERMISSION_DENIED",
  not_found: "NOT_FOUND",
  conflict: "ALREADY_EXISTS",
  too_large: "INVALID_ARGUMENT",
  rate_limit: "RESOURCE_EXHAUSTED",
  upstream: "UNAVAILABLE",
  unavailable: "UNAVAILABLE",
  timeout: "DEADLINE_EXCEEDED",
  internal: "INTERNAL",
};

/** The error body in the caller's family (spec 7; envelopes fixed in docs/api.md). */
export function errorBody(family: Family, error: HttpError): unknown {
  switch (family) {
    case "anthropic":
      return { type: "error", error: { type: TYPE_OF[error.kind], message: error.message } };
    case "gemini":
      return { error: { code: error.status, message: error.message, status: GOOGLE_STATUS_OF[error.kind] } };
    case "openai":
      return {
        error: { message: error.message, type: TYPE_OF[error.kind], param: error.param ?? null, code: error.code ?? null },
      };
  }
}

export function errorResponse(family: Family, error: HttpError): Response {
  const headers: Record<string, string> = { "content-type": "application/json", ...error.headers };
  // An account, model, IP or path not allowed: waiting changes nothing, so SDKs must not retry.
  if (error.status === 403) headers["x-should-retry"] = "false";
  return new Response(JSON.stringify(errorBody(family, error)), { status: error.status, headers });
}

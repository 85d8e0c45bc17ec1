import type { ErrorKind } from "../core/errors.ts";

/**
 * Error type names shared by the OpenAI and Anthropic envelopes (Anthropic's
 * vocabulary, which OpenAI SDKs accept); envelopes fixed in docs/api.md.
 */
export const ERROR_TYPE_OF: Record<ErrorKind, string> = {
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

const encoder = new TextEncoder();

/** An SSE event carrying an error body, named when the family names its events. */
export function sseErrorEvent(body: unknown, event?: string): Uint8Array {
  const data = JSON.stringify(body);
  return encoder.encode(event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`);
}

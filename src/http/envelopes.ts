import type { HttpError } from "../core/errors.ts";
import type { Family } from "../formats/family.ts";
import { formatOf } from "../formats/registry.ts";

/** The error response in the caller's family's envelope (spec 7; envelopes fixed in docs/api.md). */
export function errorResponse(family: Family, error: HttpError): Response {
  const headers: Record<string, string> = { "content-type": "application/json", ...error.headers };
  // An account, model, IP or path not allowed: waiting changes nothing, so SDKs must not retry.
  if (error.status === 403) headers["x-should-retry"] = "false";
  return new Response(JSON.stringify(formatOf(family).errorBody(error)), { status: error.status, headers });
}

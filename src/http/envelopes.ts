import type { HttpError } from "../core/errors.ts";
import type { Family } from "../formats/family.ts";
import { formatOf } from "../formats/registry.ts";

/** The longest Retry-After an SDK is left to sleep through before retrying on its own. */
export const MAX_SDK_WAIT_SECONDS = 60;

/** The error response in the caller's family's envelope (spec 7; envelopes fixed in docs/api.md). */
export function errorResponse(family: Family, error: HttpError): Response {
  const headers: Record<string, string> = { "content-type": "application/json", ...error.headers };
  // An account, model, IP or path not allowed: waiting changes nothing, so SDKs must not retry.
  if (error.status === 403) headers["x-should-retry"] = "false";
  // A wait past a minute (an hour's window, a day quota, keys asleep for long): the SDKs
  // obey Retry-After whatever its length, so a call would hang for hours inside the client.
  // They are told not to retry; Retry-After still says when to come back.
  else if (Number(headers["retry-after"]) > MAX_SDK_WAIT_SECONDS) headers["x-should-retry"] = "false";
  return new Response(JSON.stringify(formatOf(family).errorBody(error)), { status: error.status, headers });
}

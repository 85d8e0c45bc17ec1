import { HttpError } from "../core/errors.ts";
import { errorBody } from "../http/envelopes.ts";
import type { Family } from "../http/family.ts";

const encoder = new TextEncoder();

/**
 * The event that ends a stream which failed after it started, in the client's own
 * stream format, so its SDK raises an error instead of hanging or accepting a
 * truncated answer as complete.
 */
export function streamErrorEvent(family: Family, error: HttpError): Uint8Array {
  const body = JSON.stringify(errorBody(family, error));
  return encoder.encode(family === "anthropic" ? `event: error\ndata: ${body}\n\n` : `data: ${body}\n\n`);
}

export const streamTimeout = (seconds: number) =>
  new HttpError("timeout", `The upstream sent nothing for ${seconds} s; the stream was ended`, { code: "upstream_idle_timeout" });

export const streamBroken = () =>
  new HttpError("upstream", "The upstream connection failed during the stream", { code: "upstream_stream_error" });

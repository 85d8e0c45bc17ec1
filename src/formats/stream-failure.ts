import { indexOfBytes, needle, parseObject } from "./json.ts";

/**
 * An upstream that fails after its stream began can only say so inside it, each family
 * in its own event: OpenAI chat and Gemini a chunk with an `error` object (OpenRouter's
 * also with `finish_reason: "error"`), Anthropic `{"type":"error","error":{…}}` (its
 * `overloaded_error`), Responses an `error` or `response.failed` event. Such a stream
 * ended badly even though its connection closed cleanly.
 */
export function reportsFailure(data: string): boolean {
  if (!data.includes('"error"')) return false;
  const obj = parseObject(data);
  if (obj === undefined) return false;
  return (typeof obj.error === "object" && obj.error !== null) || obj.type === "error" || obj.type === "response.failed";
}

const ERROR = needle('"error"');

/** Where in raw stream bytes such an event may be (a false positive only costs decoding), or -1. */
export const failureAt = (bytes: Uint8Array): number => indexOfBytes(bytes, ERROR);

import { indexOfBytes, needle, parseObject } from "./json.ts";

/**
 * An upstream that fails after its stream began can only say so inside it, each family
 * in its own event: OpenAI chat and Gemini a chunk with an `error` object (OpenRouter's
 * also with `finish_reason: "error"`), Anthropic `{"type":"error","error":{…}}` (its
 * `overloaded_error`), Responses an `error` or `response.failed` event. Such a stream
 * ended badly even though its connection closed cleanly.
 */
export function reportsFailure(data: string): boolean {
  // Responses events carry `"error":null` on every response object (the completed one holds
  // the whole answer): only an error object or an error type is worth a parse.
  if (!MAY_REPORT_FAILURE.test(data)) return false;
  const obj = parseObject(data);
  if (obj === undefined) return false;
  return (typeof obj.error === "object" && obj.error !== null) || obj.type === "error" || obj.type === "response.failed";
}

const MAY_REPORT_FAILURE = /"error"\s*:\s*\{|"type"\s*:\s*"(?:error|response\.failed)"/;

const ERROR = needle('"error"');
const TYPE = needle('"type"');

const isSpace = (byte: number | undefined) => byte === 0x20 || byte === 0x09 || byte === 0x0d || byte === 0x0a;

/**
 * Where in raw stream bytes such an event may be, or -1: an `"error"` key whose value is an
 * object, or `"error"` as the value of `"type"` (`"error":null` is neither). A read cut off
 * next to one counts as found: a false positive only costs decoding the read.
 */
export function failureAt(bytes: Uint8Array): number {
  for (let at = indexOfBytes(bytes, ERROR); at !== -1; at = indexOfBytes(bytes, ERROR, at + 1)) {
    let after = at + ERROR.byteLength;
    while (isSpace(bytes[after])) after++;
    if (after >= bytes.length) return at;
    if (bytes[after] === 0x3a) {
      after++;
      while (isSpace(bytes[after])) after++;
      if (after >= bytes.length || bytes[after] === 0x7b) return at;
      continue;
    }
    let before = at - 1;
    while (isSpace(bytes[before])) before--;
    if (before < 0) return at;
    if (bytes[before] !== 0x3a) continue;
    before--;
    while (isSpace(bytes[before])) before--;
    const start = before - TYPE.byteLength + 1;
    if (start < 0) return at;
    if (TYPE.every((byte, i) => bytes[start + i] === byte)) return at;
  }
  return -1;
}

import { createSseDecoder, type SseEvent } from "./sse/decoder.ts";

/**
 * Whether a 2xx upstream body is an answer. An upstream (or a proxy in front of it) may
 * say 200 and still not answer: an error object, JSON cut short, an HTML page, a stream
 * whose first event is an error or cannot be read. Such a body is a failure of the key
 * that sent it, tried elsewhere like a 5xx and never charged (docs/api.md, "Redirects
 * and non-answers").
 */

/** Members an error object has besides `error` in the three families' envelopes. */
const ERROR_ENVELOPE_KEYS = new Set(["error", "type", "request_id", "requestId", "status", "code", "message"]);

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * An error envelope and nothing else: OpenAI and Gemini `{"error":{…}}`, Anthropic
 * `{"type":"error","error":{…}}`. A success that merely has an `error` member (a
 * Responses object's `"error": null`) is not one.
 */
export function isErrorObject(value: unknown): boolean {
  if (!isObject(value)) return false;
  if (value.type === "error") return true;
  if (value.error === undefined || value.error === null || value.error === false) return false;
  for (const key in value) if (!ERROR_ENVELOPE_KEYS.has(key)) return false;
  return true;
}

export type Judgement = { answer: true; parsed: unknown } | { answer: false; why: string };

/** Judges a whole JSON body (non-streaming answers, Gemini's JSON-array streams). */
export function judgeJson(text: string): Judgement {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { answer: false, why: text.trim() === "" ? "an empty body" : "a body that is not valid JSON" };
  }
  if (isErrorObject(parsed)) return { answer: false, why: "an error object" };
  if (Array.isArray(parsed) && parsed.length > 0 && isErrorObject(parsed[0])) return { answer: false, why: "an error object" };
  if (!isObject(parsed) && !Array.isArray(parsed)) return { answer: false, why: "a body that is not a JSON object" };
  return { answer: true, parsed };
}

/** Judges a stream's first event: an error event, `[DONE]` before anything, or data that is not JSON is no answer. */
export function judgeFirstEvent(event: SseEvent): Judgement {
  if (event.event === "error") return { answer: false, why: "a stream whose first event is an error" };
  if (event.data.trim() === "[DONE]") return { answer: false, why: "a stream that ended before its first event" };
  const judged = judgeJson(event.data);
  return judged.answer ? judged : { answer: false, why: `a stream whose first event is ${judged.why}` };
}

/** A stream's first read (all the bytes up to and including its first event) and what it says. */
export interface FirstEvent {
  judgement: Judgement;
  /** Every byte read so far, to be relayed first when the stream is an answer. */
  bytes: Uint8Array;
  /** The upstream closed the stream within these bytes. */
  done: boolean;
}

/**
 * Reads a stream until its first event is complete (comments and blank lines before it
 * are kept for the client), without passing anything on: the relay decides from it
 * whether the stream is an answer. The caller's first-byte limit bounds the wait.
 */
export async function readFirstEvent(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<FirstEvent> {
  let first: SseEvent | undefined;
  const decoder = createSseDecoder((event) => {
    first ??= event;
  });
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const result = await reader.read();
    if (result.done) {
      decoder.end();
      const bytes = concat(parts, size);
      return { judgement: first ? judgeFirstEvent(first) : { answer: false, why: "a stream that ended before its first event" }, bytes, done: true };
    }
    parts.push(result.value);
    size += result.value.byteLength;
    decoder.push(result.value);
    if (first) return { judgement: judgeFirstEvent(first), bytes: concat(parts, size), done: false };
  }
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

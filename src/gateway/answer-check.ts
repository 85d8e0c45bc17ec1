import type { SseEvent } from "../formats/sse.ts";
import { readBoundedText } from "./bounded-read.ts";

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

/**
 * A JSON answer read whole within bounds (gateway/bounded-read.ts) and judged: silence
 * past `idleMs` is a timeout of the key (`onIdle` cuts the connection and the read
 * throws), and an answer past `maxBytes` (a gzip bomb included) is no answer, dropped as
 * it grows rather than held whole.
 */
export async function readJsonAnswer(response: Response, maxBytes: number, idleMs: number, onIdle: () => void): Promise<{ text: string; judgement: Judgement }> {
  const text = await readBoundedText(response, maxBytes, idleMs, onIdle);
  if (text === undefined) return { text: "", judgement: { answer: false, why: `an answer over ${maxBytes} bytes` } };
  return { text, judgement: judgeJson(text) };
}

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

/** Where a block scan resumes: the next byte to look at and the start of the line it is in. */
interface BlockScan {
  pos: number;
  lineStart: number;
}

/**
 * Where the event block being scanned ends: just past its blank line (any of LF, CRLF,
 * CR line ends), or -1 when the first `size` bytes hold no complete block yet. The scan
 * resumes where the last one stopped, so a block arriving in many reads is looked at
 * once, byte by byte, not again from its start at each read.
 */
function blockEnd(bytes: Uint8Array, size: number, scan: BlockScan): number {
  for (let i = scan.pos; i < size; i++) {
    const b = bytes[i];
    if (b !== 0x0a && b !== 0x0d) continue;
    // A CR at the very end may be half of a CRLF still on its way: looked at again with the next read.
    if (b === 0x0d && i + 1 === size) {
      scan.pos = i;
      return -1;
    }
    const next = b === 0x0d && bytes[i + 1] === 0x0a ? i + 2 : i + 1;
    if (i === scan.lineStart) return next;
    scan.lineStart = next;
    i = next - 1;
  }
  scan.pos = size;
  return -1;
}

const utf8 = new TextDecoder();

/**
 * The event a complete block dispatches (WHATWG event stream interpretation: `event:`
 * and `data:` fields, one leading space dropped, comments and other fields ignored,
 * data lines joined by LF), or undefined when it dispatches none (no data line).
 */
function eventOfBlock(block: Uint8Array, first: boolean): SseEvent | undefined {
  let text = utf8.decode(block);
  if (first && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let event: string | undefined;
  let data: string | undefined;
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === "" || line.charCodeAt(0) === 0x3a) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data = data === undefined ? value : `${data}\n${value}`;
  }
  return data === undefined ? undefined : { event: event || undefined, data };
}

/**
 * Reads a stream until its first event is complete (comments and blank lines before it
 * are kept for the client), without passing anything on: the relay decides from it
 * whether the stream is an answer. Only the blocks up to the first event are decoded,
 * however much else the reads brought. The caller's first-byte limit bounds the wait;
 * `maxBytes` bounds what is held meanwhile: a stream whose first event has not ended
 * within it (one endless line, say) is no answer, judged at once rather than held.
 */
export async function readFirstEvent(reader: ReadableStreamDefaultReader<Uint8Array>, maxBytes = Number.MAX_SAFE_INTEGER): Promise<FirstEvent> {
  let first: SseEvent | undefined;
  /** The bytes read so far: the first read itself while there is only one, then a buffer grown by doubling. */
  let held: Uint8Array = new Uint8Array(0);
  let size = 0;
  let owned = false;
  /** Where the next block starts in `held`, and how far its scan got. */
  let next = 0;
  const scan: BlockScan = { pos: 0, lineStart: 0 };
  for (;;) {
    const result = await reader.read();
    if (result.done) {
      // An event not ended by a blank line is discarded, as the SSE rules say.
      return { judgement: first ? judgeFirstEvent(first) : { answer: false, why: "a stream that ended before its first event" }, bytes: held.subarray(0, size), done: true };
    }
    const chunk = result.value;
    if (size === 0) held = chunk;
    else {
      if (!owned || size + chunk.byteLength > held.byteLength) {
        const grown = new Uint8Array(Math.max(2 * (size + chunk.byteLength), 64 * 1024));
        grown.set(held.subarray(0, size));
        held = grown;
        owned = true;
      }
      held.set(chunk, size);
    }
    size += chunk.byteLength;
    for (let end = blockEnd(held, size, scan); end !== -1 && !first; end = blockEnd(held, size, scan)) {
      first = eventOfBlock(held.subarray(next, end), next === 0);
      next = end;
      scan.pos = scan.lineStart = end;
    }
    if (first) return { judgement: judgeFirstEvent(first), bytes: held.subarray(0, size), done: false };
    if (size > maxBytes) return { judgement: { answer: false, why: `a stream whose first event is over ${maxBytes} bytes` }, bytes: held.subarray(0, size), done: false };
  }
}

/**
 * Reads token usage out of upstream responses, complete or streamed, for metering.
 * Upstream bodies are untrusted: nothing here throws on odd input, it just finds less.
 */
import type { SseEvent } from "../sse/decoder.ts";
import {
  type AnthropicCounts,
  anthropicUsage,
  count,
  geminiUsage,
  isObject,
  type JsonObject,
  mergeAnthropicCounts,
  openaiUsage,
} from "./families.ts";
import type { Usage } from "./types.ts";

/** The API family whose wire format a response uses. */
export type UsageFamily = "openai" | "anthropic" | "gemini";

/** Accumulates usage from the SSE events of one stream. */
export interface StreamUsageTap {
  /** Feeds one decoded event; events of any type may be passed. */
  onEvent(event: SseEvent): void;
  /** undefined if no usage was seen */
  result(): Usage | undefined;
  /**
   * Where in raw stream bytes the first event this tap needs may be (the offset of its
   * key), or -1. The relay forwards what comes before it without decoding: most of a
   * stream is content deltas. A false positive only costs the decoding.
   */
  firstNeeded(bytes: Uint8Array): number;
}

const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** Byte needles for the searches below: searching with a string converts it on every call (4x slower). */
const needle = (text: string) => new TextEncoder().encode(text);
const USAGE = needle('"usage"');
const MESSAGE_START = needle("message_start");
const USAGE_METADATA = needle('"usageMetadata"');

/** The offset of the first `"<key>"` in `bytes` whose value is an object (`"usage":null` is not), or -1. */
function objectKeyAt(bytes: Uint8Array, quotedKey: Uint8Array): number {
  const buf = asBuffer(bytes);
  for (let at = buf.indexOf(quotedKey); at !== -1; at = buf.indexOf(quotedKey, at + 1)) {
    let i = at + quotedKey.byteLength;
    while (i < buf.length && (buf[i] === 0x20 || buf[i] === 0x09 || buf[i] === 0x3a || buf[i] === 0x0d || buf[i] === 0x0a)) i++;
    // Cut off before the value (end of this read): say yes, the decoder will know.
    if (i >= buf.length || buf[i] === 0x7b) return at;
  }
  return -1;
}

/** The smaller of two offsets where -1 means none. */
const earliest = (a: number, b: number) => (a === -1 ? b : b === -1 ? a : Math.min(a, b));

/**
 * Usage from a complete (non-streaming) JSON response body; undefined if the body has none.
 *
 * Covers, for "openai", chat completions, Responses, embeddings and the image/audio
 * APIs; for "anthropic", messages and `count_tokens` (which has only an input count);
 * for "gemini", generateContent and also the JSON array that streamGenerateContent
 * returns without `alt=sse`.
 */
export function usageFromJson(family: UsageFamily, body: unknown): Usage | undefined {
  switch (family) {
    case "openai":
      return isObject(body) && isObject(body.usage) ? openaiUsage(body.usage) : undefined;
    case "anthropic":
      return anthropicFromJson(body);
    case "gemini":
      return geminiFromJson(body);
  }
}

function anthropicFromJson(body: unknown): Usage | undefined {
  if (!isObject(body)) return undefined;
  if (isObject(body.usage)) {
    const counts: AnthropicCounts = {};
    mergeAnthropicCounts(counts, body.usage);
    return anthropicUsage(counts);
  }
  const countTokens = count(body.input_tokens);
  if (countTokens !== undefined) return { prompt: countTokens, completion: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
  return undefined;
}

function geminiFromJson(body: unknown): Usage | undefined {
  if (Array.isArray(body)) {
    // Usage metadata is cumulative across the chunks, so the last one is the total.
    for (let i = body.length - 1; i >= 0; i--) {
      const u = geminiFromJson(body[i]);
      if (u !== undefined) return u;
    }
    return undefined;
  }
  return isObject(body) && isObject(body.usageMetadata) ? geminiUsage(body.usageMetadata) : undefined;
}

/** Parses an event's data as a JSON object; anything else (e.g. OpenAI's `[DONE]`) is undefined. */
function parseObject(data: string): JsonObject | undefined {
  try {
    const v: unknown = JSON.parse(data);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Creates a tap for one stream. Most events of a stream are content deltas that carry
 * no usage, so the taps check for the key in the raw data before paying for
 * `JSON.parse`; a false positive only costs the parse.
 */
export function createStreamUsageTap(family: UsageFamily): StreamUsageTap {
  switch (family) {
    case "openai":
      return openaiTap();
    case "anthropic":
      return anthropicTap();
    case "gemini":
      return geminiTap();
  }
}

/**
 * Chat completion chunks carry, with `stream_options.include_usage`, a final `usage`
 * (null before it); Responses API events wrap the response object as
 * `response`, whose `usage` is set on `response.completed` / `.incomplete` / `.failed`.
 * Some OpenAI-compatible servers send cumulative usage on every chunk, so the latest wins.
 */
/** Chunks carry `"usage":null` until the usage one: only an object is worth parsing. */
export const HAS_USAGE_OBJECT = /"usage"\s*:\s*\{/;

function openaiTap(): StreamUsageTap {
  let usage: Usage | undefined;
  return {
    onEvent(event) {
      if (!HAS_USAGE_OBJECT.test(event.data)) return;
      const obj = parseObject(event.data);
      if (obj === undefined) return;
      const holder = isObject(obj.response) ? obj.response : obj;
      if (isObject(holder.usage)) usage = openaiUsage(holder.usage) ?? usage;
    },
    result: () => (usage === undefined ? undefined : { ...usage }),
    firstNeeded: (bytes) => objectKeyAt(bytes, USAGE),
  };
}

/**
 * `message_start` gives the input side and an initial output count; each
 * `message_delta` restates cumulative counts, so its fields replace, never add to,
 * what was known.
 */
function anthropicTap(): StreamUsageTap {
  const counts: AnthropicCounts = {};
  let seen = false;
  return {
    onEvent(event) {
      const data = event.data;
      if (!data.includes('"usage"') && !data.includes("message_start")) return;
      const obj = parseObject(data);
      if (obj === undefined) return;
      if (obj.type === "message_start" && isObject(obj.message)) {
        const message = obj.message;
        if (isObject(message.usage)) {
          mergeAnthropicCounts(counts, message.usage);
          seen = true;
        }
      } else if (obj.type === "message_delta" && isObject(obj.usage)) {
        mergeAnthropicCounts(counts, obj.usage);
        seen = true;
      }
    },
    result: () => (seen ? anthropicUsage(counts) : undefined),
    firstNeeded: (bytes) => {
      const buf = asBuffer(bytes);
      return earliest(buf.indexOf(USAGE), buf.indexOf(MESSAGE_START));
    },
  };
}

/**
 * With `alt=sse` every event is a whole GenerateContentResponse whose `usageMetadata`
 * is cumulative, so the last one seen replaces the earlier ones.
 */
function geminiTap(): StreamUsageTap {
  let usage: Usage | undefined;
  return {
    onEvent(event) {
      if (!event.data.includes('"usageMetadata"')) return;
      const obj = parseObject(event.data);
      if (obj === undefined) return;
      if (isObject(obj.usageMetadata)) usage = geminiUsage(obj.usageMetadata);
    },
    result: () => (usage === undefined ? undefined : { ...usage }),
    firstNeeded: (bytes) => asBuffer(bytes).indexOf(USAGE_METADATA),
  };
}

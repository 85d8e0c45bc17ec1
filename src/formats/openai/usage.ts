import { count, earliest, field, HAS_USAGE_OBJECT, indexOfBytes, isObject, n, needle, objectKeyAt, parseObject, withModalities, type JsonObject } from "../json.ts";
import type { StreamUsageTap } from "../format.ts";
import type { Usage } from "../usage.ts";

/**
 * The output count with reasoning inside it. OpenAI's output count includes reasoning
 * (total = input + output); xAI counts reasoning beside it (its total = input + output +
 * reasoning), which read as OpenAI's left the visible output uncharged. Only a total
 * that proves it is read that way: without one, OpenAI's meaning holds.
 */
function withReasoning(prompt: number, output: number, reasoning: number, total: unknown): number {
  return reasoning > 0 && count(total) === prompt + output + reasoning ? output + reasoning : output;
}

/**
 * OpenAI `usage` in any of its shapes: chat completions and embeddings
 * (`prompt_tokens`…), or the Responses, image and audio APIs (`input_tokens`…).
 * Undefined when the object has neither, e.g. an empty `{}` placeholder.
 */
export function openaiUsage(u: JsonObject): Usage | undefined {
  if ("prompt_tokens" in u || "completion_tokens" in u) {
    const pd = u.prompt_tokens_details;
    const cd = u.completion_tokens_details;
    const prompt = n(u.prompt_tokens);
    const reasoning = n(field(cd, "reasoning_tokens"));
    return withModalities(
      {
        prompt,
        completion: withReasoning(prompt, n(u.completion_tokens), reasoning, u.total_tokens),
        // DeepSeek documents its cache hits as `prompt_cache_hit_tokens` (part of
        // `prompt_tokens`), not `cached_tokens`: read as uncached, a hit cost full price.
        cacheRead: count(field(pd, "cached_tokens")) ?? n(u.prompt_cache_hit_tokens),
        // LiteLLM spells an Anthropic model's cache writes (inside `prompt_tokens`)
        // `cache_creation_tokens`, and repeats them as `cache_creation_input_tokens`.
        cacheWrite: count(field(pd, "cache_write_tokens")) ?? count(field(pd, "cache_creation_tokens")) ?? n(u.cache_creation_input_tokens),
        reasoning,
      },
      n(field(pd, "audio_tokens")),
      n(field(cd, "audio_tokens")),
      0,
      0,
    );
  }
  if ("input_tokens" in u || "output_tokens" in u) {
    // The transcription API spells the breakdown `input_token_details` (no "s").
    const id = u.input_tokens_details ?? u.input_token_details;
    const od = u.output_tokens_details;
    const prompt = n(u.input_tokens);
    const reasoning = n(field(od, "reasoning_tokens"));
    return withModalities(
      {
        prompt,
        completion: withReasoning(prompt, n(u.output_tokens), reasoning, u.total_tokens),
        cacheRead: n(field(id, "cached_tokens")),
        cacheWrite: n(field(id, "cache_write_tokens")),
        reasoning,
      },
      n(field(id, "audio_tokens")),
      n(field(od, "audio_tokens")),
      n(field(id, "image_tokens")),
      n(field(od, "image_tokens")),
    );
  }
  return undefined;
}

/** Adds one output item to the per-call counts when it is a web or file search. */
function countCall(calls: { webSearches: number; fileSearches: number }, item: unknown): void {
  const type = field(item, "type");
  if (type === "web_search_call") calls.webSearches++;
  else if (type === "file_search_call") calls.fileSearches++;
}

/**
 * A Responses answer's `output` items that are billed per call beside their tokens:
 * each `web_search_call` and `file_search_call` (the usage object does not count them).
 */
function withToolCalls(usage: Usage | undefined, output: unknown): Usage | undefined {
  if (usage === undefined || !Array.isArray(output)) return usage;
  const calls = { webSearches: 0, fileSearches: 0 };
  for (const item of output) countCall(calls, item);
  if (calls.webSearches > 0) usage.webSearches = calls.webSearches;
  if (calls.fileSearches > 0) usage.fileSearches = calls.fileSearches;
  return usage;
}

/**
 * The service tier that served the call (`service_tier` of a chat completion, its
 * chunks, or a response): priority and flex processing are priced apart.
 */
function withTier(usage: Usage | undefined, tier: unknown): Usage | undefined {
  if (usage !== undefined && (tier === "priority" || tier === "flex")) usage.tier = tier;
  return usage;
}

/** Chat completions, Responses, embeddings and the image/audio APIs: a top-level `usage`. */
export function openaiUsageFromJson(body: unknown): Usage | undefined {
  return isObject(body) && isObject(body.usage) ? withTier(withToolCalls(openaiUsage(body.usage), body.output), body.service_tier) : undefined;
}

const USAGE = needle('"usage"');
const SEARCH_CALL = needle('_search_call"');

/**
 * The usage object of one Chat Completions chunk: `usage`; else where two servers put a
 * stream's counts instead (no top-level one): Groq's `x_groq.usage` on its last chunk,
 * Moonshot's `choices[0].usage` on its finishing chunk.
 */
export function chunkUsageObject(chunk: JsonObject): JsonObject | undefined {
  if (isObject(chunk.usage)) return chunk.usage;
  const groq = field(chunk.x_groq, "usage");
  if (isObject(groq)) return groq;
  const inChoice = Array.isArray(chunk.choices) ? field(chunk.choices[0], "usage") : undefined;
  return isObject(inChoice) ? inChoice : undefined;
}

/**
 * Chat completion chunks carry, with `stream_options.include_usage`, a final `usage`
 * (null before it); Responses API events wrap the response object as
 * `response`, whose `usage` is set on `response.completed` / `.incomplete` / `.failed`.
 * Some OpenAI-compatible servers send cumulative usage on every chunk, so the latest wins.
 */
export function openaiTap(): StreamUsageTap {
  let usage: Usage | undefined;
  // The searches of the items finished so far: a stream cut before response.completed ran them.
  const calls = { webSearches: 0, fileSearches: 0 };
  return {
    onEvent(event) {
      const item = event.data.includes('_search_call"');
      if (!item && !HAS_USAGE_OBJECT.test(event.data)) return;
      const obj = parseObject(event.data);
      if (obj === undefined) return;
      if (item && obj.type === "response.output_item.done") countCall(calls, obj.item);
      if (isObject(obj.response)) {
        // response.completed / .incomplete / .failed: the whole response, its output items included.
        if (isObject(obj.response.usage)) usage = withTier(withToolCalls(openaiUsage(obj.response.usage), obj.response.output), obj.response.service_tier) ?? usage;
        return;
      }
      const found = chunkUsageObject(obj);
      if (found !== undefined) usage = withTier(openaiUsage(found), obj.service_tier) ?? usage;
    },
    result: () => (usage === undefined ? undefined : { ...usage }),
    calls: () => (calls.webSearches + calls.fileSearches > 0 ? { ...calls } : undefined),
    firstNeeded: (bytes) => earliest(objectKeyAt(bytes, USAGE), indexOfBytes(bytes, SEARCH_CALL)),
  };
}

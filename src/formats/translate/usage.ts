/**
 * Usage written in the client's shape from the normalised Usage read off the upstream's
 * answer by the upstream's own reader: the client format's reader then yields the same
 * Usage, so a translated call meters exactly as a native one (metering parity).
 */
import type { JsonObject } from "../json.ts";
import type { Usage } from "../usage.ts";

/**
 * Anthropic's `input_tokens` excludes cache reads and writes (src/formats/anthropic/usage.ts
 * adds them back); thinking is inside `output_tokens` and broken out as
 * `output_tokens_details.thinking_tokens`, written only when there was some.
 */
export function anthropicUsageObject(u: Usage): JsonObject {
  const out: JsonObject = {
    input_tokens: Math.max(0, u.prompt - u.cacheRead - u.cacheWrite),
    cache_creation_input_tokens: u.cacheWrite,
    cache_read_input_tokens: u.cacheRead,
    output_tokens: u.completion,
  };
  if (u.reasoning > 0) out.output_tokens_details = { thinking_tokens: u.reasoning };
  return out;
}

/**
 * Chat Completions' `prompt_tokens` includes cached tokens; a cache write is reported as
 * `prompt_tokens_details.cache_write_tokens` (the field OpenAI-compatible caches use and
 * src/formats/openai/usage.ts reads), written only when there was one.
 */
export function openaiUsageObject(u: Usage): JsonObject {
  const promptDetails: JsonObject = { cached_tokens: u.cacheRead };
  if (u.cacheWrite > 0) promptDetails.cache_write_tokens = u.cacheWrite;
  return {
    prompt_tokens: u.prompt,
    completion_tokens: u.completion,
    total_tokens: u.prompt + u.completion,
    prompt_tokens_details: promptDetails,
    completion_tokens_details: { reasoning_tokens: u.reasoning },
  };
}

/**
 * The Responses API's `usage`: `input_tokens` includes cached tokens (as Chat's
 * `prompt_tokens` does), reasoning is inside `output_tokens`; the cache write is
 * `input_tokens_details.cache_write_tokens`, always written (the openai SDK's
 * `ResponseUsage` type requires it, 0 when there was none).
 */
export function responsesUsageObject(u: Usage): JsonObject {
  return {
    input_tokens: u.prompt,
    input_tokens_details: { cached_tokens: u.cacheRead, cache_write_tokens: u.cacheWrite },
    output_tokens: u.completion,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.prompt + u.completion,
  };
}

/**
 * Gemini's `usageMetadata`: `promptTokenCount` includes cached content (a cache write is
 * ordinary input to Gemini, which has no word for it); thoughts are counted outside
 * `candidatesTokenCount`, as `thoughtsTokenCount`, written only when there were some.
 */
export function geminiUsageObject(u: Usage): JsonObject {
  const out: JsonObject = {
    promptTokenCount: u.prompt,
    candidatesTokenCount: Math.max(0, u.completion - u.reasoning),
    totalTokenCount: u.prompt + u.completion,
  };
  if (u.cacheRead > 0) out.cachedContentTokenCount = u.cacheRead;
  if (u.reasoning > 0) out.thoughtsTokenCount = u.reasoning;
  return out;
}

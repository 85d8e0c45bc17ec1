/**
 * Converters from each API family's wire-format usage object to the normalised
 * {@link Usage}. They read untrusted upstream JSON, so every field is optional and a
 * missing or malformed number counts as 0 rather than throwing.
 */
import type { Usage } from "./types.ts";

export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A token count, or undefined when the field is absent or not a count. */
export function count(v: unknown): number | undefined {
  if (typeof v === "number") return Number.isFinite(v) && v >= 0 ? v : undefined;
  // proto3 JSON writes 64-bit integers as strings; accept them in case an upstream does.
  if (typeof v === "string" && /^\d+$/.test(v)) return Number(v);
  return undefined;
}

const n = (v: unknown): number => count(v) ?? 0;

function field(o: unknown, key: string): unknown {
  return isObject(o) ? o[key] : undefined;
}

/** Adds the optional modality breakdowns only when reported, to keep records small. */
function withModalities(u: Usage, audioPrompt: number, audioCompletion: number, imagePrompt: number, imageCompletion: number): Usage {
  if (audioPrompt > 0) u.audioPrompt = audioPrompt;
  if (audioCompletion > 0) u.audioCompletion = audioCompletion;
  if (imagePrompt > 0) u.imagePrompt = imagePrompt;
  if (imageCompletion > 0) u.imageCompletion = imageCompletion;
  return u;
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
    return withModalities(
      {
        prompt: n(u.prompt_tokens),
        completion: n(u.completion_tokens),
        cacheRead: n(field(pd, "cached_tokens")),
        cacheWrite: n(field(pd, "cache_write_tokens")),
        reasoning: n(field(cd, "reasoning_tokens")),
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
    return withModalities(
      {
        prompt: n(u.input_tokens),
        completion: n(u.output_tokens),
        cacheRead: n(field(id, "cached_tokens")),
        cacheWrite: n(field(id, "cache_write_tokens")),
        reasoning: n(field(od, "reasoning_tokens")),
      },
      n(field(id, "audio_tokens")),
      n(field(od, "audio_tokens")),
      n(field(id, "image_tokens")),
      n(field(od, "image_tokens")),
    );
  }
  return undefined;
}

/** Raw Anthropic counts, kept apart so a stream can override them field by field. */
export interface AnthropicCounts {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  thinking?: number;
}

/**
 * Copies the counts present in an Anthropic `usage` object over `into`. Absent and
 * null fields leave the earlier value: `message_delta` sends nulls for what it does
 * not restate.
 */
export function mergeAnthropicCounts(into: AnthropicCounts, u: JsonObject): void {
  const input = count(u.input_tokens);
  const output = count(u.output_tokens);
  const cacheRead = count(u.cache_read_input_tokens);
  const cacheWrite = count(u.cache_creation_input_tokens);
  const thinking = count(field(u.output_tokens_details, "thinking_tokens"));
  if (input !== undefined) into.input = input;
  if (output !== undefined) into.output = output;
  if (cacheRead !== undefined) into.cacheRead = cacheRead;
  if (cacheWrite !== undefined) into.cacheWrite = cacheWrite;
  if (thinking !== undefined) into.thinking = thinking;
}

/**
 * Anthropic's `input_tokens` excludes cache reads and writes, so both are added back
 * into `prompt`. Thinking is already inside `output_tokens`; newer API versions also
 * break it out as `output_tokens_details.thinking_tokens`, which becomes `reasoning`.
 */
export function anthropicUsage(c: AnthropicCounts): Usage {
  const cacheRead = c.cacheRead ?? 0;
  const cacheWrite = c.cacheWrite ?? 0;
  return {
    prompt: (c.input ?? 0) + cacheRead + cacheWrite,
    completion: c.output ?? 0,
    cacheRead,
    cacheWrite,
    reasoning: c.thinking ?? 0,
  };
}

/** Sums the `tokenCount` of one modality in a Gemini `ModalityTokenCount[]`. */
function modality(details: unknown, name: string): number {
  if (!Array.isArray(details)) return 0;
  let total = 0;
  for (const d of details) if (field(d, "modality") === name) total += n(field(d, "tokenCount"));
  return total;
}

/**
 * Gemini / Vertex AI `usageMetadata`. `promptTokenCount` already includes cached
 * content, while thoughts and tool-use prompt tokens are billed but counted outside
 * `candidatesTokenCount` / `promptTokenCount`, so they are added in.
 */
export function geminiUsage(m: JsonObject): Usage {
  const thoughts = n(m.thoughtsTokenCount);
  return withModalities(
    {
      prompt: n(m.promptTokenCount) + n(m.toolUsePromptTokenCount),
      completion: n(m.candidatesTokenCount) + thoughts,
      cacheRead: n(m.cachedContentTokenCount),
      cacheWrite: 0,
      reasoning: thoughts,
    },
    modality(m.promptTokensDetails, "AUDIO"),
    modality(m.candidatesTokensDetails, "AUDIO"),
    modality(m.promptTokensDetails, "IMAGE"),
    modality(m.candidatesTokensDetails, "IMAGE"),
  );
}

import { field, indexOfBytes, isObject, n, needle, parseObject, withModalities, type JsonObject } from "../json.ts";
import type { StreamUsageTap } from "../format.ts";
import type { Usage } from "../usage.ts";

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
 *
 * `promptTokensDetails` breaks down the whole prompt, cached content included, and
 * `cacheTokensDetails` the cached part: the audio and image priced apart are the
 * uncached ones. Read whole, a cached audio token was charged as a cache read and as
 * audio input, and as many uncached text tokens went free.
 */
export function geminiUsage(m: JsonObject): Usage {
  const thoughts = n(m.thoughtsTokenCount);
  const prompt = n(m.promptTokenCount) + n(m.toolUsePromptTokenCount);
  const cacheRead = Math.min(prompt, n(m.cachedContentTokenCount));
  const uncached = prompt - cacheRead;
  const audio = Math.min(uncached, Math.max(0, modality(m.promptTokensDetails, "AUDIO") - modality(m.cacheTokensDetails, "AUDIO")));
  const image = Math.min(uncached - audio, Math.max(0, modality(m.promptTokensDetails, "IMAGE") - modality(m.cacheTokensDetails, "IMAGE")));
  return withModalities(
    {
      prompt,
      completion: n(m.candidatesTokenCount) + thoughts,
      cacheRead,
      cacheWrite: 0,
      reasoning: thoughts,
    },
    audio,
    modality(m.candidatesTokensDetails, "AUDIO"),
    image,
    modality(m.candidatesTokensDetails, "IMAGE"),
  );
}

/** generateContent, and the JSON array streamGenerateContent returns without `alt=sse`. */
export function geminiUsageFromJson(body: unknown): Usage | undefined {
  if (Array.isArray(body)) {
    // Usage metadata is cumulative across the chunks, so the last one is the total.
    for (let i = body.length - 1; i >= 0; i--) {
      const u = geminiUsageFromJson(body[i]);
      if (u !== undefined) return u;
    }
    return undefined;
  }
  return isObject(body) && isObject(body.usageMetadata) ? geminiUsage(body.usageMetadata) : undefined;
}

const USAGE_METADATA = needle('"usageMetadata"');

/**
 * With `alt=sse` every event is a whole GenerateContentResponse whose `usageMetadata`
 * is cumulative, so the last one seen replaces the earlier ones.
 */
export function geminiTap(): StreamUsageTap {
  let usage: Usage | undefined;
  return {
    onEvent(event) {
      if (!event.data.includes('"usageMetadata"')) return;
      const obj = parseObject(event.data);
      if (obj === undefined) return;
      if (isObject(obj.usageMetadata)) usage = geminiUsage(obj.usageMetadata);
    },
    result: () => (usage === undefined ? undefined : { ...usage }),
    firstNeeded: (bytes) => indexOfBytes(bytes, USAGE_METADATA),
  };
}

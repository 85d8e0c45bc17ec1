import { count, earliest, field, indexOfBytes, isObject, n, needle, parseObject, withModalities, type JsonObject } from "../json.ts";
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

/**
 * The search queries Google Search grounding ran (`groundingMetadata.webSearchQueries`),
 * each once per answer: a stream's later chunks may repeat them.
 */
function addQueries(into: Set<string>, body: unknown): void {
  const candidates = field(body, "candidates");
  if (!Array.isArray(candidates)) return;
  for (const [i, candidate] of candidates.entries()) {
    const queries = field(field(candidate, "groundingMetadata"), "webSearchQueries");
    if (!Array.isArray(queries)) continue;
    const index = count(field(candidate, "index")) ?? i;
    for (const query of queries) if (typeof query === "string") into.add(`${index}\u0000${query}`);
  }
}

/**
 * A grounded call is billed beside its tokens: Gemini 3 per search query, Gemini 2.x
 * once per grounded prompt (the price book says which, WebSearch or GroundedPrompt).
 */
function withGrounding(usage: Usage | undefined, queries: ReadonlySet<string>): Usage | undefined {
  if (usage === undefined || queries.size === 0) return usage;
  return { ...usage, webSearches: queries.size, groundedPrompts: 1 };
}

/** generateContent, and the JSON array streamGenerateContent returns without `alt=sse`. */
export function geminiUsageFromJson(body: unknown): Usage | undefined {
  const queries = new Set<string>();
  if (Array.isArray(body)) {
    for (const chunk of body) addQueries(queries, chunk);
    // Usage metadata is cumulative across the chunks, so the last one is the total.
    for (let i = body.length - 1; i >= 0; i--) {
      const chunk = body[i];
      if (isObject(chunk) && isObject(chunk.usageMetadata)) return withGrounding(geminiUsage(chunk.usageMetadata), queries);
    }
    return undefined;
  }
  addQueries(queries, body);
  return isObject(body) && isObject(body.usageMetadata) ? withGrounding(geminiUsage(body.usageMetadata), queries) : undefined;
}

const USAGE_METADATA = needle('"usageMetadata"');
const SEARCH_QUERIES = needle('"webSearchQueries"');

/**
 * With `alt=sse` every event is a whole GenerateContentResponse whose `usageMetadata`
 * is cumulative, so the last one seen replaces the earlier ones; grounding queries are
 * gathered from every event.
 */
export function geminiTap(): StreamUsageTap {
  let usage: Usage | undefined;
  const queries = new Set<string>();
  return {
    onEvent(event) {
      const grounded = event.data.includes('"webSearchQueries"');
      if (!grounded && !event.data.includes('"usageMetadata"')) return;
      const obj = parseObject(event.data);
      if (obj === undefined) return;
      if (grounded) addQueries(queries, obj);
      if (isObject(obj.usageMetadata)) usage = geminiUsage(obj.usageMetadata);
    },
    result: () => withGrounding(usage === undefined ? undefined : { ...usage }, queries),
    firstNeeded: (bytes) => earliest(indexOfBytes(bytes, USAGE_METADATA), indexOfBytes(bytes, SEARCH_QUERIES)),
  };
}

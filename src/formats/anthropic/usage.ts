import { count, earliest, field, indexOfBytes, isObject, needle, parseObject, type JsonObject } from "../json.ts";
import type { StreamUsageTap } from "../format.ts";
import type { Usage } from "../usage.ts";

/** Raw Anthropic counts, kept apart so a stream can override them field by field. */
export interface AnthropicCounts {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  /** `cache_creation`'s breakdown by how long the entry is kept. */
  cacheWrite5m?: number;
  cacheWrite1h?: number;
  thinking?: number;
  /** `server_tool_use.web_search_requests`: searches, billed per search. */
  webSearches?: number;
  /** `speed`: "fast" when fast mode served the call (premium rates). */
  speed?: string;
  /** `inference_geo`: where inference ran ("global", or one geography at a premium). */
  geo?: string;
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
  const cacheWrite5m = count(field(u.cache_creation, "ephemeral_5m_input_tokens"));
  const cacheWrite1h = count(field(u.cache_creation, "ephemeral_1h_input_tokens"));
  const webSearches = count(field(u.server_tool_use, "web_search_requests"));
  if (input !== undefined) into.input = input;
  if (webSearches !== undefined) into.webSearches = webSearches;
  if (typeof u.speed === "string") into.speed = u.speed;
  if (typeof u.inference_geo === "string") into.geo = u.inference_geo;
  if (cacheWrite5m !== undefined) into.cacheWrite5m = cacheWrite5m;
  if (cacheWrite1h !== undefined) into.cacheWrite1h = cacheWrite1h;
  if (output !== undefined) into.output = output;
  if (cacheRead !== undefined) into.cacheRead = cacheRead;
  if (cacheWrite !== undefined) into.cacheWrite = cacheWrite;
  if (thinking !== undefined) into.thinking = thinking;
}

/**
 * Anthropic's `input_tokens` excludes cache reads and writes, so both are added back
 * into `prompt`. Thinking is already inside `output_tokens`; newer API versions also
 * break it out as `output_tokens_details.thinking_tokens`, which becomes `reasoning`.
 * The cache writes kept an hour (`cache_creation.ephemeral_1h_input_tokens`, given in
 * `message_start` only when streamed) become `cacheWrite1h`.
 */
export function anthropicUsage(c: AnthropicCounts): Usage {
  const cacheRead = c.cacheRead ?? 0;
  // `cache_creation_input_tokens` is the sum of `cache_creation`'s two TTLs; either may come alone.
  const cacheWrite = c.cacheWrite ?? (c.cacheWrite5m ?? 0) + (c.cacheWrite1h ?? 0);
  const usage: Usage = {
    prompt: (c.input ?? 0) + cacheRead + cacheWrite,
    completion: c.output ?? 0,
    cacheRead,
    cacheWrite,
    reasoning: c.thinking ?? 0,
  };
  // An hour's cache write costs 2x the input price, a 5-minute one 1.25x: priced apart (CacheWrite1h).
  const hour = Math.min(cacheWrite, c.cacheWrite1h ?? 0);
  if (hour > 0) usage.cacheWrite1h = hour;
  // Web searches cost a fee each beside their tokens; web fetches only their tokens.
  if ((c.webSearches ?? 0) > 0) usage.webSearches = c.webSearches;
  if (c.speed === "fast") usage.fast = true;
  if (c.geo !== undefined && c.geo !== "global") usage.regional = true;
  return usage;
}

/** Messages, and `count_tokens` (which has only an input count). */
export function anthropicUsageFromJson(body: unknown): Usage | undefined {
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

const USAGE = needle('"usage"');
const MESSAGE_START = needle("message_start");
const SEARCH_RESULT = needle('"web_search_tool_result"');

/** Whether an event starts the result block of a search that ran (an error result is not billed). */
function isSearchResult(obj: JsonObject): boolean {
  if (obj.type !== "content_block_start") return false;
  const block = obj.content_block;
  return isObject(block) && block.type === "web_search_tool_result" && Array.isArray(block.content);
}

/**
 * `message_start` gives the input side and an initial output count; each
 * `message_delta` restates cumulative counts, so its fields replace, never add to,
 * what was known. The searches whose results were delivered are counted as they
 * come: a stream cut before its `message_delta` still ran them, and they are billed.
 */
export function anthropicTap(): StreamUsageTap {
  const counts: AnthropicCounts = {};
  let seen = false;
  let searchResults = 0;
  return {
    onEvent(event) {
      const data = event.data;
      const result = data.includes('"web_search_tool_result"');
      if (!result && !data.includes('"usage"') && !data.includes("message_start")) return;
      const obj = parseObject(data);
      if (obj === undefined) return;
      if (result && isSearchResult(obj)) searchResults++;
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
    result: () => (seen ? anthropicUsage({ ...counts, webSearches: Math.max(counts.webSearches ?? 0, searchResults) }) : undefined),
    firstNeeded: (bytes) => earliest(earliest(indexOfBytes(bytes, USAGE), indexOfBytes(bytes, MESSAGE_START)), indexOfBytes(bytes, SEARCH_RESULT)),
  };
}

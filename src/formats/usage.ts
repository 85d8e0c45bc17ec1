/**
 * Token counts of one call, normalised across the three families so that pricing
 * never counts a token twice:
 *
 * - `prompt` is every input token, cached or not (OpenAI's `prompt_tokens` meaning);
 *   `cacheRead` and `cacheWrite` are the parts of `prompt` read from / written to a
 *   prompt cache. Uncached input = prompt − cacheRead − cacheWrite.
 * - `completion` is every output token including reasoning; `reasoning` is the part
 *   of `completion` spent thinking. Visible output = completion − reasoning.
 *
 * Family notes: Anthropic's `input_tokens` excludes cache reads and writes, so they are
 * added into `prompt`; Gemini's `promptTokenCount` already includes cached content
 * and its `thoughtsTokenCount` is output that `candidatesTokenCount` excludes.
 */
export interface Usage {
  prompt: number;
  completion: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
  /**
   * The part of `cacheWrite` written for an hour (Anthropic `ttl: "1h"`), which Anthropic
   * bills at twice the input price where a 5-minute write costs 1.25 times it.
   */
  cacheWrite1h?: number;
  /** Audio input tokens, part of `prompt` (OpenAI audio models). */
  audioPrompt?: number;
  /** Audio output tokens, part of `completion`. */
  audioCompletion?: number;
  /** Image input tokens, part of `prompt`. */
  imagePrompt?: number;
  /** Image output tokens, part of `completion` (image generation models). */
  imageCompletion?: number;
  /**
   * Calls of a provider's own tools billed per call on top of their tokens (not tokens):
   * web searches (Anthropic `server_tool_use.web_search_requests`, OpenAI Responses
   * `web_search_call` items, Gemini grounding's `webSearchQueries`) and file searches
   * (`file_search_call` items).
   */
  webSearches?: number;
  fileSearches?: number;
  /** Answers grounded by Google Search, which Gemini 2.x bills once per prompt (not per query). */
  groundedPrompts?: number;
  /** Served in Anthropic's fast mode (`usage.speed` "fast"): its tokens cost FastMultiplier times. */
  fast?: boolean;
  /** The OpenAI service tier that served the call (`service_tier`), when not the standard one. */
  tier?: "priority" | "flex";
  /** Run in one geography at the client's asking (Anthropic `usage.inference_geo` other than "global"), priced at RegionalMultiplier. */
  regional?: boolean;
}

export const ZERO_USAGE: Readonly<Usage> = Object.freeze({ prompt: 0, completion: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 });

/** Where a usage record's numbers came from. */
export type UsageSource = "upstream" | "estimated";

/**
 * The most tokens one count of a call can credibly hold: a hundred times the largest
 * context window offered (10 million), whatever the answers asked for. An upstream
 * reporting more, or a count that is not a whole non-negative number (1e308, a string
 * of 26 digits, a fraction), is misbehaving: charged as is, 1e308 tokens cost Infinity
 * and the account's balance became unreadable.
 */
export const MAX_CREDIBLE_TOKENS = 1_000_000_000;

const FIELDS = ["prompt", "completion", "cacheRead", "cacheWrite", "cacheWrite1h", "reasoning", "audioPrompt", "audioCompletion", "imagePrompt", "imageCompletion", "webSearches", "fileSearches", "groundedPrompts"] as const;

const credible = (value: number | undefined) => value === undefined || (Number.isSafeInteger(value) && value >= 0 && value <= MAX_CREDIBLE_TOKENS);

/** Whether every count of a usage is a whole number from 0 to MAX_CREDIBLE_TOKENS. */
export function credibleUsage(usage: Usage): boolean {
  for (const field of FIELDS) if (!credible(usage[field])) return false;
  return true;
}

/** A usage's counts brought within 0 to MAX_CREDIBLE_TOKENS, whole (what is not a number is 0). */
export function clampedUsage(usage: Usage): Usage {
  const out: Usage = { ...usage };
  for (const field of FIELDS) {
    const value = usage[field];
    if (value === undefined || credible(value)) continue;
    out[field] = Number.isNaN(value) || value <= 0 ? 0 : Math.min(Math.ceil(value), MAX_CREDIBLE_TOKENS);
  }
  return out;
}

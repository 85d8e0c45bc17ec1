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
  /** Audio input tokens, part of `prompt` (OpenAI audio models). */
  audioPrompt?: number;
  /** Audio output tokens, part of `completion`. */
  audioCompletion?: number;
  /** Image input tokens, part of `prompt`. */
  imagePrompt?: number;
  /** Image output tokens, part of `completion` (image generation models). */
  imageCompletion?: number;
}

export const ZERO_USAGE: Readonly<Usage> = Object.freeze({ prompt: 0, completion: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 });

/** Where a usage record's numbers came from. */
export type UsageSource = "upstream" | "estimated";

import type { Usage } from "../../formats/usage.ts";
import { MAX_FACTOR, type ChatPrice } from "./schema.ts";

/** Nano-credits per (token × USD-per-1M-tokens): 1e9 nanos per USD ÷ 1e6 tokens. */
const NANOS_PER_TOKEN_PRICE = 1000;
const NANOS_PER_USD = 1e9;

/**
 * Cost of a token-billed call in nano-credits. Each token is priced once:
 *
 * - input: cache reads at CachedText, cache writes at CacheWrite (those kept an hour at
 *   CacheWrite1h), audio at InputAudio, images at InputImage, the rest at InputText;
 * - output: reasoning at ReasonText, audio at OutputAudio, images at OutputImage, the
 *   rest at OutputText.
 *
 * A prompt above LongContextAbove tokens costs LongInputFactor times every input price
 * and LongOutputFactor times every output price.
 * A call served in Anthropic's fast mode costs FastMultiplier times its token prices,
 * one OpenAI served at the priority or flex tier PriorityMultiplier or FlexMultiplier times,
 * one Anthropic kept in one geography (`inference_geo`) RegionalMultiplier times.
 * Web and file searches cost WebSearch and FileSearch each, a Gemini answer grounded by
 * Google Search GroundedPrompt (USD per call; none without).
 * A missing member falls back to the text price of its side (a cache read without
 * CachedText costs InputText; reasoning without ReasonText costs OutputText; an hour's
 * cache write without CacheWrite1h costs CacheWrite, else InputText). The
 * account's Rates multiplies the whole.
 */
export function tokenCostNanos(usage: Usage, price: ChatPrice, rates: number): number {
  const input = price.InputText ?? 0;
  const output = price.OutputText ?? 0;
  const cacheRead = Math.max(0, usage.cacheRead);
  const cacheWrite = Math.max(0, usage.cacheWrite);
  const cacheWrite1h = Math.min(cacheWrite, Math.max(0, usage.cacheWrite1h ?? 0));
  const audioIn = Math.max(0, usage.audioPrompt ?? 0);
  const imageIn = Math.max(0, usage.imagePrompt ?? 0);
  const textIn = Math.max(0, usage.prompt - cacheRead - cacheWrite - audioIn - imageIn);
  const reasoning = Math.max(0, usage.reasoning);
  const audioOut = Math.max(0, usage.audioCompletion ?? 0);
  const imageOut = Math.max(0, usage.imageCompletion ?? 0);
  const textOut = Math.max(0, usage.completion - reasoning - audioOut - imageOut);
  const usdIn =
    textIn * input +
    cacheRead * (price.CachedText ?? input) +
    (cacheWrite - cacheWrite1h) * (price.CacheWrite ?? input) +
    cacheWrite1h * (price.CacheWrite1h ?? price.CacheWrite ?? input) +
    audioIn * (price.InputAudio ?? input) +
    imageIn * (price.InputImage ?? input);
  const usdOut =
    textOut * output +
    reasoning * (price.ReasonText ?? output) +
    audioOut * (price.OutputAudio ?? output) +
    imageOut * (price.OutputImage ?? output);
  const long = longContextFactors(price, usage.prompt);
  // Anthropic's fast mode and geography, OpenAI's priority and flex tiers scale every token rate (not the per-call fees).
  const speed = (usage.fast ? (price.FastMultiplier ?? 1) : 1) * tierFactor(price, usage.tier) * (usage.regional ? (price.RegionalMultiplier ?? 1) : 1);
  const usd1m = usdIn * combined(long.input, speed) + usdOut * combined(long.output, speed);
  // Searches are priced per call (USD each), beside the tokens they brought in.
  const perCall =
    Math.max(0, usage.webSearches ?? 0) * (price.WebSearch ?? 0) +
    Math.max(0, usage.fileSearches ?? 0) * (price.FileSearch ?? 0) +
    Math.max(0, usage.groundedPrompts ?? 0) * (price.GroundedPrompt ?? 0);
  return Math.round((usd1m * NANOS_PER_TOKEN_PRICE + perCall * NANOS_PER_USD) * rates);
}

/**
 * The factors of a call's input and output prices: a prompt (cache reads and writes
 * included) above LongContextAbove tokens makes every price of the call dearer, as
 * Anthropic's and Google's long-context rates do (2x input, 1.5x output).
 */
export function longContextFactors(price: ChatPrice, promptTokens: number): { input: number; output: number } {
  if (price.LongContextAbove === undefined || promptTokens <= price.LongContextAbove) return { input: 1, output: 1 };
  return { input: price.LongInputFactor ?? 1, output: price.LongOutputFactor ?? 1 };
}

/**
 * Factors multiplied together, at most MAX_FACTOR: the providers' dearest combination is
 * 13.2 (fast mode 6, long context 2, one geography 1.1), and the bound keeps a cost within
 * the range its column holds whatever an owner sets.
 */
export function combined(...factors: number[]): number {
  return Math.min(MAX_FACTOR, factors.reduce((product, factor) => product * factor, 1));
}

/** The factor of an OpenAI service tier's prices (PriorityMultiplier, FlexMultiplier); 1 for the standard tier. */
export function tierFactor(price: ChatPrice, tier: string | undefined): number {
  if (tier === "priority") return price.PriorityMultiplier ?? 1;
  if (tier === "flex") return price.FlexMultiplier ?? 1;
  return 1;
}

/** Cost of a priced call (image, second of video, minute of audio) in nano-credits. */
export function unitCostNanos(unitPriceUsd: number, units: number, rates: number): number {
  return Math.round(unitPriceUsd * units * NANOS_PER_USD * rates);
}

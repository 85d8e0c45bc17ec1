import { badRequest } from "../core/errors.ts";
import type { Endpoint, OutputAsked } from "../formats/format.ts";
import { formatOf } from "../formats/registry.ts";
import type { Usage } from "../formats/usage.ts";
import { combined, longContextFactors, tierFactor, tokenCostNanos, unitCostNanos } from "./pricing/cost.ts";
import type { PriceBook } from "./pricing/price-book.ts";
import type { ChatPrice, Section } from "./pricing/schema.ts";
import { toolCallsWorstUsd, withChatSearch } from "./tool-call-bound.ts";
import { inlineImageCount, inputIsUnsized } from "./unsized-input.ts";

/** A model's maximum output when neither the catalog nor PRICING names it (`MaxOutput`). */
export const DEFAULT_MAX_OUTPUT_TOKENS = 32_768;
/** A model's context window when neither the catalog nor PRICING names it (`ContextWindow`). */
export const DEFAULT_CONTEXT_WINDOW = 200_000;
/**
 * Input tokens a provider may add to what the body holds (the system prompt that comes
 * with tool use, chat templates). A token spans at least one byte in every provider's
 * tokenizer, so body bytes plus this bound the input of a body that holds its content.
 */
export const PROVIDER_INPUT_OVERHEAD = 1_024;
/**
 * Input tokens reserved for each image inline in a body, beside its bytes: the most one
 * image costs whatever its size (Gemini 3's media resolutions up to 2,240 an image).
 */
export const TOKENS_PER_INLINE_IMAGE = 4_096;
/** Answers one call may ask for (`n`, `candidateCount`) counted in its worst case, at most. */
const MAX_CHOICES = 128;
/** Output tokens assumed per generated image when an image model is priced by tokens. */
const TOKENS_PER_IMAGE = 8192;
/** Seconds of audio per body byte when a transcription reports no duration (about 128 kbit/s). */
const AUDIO_SECONDS_PER_BYTE = 1 / 16_000;
/**
 * Seconds of audio per body byte a transcription's reservation assumes: 2 kbit/s, below
 * what any codec the audio endpoints take needs for speech (Opus from 6 kbit/s, MP3 and
 * AAC from 8, Speex from 2.15). A voice note coded at 16 kbit/s lasts eight times what
 * the 128 kbit/s estimate says, and its reported duration is what is charged.
 */
const AUDIO_RESERVE_SECONDS_PER_BYTE = 1 / 250;
/** Spoken characters per second when a speech call's duration has to be estimated. */
const SPEECH_CHARS_PER_SECOND = 15;
/** Video length assumed when a generation request names none. */
export const DEFAULT_VIDEO_SECONDS = 5;

/** What a call will be charged: its worst case up front, its actual cost at the end. */
export interface BillingPlan {
  /** Reserved before forwarding (nano-credits). */
  reserve: number;
  /** Tokens reserved in the token windows (TPM, TPH, TPD) before forwarding: the call's most. */
  tokens: number;
  /** A token-priced call's most tokens on each side: an estimate never exceeds them. */
  bound?: TokenBound;
  /**
   * The actual cost from what the call reported (nano-credits). `extra` holds the
   * quantities of an answered call (images, seconds; possibly none); it is absent when
   * the upstream never answered 2xx, and a call priced per unit then costs nothing.
   */
  settle(usage: Usage, extra: Readonly<Record<string, number>> | undefined): number;
}

export interface BillingInput {
  endpoint: Endpoint;
  model: string;
  prices: PriceBook;
  json: Record<string, unknown> | undefined;
  /** Text fields of a multipart body. */
  fields: ReadonlyMap<string, string> | undefined;
  bodyBytes: number;
  rates: number;
}

const FREE: BillingPlan = { reserve: 0, tokens: 0, settle: () => 0 };

function unpriced(model: string, section: Section, example: string, what = ""): never {
  throw badRequest(
    `Model ${model} has no price${what}, so it cannot be served. An owner can price it with PUT /x-config {"PRICING":{"${section}":{"${model}":${example}}}}`,
    "model",
    "model_not_priced",
  );
}

function number(value: unknown): number | undefined {
  const n = typeof value === "string" ? Number(value) : value;
  return typeof n === "number" && Number.isFinite(n) && n > 0 ? n : undefined;
}

/**
 * Prompts of a legacy completion: `prompt` may be an array of prompts (strings or token
 * arrays), each answered `n` times; an array of numbers is one tokenized prompt.
 */
function prompts(json: Record<string, unknown> | undefined): number {
  const prompt = json?.prompt;
  if (!Array.isArray(prompt) || prompt.length === 0 || typeof prompt[0] === "number") return 1;
  return prompt.length;
}

const atMostChoices = (n: number) => Math.min(MAX_CHOICES, Math.max(1, Math.floor(n)));

/** Where an endpoint does not say which spellings its upstreams read (see `Endpoint.outputLimit`). */
const COMMON_OUTPUT_LIMITS = ["max_tokens", "max_completion_tokens", "max_output_tokens"] as const;

/**
 * What a call asks of its output in the spellings `fields` its upstreams read: its limit
 * (the largest given: the reservation is an upper bound, and an upstream may obey either
 * of two spellings) and the answers generated, each of which may reach it: `n` (a legacy
 * completion's `best_of` candidates when more, generated and billed though only `n`
 * are returned) for each of its prompts.
 */
function commonOutputAsked(json: Record<string, unknown> | undefined, fields: readonly string[]): OutputAsked {
  let limit: number | undefined;
  for (const field of fields) {
    const value = number(json?.[field]);
    if (value !== undefined && (limit === undefined || value > limit)) limit = value;
  }
  const n = atMostChoices(number(json?.n) ?? 1);
  return { limit: limit === undefined ? undefined : Math.ceil(limit), answers: Math.max(n, atMostChoices(number(json?.best_of) ?? 1)) * prompts(json) };
}

/** What a call asks of its output, read as its family and endpoint name it (formats/). */
function outputAsked(endpoint: OutputSpelling, json: Record<string, unknown> | undefined): OutputAsked {
  const own = formatOf(endpoint.family).outputAsked?.(json);
  return own ? { limit: own.limit, answers: atMostChoices(own.answers) } : commonOutputAsked(json, endpoint.outputLimit ?? COMMON_OUTPUT_LIMITS);
}

/** How an endpoint's calls name their output limit. */
type OutputSpelling = Pick<Endpoint, "family" | "outputLimit">;

/** The most tokens a call can use on each side (docs/api.md, "Reservation"). */
export interface TokenBound {
  input: number;
  output: number;
}

/**
 * A call's worst case in tokens. Input: body bytes plus the provider's overhead and an
 * allowance for each inline image, at most the context window; the whole context window when the body points at content
 * it does not hold (`unsized`). Output: the request's max_tokens (or its family's
 * equivalent) else the model's maximum output, times the answers asked for.
 */
export function tokenBound(price: ChatPrice, json: Record<string, unknown> | undefined, bodyBytes: number, unsized: boolean, endpoint: OutputSpelling = { family: "openai" }): TokenBound {
  const context = price.ContextWindow ?? DEFAULT_CONTEXT_WINDOW;
  const input = unsized ? context : Math.min(context, bodyBytes + PROVIDER_INPUT_OVERHEAD + TOKENS_PER_INLINE_IMAGE * inlineImageCount(json));
  const asked = outputAsked(endpoint, json);
  const output = (asked.limit ?? price.MaxOutput ?? DEFAULT_MAX_OUTPUT_TOKENS) * asked.answers;
  return { input, output };
}

/**
 * Tokens at the dearest rate of each side: the most a call of this size can cost; times
 * FastMultiplier when it asks for Anthropic's fast mode (`speed: "fast"`), times
 * PriorityMultiplier when it asks OpenAI's `service_tier: "priority"`, times
 * RegionalMultiplier when it asks Anthropic for one `inference_geo`, and at the
 * long-context factors when its input bound passes LongContextAbove.
 */
function dearestNanos(price: ChatPrice, bound: TokenBound, rates: number, json?: Record<string, unknown>): number {
  const input = Math.max(price.InputText ?? 0, price.CacheWrite ?? 0, price.CacheWrite1h ?? 0, price.InputAudio ?? 0, price.InputImage ?? 0);
  const output = Math.max(price.OutputText ?? 0, price.ReasonText ?? 0, price.OutputAudio ?? 0, price.OutputImage ?? 0);
  // Asked for a dearer tier, the call may be served at it (a cheaper one may not be granted).
  const regional = typeof json?.inference_geo === "string" && json.inference_geo !== "global";
  const speed =
    (json?.speed === "fast" ? (price.FastMultiplier ?? 1) : 1) *
    Math.max(1, json?.service_tier === "priority" ? tierFactor(price, "priority") : 1) *
    Math.max(1, regional ? (price.RegionalMultiplier ?? 1) : 1);
  // A call whose input may pass LongContextAbove may be charged the long-context rates.
  const long = longContextFactors(price, bound.input);
  return Math.round((bound.input * input * combined(long.input, speed) + bound.output * output * combined(long.output, speed)) * 1000 * rates);
}

/** The reservation of a token-priced call of `endpoint` (its output limit's spellings): its token bound at the dearest price of each side and its searches' worst case, × Rates. */
export function worstCaseNanos(price: ChatPrice, json: Record<string, unknown> | undefined, bodyBytes: number, rates: number, unsized = false, endpoint?: OutputSpelling): number {
  return dearestNanos(price, tokenBound(price, json, bodyBytes, unsized, endpoint), rates, json) + unitCostNanos(toolCallsWorstUsd(price, json), 1, rates);
}

function tokenPlan(price: ChatPrice, input: BillingInput, bound: TokenBound): BillingPlan {
  return {
    // Searches are billed per call beside the tokens: their worst case is reserved too.
    reserve: dearestNanos(price, bound, input.rates, input.json) + unitCostNanos(toolCallsWorstUsd(price, input.json), 1, input.rates),
    tokens: bound.input + bound.output,
    bound,
    settle: (usage) => tokenCostNanos(withChatSearch(usage, input.json), price, input.rates),
  };
}

/** Whether the call's input is held upstream or referenced rather than in its body. */
const unsized = (input: BillingInput) => input.endpoint.statefulInput === true || inputIsUnsized(input.json);

const param = (input: BillingInput, name: string) => input.json?.[name] ?? input.fields?.get(name);

/**
 * Chooses how a call is priced from its endpoint and model (docs/api.md, "Pricing"):
 * tokens by ChatPricing; images per image and size by ImgPricing (tokens for image
 * models only ChatPricing prices); audio per minute by AudioPricing (tokens when only
 * ChatPricing has the model); video per second by VideoPricing. An unpriced model is
 * refused rather than served free.
 */
export function planBilling(input: BillingInput): BillingPlan {
  const { endpoint, model, prices, rates } = input;
  switch (endpoint.billing) {
    case "free":
      return FREE;
    case "image": {
      const count = number(param(input, "n")) ?? 1;
      const img = prices.lookup("ImgPricing", model);
      if (img) {
        const size = String(param(input, "size") ?? "1024x1024");
        // A size its entry does not list costs Call; with no Call either it has no price (never free).
        const each = img.Sizes?.[size] ?? img.Call;
        if (each === undefined) unpriced(model, "ImgPricing", `{"Call":<USD per image>}`, ` for size ${size}`);
        return {
          reserve: unitCostNanos(each, count, rates),
          tokens: 0,
          settle: (_usage, extra) => (extra ? unitCostNanos(each, extra.images ?? count, rates) : 0),
        };
      }
      const tokens = prices.lookup("ChatPricing", model);
      if (!tokens) unpriced(model, "ImgPricing", '{"Call":<USD per image>}');
      const bound = tokenBound(tokens, input.json, input.bodyBytes, unsized(input), endpoint);
      return tokenPlan(tokens, input, { input: bound.input, output: TOKENS_PER_IMAGE * count });
    }
    case "audio": {
      const audio = prices.lookup("AudioPricing", model);
      if (audio) {
        const minutes = (input.bodyBytes * AUDIO_SECONDS_PER_BYTE) / 60;
        const perMinute = audio.PerMinute ?? 0;
        return {
          // The reported duration is charged, and compressed speech lasts far longer than
          // 128 kbit/s says: reserve the longest the upload can plausibly play.
          reserve: unitCostNanos(perMinute, (input.bodyBytes * AUDIO_RESERVE_SECONDS_PER_BYTE) / 60, rates),
          tokens: 0,
          settle: (_usage, extra) => (extra ? unitCostNanos(perMinute, (extra.seconds ?? minutes * 60) / 60, rates) : 0),
        };
      }
      const tokens = prices.lookup("ChatPricing", model);
      if (!tokens) unpriced(model, "AudioPricing", '{"PerMinute":<USD>}');
      return tokenPlan(tokens, input, tokenBound(tokens, input.json, input.bodyBytes, false, endpoint));
    }
    case "speech": {
      const audio = prices.lookup("AudioPricing", model);
      if (!audio) unpriced(model, "AudioPricing", '{"PerMinute":<USD>}');
      const text = String(param(input, "input") ?? "");
      const minutes = text.length / SPEECH_CHARS_PER_SECOND / 60;
      const cost = unitCostNanos(audio.PerMinute ?? 0, minutes, rates);
      return { reserve: cost, tokens: 0, settle: (_usage, extra) => (extra ? cost : 0) };
    }
    case "video": {
      const video = prices.lookup("VideoPricing", model);
      if (!video) unpriced(model, "VideoPricing", '{"PerSecond":<USD>}');
      const seconds = number(param(input, "seconds")) ?? number(param(input, "duration")) ?? DEFAULT_VIDEO_SECONDS;
      const cost = unitCostNanos(video.PerSecond ?? 0, seconds, rates);
      return { reserve: cost, tokens: 0, settle: (_usage, extra) => (extra ? cost : 0) };
    }
    default: {
      const price = prices.lookup("ChatPricing", model);
      if (!price) unpriced(model, "ChatPricing", '{"InputText":<USD per 1M>,"OutputText":<USD per 1M>}');
      const isUnsized = unsized(input);
      const bound = tokenBound(price, input.json, input.bodyBytes, isUnsized, endpoint);
      if (!endpoint.embedding) return tokenPlan(price, input, bound);
      // An embedding answers with vectors: it has no output to bound. Its ContextWindow
      // bounds each input, not the call: a batch (an `input` array, Gemini's
      // batchEmbedContents) holds many, so only its bytes bound a body that holds them.
      return tokenPlan(price, input, { input: isUnsized ? bound.input : input.bodyBytes + PROVIDER_INPUT_OVERHEAD, output: 0 });
    }
  }
}

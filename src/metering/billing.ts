import { badRequest } from "../core/errors.ts";
import type { Endpoint } from "../gateway/endpoints.ts";
import type { Usage } from "../gateway/usage/types.ts";
import { tokenCostNanos, unitCostNanos } from "./pricing/cost.ts";
import type { PriceBook } from "./pricing/price-book.ts";
import type { ChatPrice, Section } from "./pricing/schema.ts";

/** Output tokens assumed for the worst case when a call sets no maximum. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;
/** Input tokens assumed per body byte for the worst case: generous, as images and JSON inflate bytes. */
const INPUT_TOKENS_PER_BYTE = 1 / 3;
/** Output tokens assumed per generated image when an image model is priced by tokens. */
const TOKENS_PER_IMAGE = 8192;
/** Seconds of audio per body byte when a transcription reports no duration (about 128 kbit/s). */
const AUDIO_SECONDS_PER_BYTE = 1 / 16_000;
/** Spoken characters per second when a speech call's duration has to be estimated. */
const SPEECH_CHARS_PER_SECOND = 15;
/** Video length assumed when a generation request names none. */
export const DEFAULT_VIDEO_SECONDS = 5;

/** What a call will be charged: its worst case up front, its actual cost at the end. */
export interface BillingPlan {
  /** Reserved before forwarding (nano-credits). */
  reserve: number;
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

const FREE: BillingPlan = { reserve: 0, settle: () => 0 };

function unpriced(model: string, section: Section, example: string): never {
  throw badRequest(
    `Model ${model} has no price, so it cannot be served. An owner can price it with PUT /x-config {"PRICING":{"${section}":{"${model}":${example}}}}`,
    "model",
    "model_not_priced",
  );
}

function number(value: unknown): number | undefined {
  const n = typeof value === "string" ? Number(value) : value;
  return typeof n === "number" && Number.isFinite(n) && n > 0 ? n : undefined;
}

function maxOutputTokens(json: Record<string, unknown> | undefined): number {
  const config = json?.generationConfig as Record<string, unknown> | undefined;
  for (const value of [json?.max_tokens, json?.max_completion_tokens, json?.max_output_tokens, config?.maxOutputTokens]) {
    const n = number(value);
    if (n !== undefined) return n;
  }
  return DEFAULT_MAX_OUTPUT_TOKENS;
}

/** Tokens at the dearest rate of each side: the most a call of this size can cost. */
function dearestNanos(price: ChatPrice, inputTokens: number, outputTokens: number, rates: number): number {
  const input = Math.max(price.InputText ?? 0, price.CacheWrite ?? 0, price.InputAudio ?? 0, price.InputImage ?? 0);
  const output = Math.max(price.OutputText ?? 0, price.ReasonText ?? 0, price.OutputAudio ?? 0, price.OutputImage ?? 0);
  return Math.round((inputTokens * input + outputTokens * output) * 1000 * rates);
}

/**
 * The reservation rule for token-priced calls: ceil(body bytes ÷ 3) input tokens at the
 * dearest input price, plus max_tokens (or its family's equivalent, else 4096) output
 * tokens at the dearest output price, times Rates.
 */
export function worstCaseNanos(price: ChatPrice, json: Record<string, unknown> | undefined, bodyBytes: number, rates: number): number {
  return dearestNanos(price, Math.ceil(bodyBytes * INPUT_TOKENS_PER_BYTE), maxOutputTokens(json), rates);
}

function tokenPlan(price: ChatPrice, input: BillingInput, outputTokens: number): BillingPlan {
  return {
    reserve: dearestNanos(price, Math.ceil(input.bodyBytes * INPUT_TOKENS_PER_BYTE), outputTokens, input.rates),
    settle: (usage) => tokenCostNanos(usage, price, input.rates),
  };
}

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
        const each = img.Sizes?.[size] ?? img.Call ?? 0;
        return {
          reserve: unitCostNanos(each, count, rates),
          settle: (_usage, extra) => (extra ? unitCostNanos(each, extra.images ?? count, rates) : 0),
        };
      }
      const tokens = prices.lookup("ChatPricing", model);
      if (!tokens) unpriced(model, "ImgPricing", '{"Call":<USD per image>}');
      return tokenPlan(tokens, input, TOKENS_PER_IMAGE * count);
    }
    case "audio": {
      const audio = prices.lookup("AudioPricing", model);
      if (audio) {
        const minutes = (input.bodyBytes * AUDIO_SECONDS_PER_BYTE) / 60;
        const perMinute = audio.PerMinute ?? 0;
        return {
          // A reported duration may exceed the size estimate: reserve twice the estimate.
          reserve: unitCostNanos(perMinute, minutes * 2, rates),
          settle: (_usage, extra) => (extra ? unitCostNanos(perMinute, (extra.seconds ?? minutes * 60) / 60, rates) : 0),
        };
      }
      const tokens = prices.lookup("ChatPricing", model);
      if (!tokens) unpriced(model, "AudioPricing", '{"PerMinute":<USD>}');
      return tokenPlan(tokens, input, maxOutputTokens(input.json));
    }
    case "speech": {
      const audio = prices.lookup("AudioPricing", model);
      if (!audio) unpriced(model, "AudioPricing", '{"PerMinute":<USD>}');
      const text = String(param(input, "input") ?? "");
      const minutes = text.length / SPEECH_CHARS_PER_SECOND / 60;
      const cost = unitCostNanos(audio.PerMinute ?? 0, minutes, rates);
      return { reserve: cost, settle: (_usage, extra) => (extra ? cost : 0) };
    }
    case "video": {
      const video = prices.lookup("VideoPricing", model);
      if (!video) unpriced(model, "VideoPricing", '{"PerSecond":<USD>}');
      const seconds = number(param(input, "seconds")) ?? number(param(input, "duration")) ?? DEFAULT_VIDEO_SECONDS;
      const cost = unitCostNanos(video.PerSecond ?? 0, seconds, rates);
      return { reserve: cost, settle: (_usage, extra) => (extra ? cost : 0) };
    }
    default: {
      const price = prices.lookup("ChatPricing", model);
      if (!price) unpriced(model, "ChatPricing", '{"InputText":<USD per 1M>,"OutputText":<USD per 1M>}');
      return tokenPlan(price, input, maxOutputTokens(input.json));
    }
  }
}

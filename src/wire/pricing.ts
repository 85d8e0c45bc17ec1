/**
 * Prices on the wire: the catalog, the PRICING configuration item and `GET /x-pricing`
 * share one structure, section → model pattern → prices. Prices are USD (per 1M
 * tokens, per image, minute, second or call); ChatPricing's ContextWindow and
 * MaxOutput are token counts. The PRICING item is checked by its own reader
 * (metering/pricing/schema.ts), whose messages name the entry at fault.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Count } from "./common.ts";

const Price = () => Type.Optional(Type.Number({ minimum: 0 }));

/** Token prices in USD per 1M tokens. Missing members fall back as `cost.ts` documents. */
export const ChatPrice = Type.Object({
  InputText: Price(),
  OutputText: Price(),
  CachedText: Price(),
  CacheWrite: Price(),
  /** A cache write kept an hour (Anthropic `ttl: "1h"`); without it, CacheWrite. */
  CacheWrite1h: Price(),
  ReasonText: Price(),
  InputAudio: Price(),
  OutputAudio: Price(),
  InputImage: Price(),
  OutputImage: Price(),
  /** USD per web search (a provider's server tool, billed per call beside its tokens); none without. */
  WebSearch: Price(),
  /** USD per file search call (OpenAI Responses `file_search`); none without. */
  FileSearch: Price(),
  /** USD per answer grounded by Google Search (Gemini 2.x bills per grounded prompt, not per query); none without. */
  GroundedPrompt: Price(),
  /** A factor, not a price: Anthropic's fast mode (`speed` "fast") costs this many times every token price. */
  FastMultiplier: Type.Optional(Type.Number({ minimum: 0.01, maximum: 100 })),
  /** Factors of every token price of a call OpenAI served at its priority / flex service tier. */
  PriorityMultiplier: Type.Optional(Type.Number({ minimum: 0.01, maximum: 100 })),
  FlexMultiplier: Type.Optional(Type.Number({ minimum: 0.01, maximum: 100 })),
  /** Factor of every token price of a call Anthropic ran in one geography (`inference_geo` other than "global"). */
  RegionalMultiplier: Type.Optional(Type.Number({ minimum: 0.01, maximum: 100 })),
  /** Prompt tokens (cache reads and writes included) above which the long-context factors apply. */
  LongContextAbove: Type.Optional(Count({ minimum: 1 })),
  /** Factors, not prices: every input / output price of a call whose prompt passes LongContextAbove. */
  LongInputFactor: Type.Optional(Type.Number({ minimum: 0.01, maximum: 100 })),
  LongOutputFactor: Type.Optional(Type.Number({ minimum: 0.01, maximum: 100 })),
  /** Tokens of input and output together the model accepts: bounds a call's input in its reservation. */
  ContextWindow: Type.Optional(Count({ minimum: 1 })),
  /** Most output tokens one answer can have: a call's output bound when it sets no max_tokens. */
  MaxOutput: Type.Optional(Count({ minimum: 1 })),
});
export type ChatPrice = Static<typeof ChatPrice>;

/** Per image, USD; a size entry beats `Call`. */
export const ImgPrice = Type.Object({ Call: Price(), Sizes: Type.Optional(Type.Record(Type.String(), Type.Number({ minimum: 0 }))) });
export type ImgPrice = Static<typeof ImgPrice>;

export const AudioPrice = Type.Object({ PerMinute: Price() });
export type AudioPrice = Static<typeof AudioPrice>;

export const VideoPrice = Type.Object({ PerSecond: Price() });
export type VideoPrice = Static<typeof VideoPrice>;

export const CallPrice = Type.Object({ Call: Price() });
export type CallPrice = Static<typeof CallPrice>;

/** Sections in the order of PRICING_SECTIONS (src/wire/constants.ts). */
export const PricingTable = Type.Object({
  ChatPricing: Type.Record(Type.String(), ChatPrice),
  ImgPricing: Type.Record(Type.String(), ImgPrice),
  AudioPricing: Type.Record(Type.String(), AudioPrice),
  VideoPricing: Type.Record(Type.String(), VideoPrice),
  CallPricing: Type.Record(Type.String(), CallPrice),
});
export type PricingTable = Static<typeof PricingTable>;

/** `GET /x-pricing`: the prices (× the caller's Rates when called with a key) and their units. */
export const PricingAnswer = Type.Composite([
  Type.Object({
    object: Type.Literal("pricing"),
    Currency: Type.Literal("USD"),
    Units: Type.Record(Type.String(), Type.String()),
    Rates: Type.Number(),
  }),
  Type.Partial(PricingTable),
]);
export type PricingAnswer = Static<typeof PricingAnswer>;

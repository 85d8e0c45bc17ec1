import { badRequest } from "../../core/errors.ts";
import { PRICING_SECTIONS } from "../../wire/constants.ts";
import type { AudioPrice, CallPrice, ChatPrice, ImgPrice, PricingTable, VideoPrice } from "../../wire/pricing.ts";

// The shapes are wire models (src/wire/pricing.ts), shared with the console.
export type { AudioPrice, CallPrice, ChatPrice, ImgPrice, PricingTable, VideoPrice };

export type Section = keyof PricingTable;

/** ChatPricing members that are token counts, not prices: never scaled by Rates. */
export const TOKEN_LIMIT_MEMBERS = ["ContextWindow", "MaxOutput", "LongContextAbove"] as const;

/** ChatPricing members that are factors of the token prices, not prices: never scaled by Rates. */
export const FACTOR_MEMBERS = ["FastMultiplier", "PriorityMultiplier", "FlexMultiplier", "RegionalMultiplier", "LongInputFactor", "LongOutputFactor"] as const;

/** The largest factor accepted (FastMultiplier, the long-context ones): Anthropic's dearest is 12x. */
export const MAX_FACTOR = 100;
/** The smallest factor accepted: a tier may be cheaper (flex is half), never free. */
export const MIN_FACTOR = 0.01;

/** The largest context window or output accepted (tokens): far above any model's. */
export const MAX_TOKEN_LIMIT = 100_000_000;

const MEMBERS: Record<Section, readonly string[]> = {
  ChatPricing: ["InputText", "OutputText", "CachedText", "CacheWrite", "CacheWrite1h", "ReasonText", "InputAudio", "OutputAudio", "InputImage", "OutputImage", "WebSearch", "FileSearch", "GroundedPrompt", ...FACTOR_MEMBERS, ...TOKEN_LIMIT_MEMBERS],
  ImgPricing: ["Call", "Sizes"],
  AudioPricing: ["PerMinute"],
  VideoPricing: ["PerSecond"],
  CallPricing: ["Call"],
};

export const SECTIONS: readonly Section[] = PRICING_SECTIONS;

/** Limits of spec 8 for PRICING. */
export const PRICING_MAX_BYTES = 128 * 1024;
export const PRICING_MAX_ENTRIES = 1024;

/**
 * The dearest price accepted (USD per 1M tokens, per image, minute or second): far above
 * any real model, and low enough that a cost stays an exact integer of nano-credits
 * (with Rates at most 1000, a million tokens cost at most 1e16 nano-credits).
 */
export const MAX_PRICE = 10_000;

/**
 * How a stored table is read back (`parsePricingTable`'s second argument): routers before
 * the bound stored dearer prices as given, and refusing them there failed the start of a
 * deployment that had upgraded. Such a price is read as `MAX_PRICE` (still the dearest,
 * a cost stays exact), and `beyondBound` is told which one.
 */
export interface StoredPricing {
  beyondBound(where: string, stored: number): void;
}

function price(where: string, value: unknown, stored?: StoredPricing): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw badRequest(`PRICING: ${where} must be a finite, non-negative number`, "PRICING");
  }
  if (value > MAX_PRICE) {
    if (!stored) throw badRequest(`PRICING: ${where} must be at most ${MAX_PRICE}`, "PRICING");
    stored.beyondBound(where, value);
    return MAX_PRICE;
  }
  return value;
}

function factor(where: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < MIN_FACTOR || value > MAX_FACTOR) {
    throw badRequest(`PRICING: ${where} must be a factor from ${MIN_FACTOR} to ${MAX_FACTOR}`, "PRICING");
  }
  return value;
}

function tokenLimit(where: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > MAX_TOKEN_LIMIT) {
    throw badRequest(`PRICING: ${where} must be a whole number of tokens from 1 to ${MAX_TOKEN_LIMIT}`, "PRICING");
  }
  return value;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * Checks a pricing table (PRICING deltas or the catalog): known sections and members
 * only, prices finite and non-negative, at most 1024 model entries and 128 KiB of
 * JSON. Every failure is a 400 that names the entry.
 */
export function parsePricingTable(value: unknown, stored?: StoredPricing): Partial<PricingTable> {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (new TextEncoder().encode(text).byteLength > PRICING_MAX_BYTES) {
    throw badRequest(`PRICING is larger than ${PRICING_MAX_BYTES / 1024} KiB`, "PRICING");
  }
  let table: unknown = value;
  if (typeof value === "string") {
    try {
      table = JSON.parse(value);
    } catch {
      throw badRequest("PRICING is not valid JSON", "PRICING");
    }
  }
  if (!isObject(table)) throw badRequest("PRICING must be a JSON object of pricing sections", "PRICING");
  const out: Partial<PricingTable> = {};
  let entries = 0;
  for (const [section, models] of Object.entries(table)) {
    if (!Object.hasOwn(MEMBERS, section)) throw badRequest(`PRICING: unknown section "${section}" (known: ${SECTIONS.join(", ")})`, "PRICING");
    if (!isObject(models)) throw badRequest(`PRICING: ${section} must be an object of model pattern → prices`, "PRICING");
    const checked: Record<string, Record<string, unknown>> = Object.create(null); // a model may be named "__proto__"
    for (const [model, prices] of Object.entries(models)) {
      entries++;
      if (!model.trim() || /[\s,]/.test(model)) throw badRequest(`PRICING: ${section} has an invalid model pattern "${model}"`, "PRICING");
      if (!isObject(prices)) throw badRequest(`PRICING: ${section}["${model}"] must be an object`, "PRICING");
      const entry: Record<string, unknown> = {};
      for (const [member, n] of Object.entries(prices)) {
        const where = `${section}["${model}"].${member}`;
        if (!MEMBERS[section as Section].includes(member)) throw badRequest(`PRICING: unknown field ${where}`, "PRICING");
        if (member === "Sizes") {
          if (!isObject(n)) throw badRequest(`PRICING: ${where} must be an object of size → price`, "PRICING");
          const sizes: Record<string, number> = Object.create(null);
          for (const [size, p] of Object.entries(n)) {
            if (!/^\d+x\d+$/.test(size)) throw badRequest(`PRICING: ${where} has an invalid size "${size}" (use WIDTHxHEIGHT)`, "PRICING");
            sizes[size] = price(`${where}["${size}"]`, p, stored);
          }
          entry.Sizes = sizes;
        } else if ((TOKEN_LIMIT_MEMBERS as readonly string[]).includes(member)) entry[member] = tokenLimit(where, n);
        else if ((FACTOR_MEMBERS as readonly string[]).includes(member)) entry[member] = factor(where, n);
        else entry[member] = price(where, n, stored);
      }
      checked[model] = entry;
    }
    (out as Record<string, unknown>)[section] = checked;
  }
  if (entries > PRICING_MAX_ENTRIES) throw badRequest(`PRICING has ${entries} entries; at most ${PRICING_MAX_ENTRIES} are allowed`, "PRICING");
  return out;
}

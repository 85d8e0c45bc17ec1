/**
 * Constant lists of the management wire format. This module imports nothing, not
 * even TypeBox: the console imports it at run time, and its bundle must carry these
 * few arrays without a schema library (the models in this folder are type-only there).
 */

/** Per-account request and token rate limits, in the field names of the account body. */
export const RATE_FIELDS = ["RPM", "RPH", "RPD", "TPM", "TPH", "TPD"] as const;
/** Per-account spend limits, in credits. */
export const SPEND_FIELDS = ["DailyLimit", "HardLimit", "SoftLimit"] as const;
/** Members of one ModelLimits entry (model pattern → limits). */
export const MODEL_LIMIT_MEMBERS = ["rpm", "rph", "rpd", "tpm", "tph", "tpd"] as const;
/** Sections of PRICING and of the price catalog, in display order. */
export const PRICING_SECTIONS = ["ChatPricing", "ImgPricing", "AudioPricing", "VideoPricing", "CallPricing"] as const;
/** Upstream schemes a Provider Key speaks (its `config.provider_type`). */
export const PROVIDER_TYPES = ["standard", "azure", "vertex"] as const;
/**
 * Wire formats a Provider Key speaks (its `config.formats`): OpenAI Chat Completions and
 * the rest of the OpenAI surface, OpenAI Responses, Anthropic Messages, Gemini generateContent.
 */
export const KEY_FORMATS = ["openai", "responses", "anthropic", "gemini"] as const;
/**
 * The forms of a Provider Key record `fields` selects (`/x-keys`): the full record with
 * the opened secret (the default), the spec's masked summary, the console's overview
 * (no secret) and its edit form (everything but the secret).
 */
export const KEY_RECORD_FORMS = ["full", "summary", "overview", "edit"] as const;
/** Why a Provider Key sleeps: put to sleep by hand, refused credentials, repeated errors, a refused address. */
export const SLEEP_REASONS = ["manual", "auth", "errors", "address"] as const;

export type RateField = (typeof RATE_FIELDS)[number];
export type SpendField = (typeof SPEND_FIELDS)[number];
export type LimitField = RateField | SpendField;
export type ModelLimitMember = (typeof MODEL_LIMIT_MEMBERS)[number];
export type PricingSection = (typeof PRICING_SECTIONS)[number];
export type ProviderType = (typeof PROVIDER_TYPES)[number];
export type SleepReason = (typeof SLEEP_REASONS)[number];
export type KeyFormat = (typeof KEY_FORMATS)[number];
export type KeyRecordForm = (typeof KEY_RECORD_FORMS)[number];

/** Largest Rates multiplier: with prices at most MAX_PRICE, costs stay exact integers of nano-credits. */
export const MAX_RATES = 1000;
/** Largest spend limit (credits): in nano-credits still an exact integer. */
export const MAX_SPEND_LIMIT = 1e6;
/** Largest credit change of one request (credits), either way. */
export const MAX_CREDIT_CHANGE = 1e6;

/** Longest notice title and content, in characters (code points), after trimming. */
export const NOTICE_TITLE_MAX = 100;
export const NOTICE_CONTENT_MAX = 1000;
/** Longest a notice may stay up, in days. */
export const NOTICE_MAX_DAYS = 365;

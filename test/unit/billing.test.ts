import { describe, expect, test } from "bun:test";
import { HttpError } from "../../src/core/errors.ts";
import type { Endpoint } from "../../src/formats/format.ts";
import { OPENAI_ENDPOINTS } from "../../src/formats/openai/endpoints.ts";
import { ZERO_USAGE, type Usage } from "../../src/formats/usage.ts";
import { DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_VIDEO_SECONDS, planBilling, type BillingInput } from "../../src/metering/billing.ts";
import { createPriceBook } from "../../src/metering/pricing/price-book.ts";

/** How each kind of call is priced: its reservation up front and its charge at the end. */

const prices = createPriceBook({
  ChatPricing: {
    "acme-chat": { InputText: 2, OutputText: 8, ReasonText: 12 },
    "acme-image-tokens": { InputText: 5, InputImage: 10, OutputText: 40 },
    "acme-transcribe": { InputText: 2.5, InputAudio: 6, OutputText: 10 },
  },
  ImgPricing: { "acme-img": { Call: 0.05, Sizes: { "1024x1792": 0.09, "256x256": 0.01 } }, "acme-img-flat": { Call: 0.03 }, "acme-img-sized": { Sizes: { "1024x1024": 0.04 } } },
  AudioPricing: { "acme-whisper": { PerMinute: 0.006 }, "acme-tts": { PerMinute: 0.015 } },
  VideoPricing: { "acme-video": { PerSecond: 0.1 } },
});

const RATES = 1.5;
const usd = (amount: number, rates = RATES) => Math.round(amount * 1e9 * rates);
const ep = (path: string) => OPENAI_ENDPOINTS[path]!;

function plan(endpoint: Endpoint, model: string, extra: Partial<BillingInput> = {}) {
  return planBilling({ endpoint, model, prices, json: undefined, fields: undefined, bodyBytes: 0, rates: RATES, ...extra });
}

/** A usage with `prompt` input and `completion` output tokens. */
const tokens = (prompt: number, completion: number, more: Partial<Usage> = {}): Usage => ({ ...ZERO_USAGE, prompt, completion, ...more });

function refusal(run: () => unknown): HttpError {
  try {
    run();
  } catch (error) {
    return error as HttpError;
  }
  throw new Error("expected a refusal");
}

describe("token-priced calls (ChatPricing)", () => {
  test("reserve: body bytes + 1024 input at the dearest input price + max_tokens at the dearest output price, × Rates; the same tokens in the token windows", () => {
    const p = plan(ep("/v1/chat/completions"), "acme-chat", { json: { max_tokens: 100 }, bodyBytes: 301 });
    expect(p.reserve).toBe(Math.round((1325 * 2 + 100 * 12) * 1000 * RATES));
    expect(p.tokens).toBe(1325 + 100);
    // No maximum named: the model's maximum output, else the default.
    expect(plan(ep("/v1/chat/completions"), "acme-chat", { json: {}, bodyBytes: 0 }).reserve).toBe(Math.round((1024 * 2 + DEFAULT_MAX_OUTPUT_TOKENS * 12) * 1000 * RATES));
    // An image by URL cannot be sized: the input bound is the context window.
    const byUrl = { max_tokens: 100, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }] }] };
    expect(plan(ep("/v1/chat/completions"), "acme-chat", { json: byUrl, bodyBytes: 120 }).tokens).toBe(DEFAULT_CONTEXT_WINDOW + 100);
    // Embeddings have no output.
    expect(plan(ep("/v1/embeddings"), "acme-chat", { json: { input: "hi" }, bodyBytes: 30 }).tokens).toBe(30 + 1024);
  });

  test("the output limit is read in the spellings the endpoint's upstreams obey: the largest of them; another family's bounds nothing", () => {
    const output = (path: string, json: Record<string, unknown>) => plan(ep(path), "acme-chat", { json, bodyBytes: 0 }).tokens - 1024;
    // Chat: either spelling may be the one obeyed (OpenAI reads both, a translator prefers max_completion_tokens).
    expect(output("/v1/chat/completions", { max_tokens: 10, max_completion_tokens: 1000 })).toBe(1000);
    expect(output("/v1/chat/completions", { max_completion_tokens: 10, max_tokens: 1000 })).toBe(1000);
    expect(output("/v1/chat/completions", { max_completion_tokens: 10 })).toBe(10);
    // Responses' spelling in a Chat body, and Chat's in a Responses body: the model's own maximum.
    expect(output("/v1/chat/completions", { max_output_tokens: 10 })).toBe(DEFAULT_MAX_OUTPUT_TOKENS);
    expect(output("/v1/responses", { max_tokens: 10 })).toBe(DEFAULT_MAX_OUTPUT_TOKENS);
    expect(output("/v1/responses", { max_output_tokens: 10 })).toBe(10);
  });

  test("an embedding's input is bounded by its bytes, not by the context window (which bounds each input of a batch)", () => {
    const small = createPriceBook({ ChatPricing: { "acme-embed": { InputText: 1, OutputText: 0, ContextWindow: 512 } } });
    const embed = (endpoint: Endpoint) => planBilling({ endpoint, model: "acme-embed", prices: small, json: { input: ["a", "b"] }, fields: undefined, bodyBytes: 40_000, rates: 1 });
    expect(embed(ep("/v1/embeddings")).bound).toEqual({ input: 41_024, output: 0 });
    const batch: Endpoint = { family: "gemini", path: "/v1beta/models", model: "path", idempotent: true, embedding: true };
    expect(embed(batch).tokens).toBe(41_024);
  });

  test("answers asked for: n, a legacy completion's best_of and its prompts, Gemini's candidateCount in either spelling", () => {
    const output = (endpoint: Endpoint, json: Record<string, unknown>) => plan(endpoint, "acme-chat", { json }).bound!.output;
    const completions = ep("/v1/completions");
    expect(output(completions, { prompt: "a", max_tokens: 100, n: 2 })).toBe(200);
    expect(output(completions, { prompt: "a", max_tokens: 100, n: 2, best_of: 5 })).toBe(500);
    expect(output(completions, { prompt: ["a", "b", "c"], max_tokens: 100, n: 2 })).toBe(600);
    expect(output(completions, { prompt: [[1, 2], [3]], max_tokens: 100 })).toBe(200);
    // An array of numbers is one tokenized prompt.
    expect(output(completions, { prompt: [1, 2, 3], max_tokens: 100 })).toBe(100);
    const gemini: Endpoint = { family: "gemini", path: "/v1beta/models", model: "path", idempotent: true };
    expect(output(gemini, { generationConfig: { maxOutputTokens: 100, candidateCount: 3 } })).toBe(300);
    // snake_case settings: their candidates count; their limit does not (a translator would not send it on).
    expect(output(gemini, { generation_config: { max_output_tokens: 100, candidate_count: 4 } })).toBe(DEFAULT_MAX_OUTPUT_TOKENS * 4);
    expect(output(gemini, { generationConfig: { maxOutputTokens: 10 }, generation_config: { candidate_count: 2 } })).toBe(DEFAULT_MAX_OUTPUT_TOKENS * 2);
    // A Gemini call is bounded only by Gemini's spellings: a max_tokens Google refuses (or a translator ignores) bounds nothing.
    expect(output(gemini, { max_tokens: 1 })).toBe(DEFAULT_MAX_OUTPUT_TOKENS);
  });

  test("settle: the reported tokens at their prices × Rates; a failure (no tokens) costs nothing", () => {
    const p = plan(ep("/v1/chat/completions"), "acme-chat", { json: {}, bodyBytes: 10 });
    expect(p.settle(tokens(1000, 500, { reasoning: 100 }), undefined)).toBe(Math.round((1000 * 2 + 400 * 8 + 100 * 12) * 1000 * RATES));
    expect(p.settle(ZERO_USAGE, undefined)).toBe(0);
  });

  test("an unpriced model is refused with 400 model_not_priced naming the section to fill", () => {
    const error = refusal(() => plan(ep("/v1/chat/completions"), "acme-unknown"));
    expect(error).toMatchObject({ status: 400, code: "model_not_priced", param: "model" });
    expect(error.message).toContain('"ChatPricing":{"acme-unknown"');
  });

  test("free endpoints (token counting) reserve and charge nothing, priced or not", () => {
    const free: Endpoint = { family: "anthropic", path: "/v1/messages/count_tokens", model: "body", idempotent: true, billing: "free" };
    const p = plan(free, "acme-unknown", { bodyBytes: 10_000 });
    expect(p.reserve).toBe(0);
    expect(p.settle(tokens(5000, 0), {})).toBe(0);
  });
});

describe("images", () => {
  const generations = ep("/v1/images/generations");
  const edits = ep("/v1/images/edits");

  test("per image at the size's price (JSON n and size): reserve n images, charge the images the answer holds", () => {
    const p = plan(generations, "acme-img", { json: { n: 3, size: "1024x1792" } });
    expect(p.reserve).toBe(usd(3 * 0.09));
    expect(p.settle(ZERO_USAGE, { images: 2 })).toBe(usd(2 * 0.09));
    // Answered without a data array: the images asked for.
    expect(p.settle(ZERO_USAGE, {})).toBe(usd(3 * 0.09));
    // Not answered (upstream error, refused, client gone before an answer): nothing.
    expect(p.settle(ZERO_USAGE, undefined)).toBe(0);
  });

  test("multipart fields are strings; a size without its own price, or no size, costs Call", () => {
    expect(plan(edits, "acme-img", { fields: new Map([["n", "2"], ["size", "256x256"]]) }).reserve).toBe(usd(2 * 0.01));
    expect(plan(edits, "acme-img", { fields: new Map([["size", "512x512"]]) }).reserve).toBe(usd(0.05));
    expect(plan(generations, "acme-img", { json: {} }).reserve).toBe(usd(0.05));
    expect(plan(generations, "acme-img-flat", { json: { size: "1024x1024", n: 4 } }).settle(ZERO_USAGE, { images: 4 })).toBe(usd(4 * 0.03));
  });

  test("nonsense n counts as one image", () => {
    for (const n of [0, -2, "x", null]) expect(plan(generations, "acme-img", { json: { n } }).reserve).toBe(usd(0.05));
  });

  test("a model only ChatPricing prices (gpt-image-1 style) is charged its reported tokens; reserve 8192 output tokens per image", () => {
    const p = plan(generations, "acme-image-tokens", { json: { n: 2 }, bodyBytes: 30 });
    expect(p.reserve).toBe(Math.round((1054 * 10 + 2 * 8192 * 40) * 1000 * RATES));
    const usage = tokens(50, 4000, { imagePrompt: 10 });
    expect(p.settle(usage, { images: 2 })).toBe(Math.round((40 * 5 + 10 * 10 + 4000 * 40) * 1000 * RATES));
    expect(p.settle(ZERO_USAGE, undefined)).toBe(0);
  });

  test("unpriced: 400 pointing at ImgPricing", () => {
    expect(refusal(() => plan(generations, "acme-nothing")).message).toContain('"ImgPricing":{"acme-nothing":{"Call"');
  });

  test("an entry of Sizes alone prices only those sizes: another size (or auto) is refused, never free", () => {
    expect(plan(generations, "acme-img-sized", { json: { size: "1024x1024", n: 2 } }).reserve).toBe(usd(2 * 0.04));
    expect(plan(generations, "acme-img-sized", { json: {} }).reserve).toBe(usd(0.04));
    for (const size of ["1536x1024", "auto"]) {
      const error = refusal(() => plan(generations, "acme-img-sized", { json: { size } }));
      expect(error).toMatchObject({ status: 400, code: "model_not_priced" });
      expect(error.message).toContain(`for size ${size}`);
    }
  });
});

describe("audio transcription and translation", () => {
  const transcriptions = ep("/v1/audio/transcriptions");

  test("per minute of the reported duration; reserve the minutes the upload lasts at 2 kbit/s, the lowest speech bitrate", () => {
    const bytes = 16_000 * 60; // one minute at 128 kbit/s, 64 minutes at 2 kbit/s
    const p = plan(transcriptions, "acme-whisper", { bodyBytes: bytes });
    expect(p.reserve).toBe(usd(0.006 * 64));
    // A 16 kbit/s voice note of the same size lasts eight minutes: within the reservation.
    expect(p.settle(ZERO_USAGE, { seconds: 480 })).toBeLessThanOrEqual(p.reserve);
    expect(p.settle(ZERO_USAGE, { seconds: 90 })).toBe(usd(0.006 * 1.5));
    // Answered without a duration (text format): the size estimate.
    expect(p.settle(ZERO_USAGE, {})).toBe(usd(0.006));
    expect(p.settle(ZERO_USAGE, undefined)).toBe(0);
  });

  test("a model only ChatPricing prices (gpt-4o-transcribe style) is charged its tokens", () => {
    const p = plan(ep("/v1/audio/translations"), "acme-transcribe", { bodyBytes: 3000 });
    expect(p.settle(tokens(100, 20, { audioPrompt: 80 }), {})).toBe(Math.round((20 * 2.5 + 80 * 6 + 20 * 10) * 1000 * RATES));
  });

  test("unpriced: 400 pointing at AudioPricing", () => {
    expect(refusal(() => plan(transcriptions, "acme-nothing")).message).toContain('"AudioPricing":{"acme-nothing":{"PerMinute"');
  });
});

describe("speech", () => {
  const speech = ep("/v1/audio/speech");

  test("the minutes its input takes to say at 15 characters a second, reserved and charged alike when answered", () => {
    const p = plan(speech, "acme-tts", { json: { input: "x".repeat(900), voice: "alloy" } });
    // 900 characters = 60 s = 1 minute.
    expect(p.reserve).toBe(usd(0.015));
    expect(p.settle(ZERO_USAGE, {})).toBe(usd(0.015));
    expect(p.settle(ZERO_USAGE, undefined)).toBe(0);
  });

  test("only AudioPricing prices speech: a ChatPricing-only model is refused", () => {
    expect(refusal(() => plan(speech, "acme-chat", { json: { input: "hi" } })).code).toBe("model_not_priced");
  });
});

describe("video", () => {
  const video = ep("/v1/videos/generations");

  test("PerSecond × the seconds asked (number or string), else duration, else 5 s; nothing when not answered", () => {
    expect(plan(video, "acme-video", { json: { seconds: 8 } }).reserve).toBe(usd(0.8));
    expect(plan(video, "acme-video", { json: { seconds: "12" } }).settle(ZERO_USAGE, {})).toBe(usd(1.2));
    expect(plan(video, "acme-video", { json: { duration: 4 } }).reserve).toBe(usd(0.4));
    expect(plan(video, "acme-video", { json: {} }).reserve).toBe(usd(0.1 * DEFAULT_VIDEO_SECONDS));
    expect(plan(video, "acme-video", { json: { seconds: 8 } }).settle(ZERO_USAGE, undefined)).toBe(0);
  });

  test("unpriced: 400 pointing at VideoPricing", () => {
    expect(refusal(() => plan(video, "acme-chat")).message).toContain('"VideoPricing":{"acme-chat":{"PerSecond"');
  });
});

test("Rates scales every kind", () => {
  const at = (rates: number) => [
    plan(ep("/v1/images/generations"), "acme-img", { json: {}, rates }).reserve,
    plan(ep("/v1/audio/speech"), "acme-tts", { json: { input: "x".repeat(900) }, rates }).reserve,
    plan(ep("/v1/videos/generations"), "acme-video", { json: { seconds: 1 }, rates }).reserve,
    plan(ep("/v1/chat/completions"), "acme-chat", { json: { max_tokens: 10 }, rates }).reserve,
  ];
  expect(at(2)).toEqual(at(1).map((n) => n * 2));
  expect(at(0)).toEqual([0, 0, 0, 0]);
});

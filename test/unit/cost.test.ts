import { describe, expect, test } from "bun:test";
import type { Usage } from "../../src/formats/usage.ts";
import { DEFAULT_MAX_OUTPUT_TOKENS, worstCaseNanos } from "../../src/metering/meter.ts";
import { DEFAULT_CONTEXT_WINDOW, PROVIDER_INPUT_OVERHEAD } from "../../src/metering/billing.ts";
import { tokenCostNanos, unitCostNanos } from "../../src/metering/pricing/cost.ts";
import type { ChatPrice } from "../../src/metering/pricing/schema.ts";

/** Every member a distinct prime, so a token priced at the wrong member changes the total. */
const FULL: ChatPrice = {
  InputText: 1,
  OutputText: 2,
  CachedText: 3,
  CacheWrite: 5,
  ReasonText: 7,
  InputAudio: 11,
  OutputAudio: 13,
  InputImage: 17,
  OutputImage: 19,
};

/** prompt and completion include their parts (cache, audio, image; reasoning, audio, image). */
const MIXED: Usage = {
  prompt: 1000,
  cacheRead: 100,
  cacheWrite: 50,
  audioPrompt: 20,
  imagePrompt: 10,
  completion: 500,
  reasoning: 60,
  audioCompletion: 30,
  imageCompletion: 40,
};

const usage = (u: Partial<Usage>): Usage => ({ prompt: 0, completion: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, ...u });

describe("tokenCostNanos", () => {
  test("each token kind is priced once, at its own member (USD per 1M tokens → nano-credits)", () => {
    // text in = 1000 − 100 − 50 − 20 − 10 = 820; text out = 500 − 60 − 30 − 40 = 370
    const usd1m = 820 * 1 + 100 * 3 + 50 * 5 + 20 * 11 + 10 * 17 + 370 * 2 + 60 * 7 + 30 * 13 + 40 * 19;
    expect(usd1m).toBe(4070);
    expect(tokenCostNanos(MIXED, FULL, 1)).toBe(4_070_000);
  });

  test("Rates multiplies the whole cost", () => {
    expect(tokenCostNanos(MIXED, FULL, 1.5)).toBe(6_105_000);
    expect(tokenCostNanos(MIXED, FULL, 0.5)).toBe(2_035_000);
  });

  test("missing members fall back to the text price of their side", () => {
    const textOnly: ChatPrice = { InputText: 1, OutputText: 2 };
    // All 1000 input tokens at InputText, all 500 output tokens at OutputText.
    expect(tokenCostNanos(MIXED, textOnly, 1)).toBe(1000 * 1000 + 500 * 2000);
  });

  test("a cache read without CachedText costs InputText; reasoning without ReasonText costs OutputText", () => {
    const price: ChatPrice = { InputText: 2, OutputText: 8, CacheWrite: 2.5 };
    const u = usage({ prompt: 1000, cacheRead: 200, cacheWrite: 100, completion: 500, reasoning: 100 });
    // 700 uncached + 200 reads at 2, 100 writes at 2.5; 500 out (reasoning included) at 8.
    expect(tokenCostNanos(u, price, 1)).toBe((900 * 2 + 100 * 2.5 + 500 * 8) * 1000);
  });

  test("each fallback is individual: one member set does not change the others", () => {
    const u = usage({ prompt: 100, cacheRead: 10, cacheWrite: 10, audioPrompt: 10, imagePrompt: 10, completion: 100, reasoning: 10, audioCompletion: 10, imageCompletion: 10 });
    const base: ChatPrice = { InputText: 1, OutputText: 2 };
    const at = (extra: ChatPrice) => tokenCostNanos(u, { ...base, ...extra }, 1);
    const plain = at({});
    expect(plain).toBe((100 * 1 + 100 * 2) * 1000);
    // 10 tokens move from the text price to their member's price.
    expect(at({ CachedText: 0 }) - plain).toBe(-10 * 1000);
    expect(at({ CacheWrite: 3 }) - plain).toBe(10 * 2 * 1000);
    expect(at({ InputAudio: 4 }) - plain).toBe(10 * 3 * 1000);
    expect(at({ InputImage: 5 }) - plain).toBe(10 * 4 * 1000);
    expect(at({ ReasonText: 6 }) - plain).toBe(10 * 4 * 1000);
    expect(at({ OutputAudio: 7 }) - plain).toBe(10 * 5 * 1000);
    expect(at({ OutputImage: 8 }) - plain).toBe(10 * 6 * 1000);
  });

  test("no price at all costs nothing; absent text prices count as zero", () => {
    expect(tokenCostNanos(MIXED, {}, 3)).toBe(0);
    expect(tokenCostNanos(usage({ prompt: 10, completion: 10 }), { OutputText: 1 }, 1)).toBe(10_000);
  });

  test("rounds to the nearest nano-credit", () => {
    // 1 token × 0.001 USD/1M = 1 nano; × 1.5 = 1.5 → 2
    expect(tokenCostNanos(usage({ prompt: 1 }), { InputText: 0.001 }, 1.5)).toBe(2);
    // 1 token × 0.0004 USD/1M = 0.4 nano → 0
    expect(tokenCostNanos(usage({ prompt: 1 }), { InputText: 0.0004 }, 1)).toBe(0);
    // catalog-like price: 7 tokens × 0.15 = 1.05 USD/1M·tokens → 1050 nanos
    expect(tokenCostNanos(usage({ prompt: 7 }), { InputText: 0.15 }, 1)).toBe(1050);
  });

  test("inconsistent upstream counts never produce a negative part", () => {
    // More cache reads than prompt tokens: no negative uncached tokens are subtracted.
    const u = usage({ prompt: 10, cacheRead: 30, completion: 5, reasoning: 9 });
    expect(tokenCostNanos(u, { InputText: 1, CachedText: 1, OutputText: 1, ReasonText: 1 }, 1)).toBe((30 + 9) * 1000);
  });
});

describe("unitCostNanos", () => {
  test("USD per unit × units × Rates, in nano-credits", () => {
    expect(unitCostNanos(0.04, 2, 1)).toBe(80_000_000);
    expect(unitCostNanos(0.006, 1.5, 2)).toBe(18_000_000);
  });
});

describe("worstCaseNanos (the reservation rule)", () => {
  const price: ChatPrice = { InputText: 2, CachedText: 0.5, CacheWrite: 2.5, OutputText: 8, ReasonText: 12 };

  test("body bytes + 1024 input tokens (at most the context window) at the dearest input price + max output tokens at the dearest output price, × Rates", () => {
    // (300 + 1024) input tokens × 2.5 (CacheWrite) + 100 × 12 (ReasonText)
    expect(PROVIDER_INPUT_OVERHEAD).toBe(1024);
    expect(worstCaseNanos(price, { max_tokens: 100 }, 300, 1)).toBe((1324 * 2.5 + 1200) * 1000);
    expect(worstCaseNanos(price, { max_tokens: 100 }, 300, 1.5)).toBe((1324 * 2.5 + 1200) * 1500);
    // The context window caps the input; a body that points at content it does not hold reserves all of it.
    const small: ChatPrice = { ...price, ContextWindow: 500 };
    expect(worstCaseNanos(small, { max_tokens: 100 }, 300, 1)).toBe((500 * 2.5 + 1200) * 1000);
    expect(worstCaseNanos(small, { max_tokens: 100 }, 3, 1, true)).toBe((500 * 2.5 + 1200) * 1000);
    expect(worstCaseNanos(price, { max_tokens: 100 }, 3, 1, true)).toBe((DEFAULT_CONTEXT_WINDOW * 2.5 + 1200) * 1000);
  });

  test("the output maximum is read from each family's field, else the model's MaxOutput, else the documented default; times the answers asked for", () => {
    const cost = (json: Record<string, unknown> | undefined, price: ChatPrice = { OutputText: 1 }) => worstCaseNanos(price, json, 0, 1);
    const gemini = (json: Record<string, unknown>) => worstCaseNanos({ OutputText: 1 }, json, 0, 1, false, { family: "gemini" });
    expect(cost({ max_tokens: 10 })).toBe(10_000);
    expect(cost({ max_completion_tokens: 20 })).toBe(20_000);
    expect(cost({ max_output_tokens: 30 })).toBe(30_000);
    // Gemini's own setting bounds a Gemini call; in another family's body it bounds nothing.
    expect(gemini({ generationConfig: { maxOutputTokens: 40 } })).toBe(40_000);
    expect(cost({ generationConfig: { maxOutputTokens: 40 } })).toBe(32_768_000);
    expect(DEFAULT_MAX_OUTPUT_TOKENS).toBe(32_768);
    expect(cost({})).toBe(32_768_000);
    expect(cost(undefined)).toBe(32_768_000);
    expect(cost({}, { OutputText: 1, MaxOutput: 500 })).toBe(500_000);
    // Nonsense maxima fall back to the default rather than reserving nothing.
    expect(cost({ max_tokens: 0 })).toBe(32_768_000);
    expect(cost({ max_tokens: -5 })).toBe(32_768_000);
    // Each of n answers (Gemini: candidateCount) may reach the maximum.
    expect(cost({ max_tokens: 10, n: 3 })).toBe(30_000);
    expect(gemini({ generationConfig: { maxOutputTokens: 10, candidateCount: 2 } })).toBe(20_000);
  });

  test("audio and image members count when they are the dearest", () => {
    expect(worstCaseNanos({ InputText: 1, InputAudio: 40, OutputText: 2, OutputAudio: 80, ContextWindow: 1 }, { max_tokens: 1 }, 3, 1)).toBe((40 + 80) * 1000);
    expect(worstCaseNanos({ InputText: 1, InputImage: 10, OutputText: 2, OutputImage: 40, ContextWindow: 1 }, { max_tokens: 1 }, 3, 1)).toBe((10 + 40) * 1000);
  });

  test("the worst case is never below the actual cost of a call within its bounds", () => {
    const bytes = 3000;
    const max = 500;
    const worst = worstCaseNanos(price, { max_tokens: max }, bytes, 1.5);
    for (const u of [
      usage({ prompt: 1000, completion: 500 }),
      usage({ prompt: 1000, cacheWrite: 1000, completion: 500, reasoning: 500 }),
      usage({ prompt: 1000, cacheRead: 500, cacheWrite: 500, completion: 500, reasoning: 250 }),
    ]) {
      expect(tokenCostNanos(u, price, 1.5)).toBeLessThanOrEqual(worst);
    }
  });
});

import { describe, expect, test } from "bun:test";
import { clampedUsage, credibleUsage, MAX_CREDIBLE_TOKENS, ZERO_USAGE } from "../../src/formats/usage.ts";

describe("usage an upstream reports", () => {
  test("whole counts from 0 to the bound are credible, the optional ones too", () => {
    expect(credibleUsage({ ...ZERO_USAGE, prompt: 9000, completion: 5 })).toBe(true);
    expect(credibleUsage({ ...ZERO_USAGE, prompt: MAX_CREDIBLE_TOKENS, audioPrompt: 3 })).toBe(true);
  });

  test("1e308, Infinity, NaN, negatives, fractions and counts past the bound are not; clamped whole within it", () => {
    for (const prompt of [1e308, Infinity, NaN, -3, 1.5, MAX_CREDIBLE_TOKENS + 1, 1e26]) {
      expect(credibleUsage({ ...ZERO_USAGE, prompt })).toBe(false);
    }
    expect(credibleUsage({ ...ZERO_USAGE, imageCompletion: 0.25 })).toBe(false);
    expect(clampedUsage({ ...ZERO_USAGE, prompt: 1e308, completion: 7, cacheRead: NaN, reasoning: -1, imagePrompt: 1.5 })).toEqual({
      ...ZERO_USAGE,
      prompt: MAX_CREDIBLE_TOKENS,
      completion: 7,
      cacheRead: 0,
      reasoning: 0,
      imagePrompt: 2,
    });
  });
});

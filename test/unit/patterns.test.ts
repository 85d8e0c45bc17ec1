import { describe, expect, test } from "bun:test";
import { bestMatch, compilePattern, matchesPattern, patternsOverlap, splitList } from "../../src/routing/patterns.ts";

describe("patterns", () => {
  test("* matches any run of characters, the rest is literal", () => {
    expect(matchesPattern("gpt-4*", "gpt-4o-mini")).toBe(true);
    expect(matchesPattern("gpt-4*", "gpt-4")).toBe(true);
    expect(matchesPattern("gpt-4*", "xgpt-4")).toBe(false);
    expect(matchesPattern("*-mini", "o4-mini")).toBe(true);
    expect(matchesPattern("claude-*-sonnet*", "claude-3-7-sonnet-latest")).toBe(true);
    expect(matchesPattern("gpt-4.1", "gpt-4x1")).toBe(false);
    expect(matchesPattern("/v1/*", "/v1/chat/completions")).toBe(true);
    expect(matchesPattern("*", "")).toBe(true);
  });

  test("exact beats patterns, more literals beat fewer, ties go to the earlier entry", () => {
    const entries = ["gpt-*", "gpt-4o*", "*", "gpt-4o-mini", "gpt-4o?"].map((source, index) => ({
      pattern: compilePattern(source),
      index,
    }));
    expect(bestMatch(entries, "gpt-4o-mini")?.index).toBe(3);
    expect(bestMatch(entries, "gpt-4o-2024")?.index).toBe(1);
    expect(bestMatch(entries, "gpt-3.5")?.index).toBe(0);
    expect(bestMatch(entries, "claude")?.index).toBe(2);
    const ties = ["a*", "*a"].map((source, index) => ({ pattern: compilePattern(source), index }));
    expect(bestMatch(ties, "aba")?.index).toBe(0);
    expect(bestMatch([{ pattern: compilePattern("x*") }], "y")).toBeUndefined();
  });

  test("two patterns overlap when some value matches both, whichever way round", () => {
    const cases: Array<[string, string, boolean]> = [
      ["acme-*", "*e-chat", true],
      ["gpt-*", "*pt-4o", true],
      ["gpt-*", "claude-*", false],
      ["a*b", "ab", true],
      ["a*b", "a", false],
      ["*a*", "*b*", true],
      ["ab*", "*ba", true],
      ["gpt-4o", "gpt-4", false],
      ["", "*", true],
      ["", "a", false],
    ];
    for (const [a, b, overlap] of cases) {
      expect([a, b, patternsOverlap(a, b)]).toEqual([a, b, overlap]);
      expect([b, a, patternsOverlap(b, a)]).toEqual([b, a, overlap]);
    }
  });

  test("lists split on commas and drop empty entries", () => {
    expect(splitList(" a, b ,,c ")).toEqual(["a", "b", "c"]);
    expect(splitList(null)).toEqual([]);
  });
});

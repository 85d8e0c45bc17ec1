import { describe, expect, test } from "bun:test";
import { inlineImageCount } from "../../src/metering/unsized-input.ts";
import { toolCallBound } from "../../src/metering/tool-call-bound.ts";
import { tokenCostNanos } from "../../src/metering/pricing/cost.ts";

/** Pure pieces of the usage review (test/e2e/review-usage.test.ts drives them through HTTP). */

describe("inlineImageCount: the images a body holds inline, in every format's spelling", () => {
  const DATA = "data:image/png;base64,AAAA";
  test("Chat image_url (object or string), Responses input_image, Anthropic base64 sources (nested in tool results), Gemini inline data", () => {
    expect(inlineImageCount({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: DATA } }, { type: "text", text: "hi" }] }] })).toBe(1);
    expect(inlineImageCount({ input: [{ role: "user", content: [{ type: "input_image", image_url: DATA }, { type: "input_image", image_url: DATA }] }] })).toBe(2);
    const image = { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } };
    expect(inlineImageCount({ messages: [{ role: "user", content: [image, { type: "tool_result", tool_use_id: "t", content: [image] }] }] })).toBe(2);
    expect(inlineImageCount({ contents: [{ parts: [{ inlineData: { mimeType: "image/jpeg", data: "AAAA" } }, { inline_data: { mime_type: "image/png", data: "AAAA" } }] }] })).toBe(2);
  });

  test("what is not an inline image: a URL, a PDF, audio, text", () => {
    expect(inlineImageCount({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }] }] })).toBe(0);
    expect(inlineImageCount({ messages: [{ role: "user", content: [{ type: "document", source: { type: "base64", media_type: "application/pdf", data: "AAAA" } }] }] })).toBe(0);
    expect(inlineImageCount({ contents: [{ parts: [{ inlineData: { mimeType: "audio/wav", data: "AAAA" } }, { text: "hi" }] }] })).toBe(0);
    expect(inlineImageCount({ messages: [{ role: "user", content: "data:image/png;base64,AAAA" }] })).toBe(0);
    expect(inlineImageCount(undefined)).toBe(0);
  });
});

describe("toolCallBound: the searches a request can make", () => {
  test("Anthropic web search max_uses; else 20; Responses max_tool_calls bounds all; Gemini googleSearch 20 queries and one grounded prompt; function tools none", () => {
    expect(toolCallBound({ tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 3 }] })).toEqual({ webSearches: 3, fileSearches: 0, groundedPrompts: 0 });
    expect(toolCallBound({ tools: [{ type: "web_search_20250305", name: "web_search" }] }).webSearches).toBe(20);
    expect(toolCallBound({ max_tool_calls: 4, tools: [{ type: "web_search" }, { type: "file_search", vector_store_ids: ["v"] }] })).toEqual({ webSearches: 4, fileSearches: 4, groundedPrompts: 0 });
    expect(toolCallBound({ tools: [{ googleSearch: {} }] })).toEqual({ webSearches: 20, fileSearches: 0, groundedPrompts: 1 });
    expect(toolCallBound({ tools: [{ type: "function", function: { name: "f" } }, { functionDeclarations: [] }] })).toEqual({ webSearches: 0, fileSearches: 0, groundedPrompts: 0 });
  });
});

describe("tokenCostNanos: factors that apply together", () => {
  const price = { InputText: 1, OutputText: 2, FastMultiplier: 6, LongContextAbove: 200_000, LongInputFactor: 2, LongOutputFactor: 1.5, RegionalMultiplier: 1.1 };
  const usage = { prompt: 300_000, completion: 1000, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
  test("multiply one another, as Anthropic's fast mode above 200K tokens in one geography does (input 13.2x, output 9.9x)", () => {
    expect(tokenCostNanos({ ...usage, fast: true, regional: true }, price, 1)).toBe(Math.round((300_000 * 1 * 13.2 + 1000 * 2 * 9.9) * 1000));
  });
  test("their product is at most 100, whatever an owner sets: a cost stays within the range its column holds", () => {
    const dear = { ...price, FastMultiplier: 100, LongInputFactor: 100, LongOutputFactor: 100, RegionalMultiplier: 100 };
    expect(tokenCostNanos({ ...usage, fast: true, regional: true }, dear, 1)).toBe((300_000 * 1 * 100 + 1000 * 2 * 100) * 1000);
  });
});

import { describe, expect, test } from "bun:test";
import { inputIsUnsized } from "../../src/metering/unsized-input.ts";

const user = (content: unknown) => ({ messages: [{ role: "user", content }] });

describe("input the body cannot bound (reserved as the context window)", () => {
  test("plain text in every format is sized by the body", () => {
    expect(inputIsUnsized(undefined)).toBe(false);
    expect(inputIsUnsized(user("hello"))).toBe(false);
    expect(inputIsUnsized(user([{ type: "text", text: "hi" }]))).toBe(false);
    expect(inputIsUnsized({ input: "hi", instructions: "be brief" })).toBe(false);
    expect(inputIsUnsized({ input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }] })).toBe(false);
    expect(inputIsUnsized({ contents: [{ role: "user", parts: [{ text: "hi" }] }], systemInstruction: { parts: [{ text: "x" }] } })).toBe(false);
    expect(inputIsUnsized({ prompt: "Once upon a time" })).toBe(false);
    expect(inputIsUnsized({ input: ["embed me", "and me"] })).toBe(false);
  });

  test("inline images and audio are sized by their bytes", () => {
    expect(inputIsUnsized(user([{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }]))).toBe(false);
    expect(inputIsUnsized(user([{ type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }]))).toBe(false);
    expect(inputIsUnsized(user([{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }]))).toBe(false);
    expect(inputIsUnsized({ contents: [{ parts: [{ inlineData: { mimeType: "image/jpeg", data: "AAAA" } }] }] })).toBe(false);
  });

  test("content by URL, file id, upstream file or PDF is not", () => {
    expect(inputIsUnsized(user([{ type: "image_url", image_url: { url: "https://example.com/a.png" } }]))).toBe(true);
    expect(inputIsUnsized(user([{ type: "file", file: { file_id: "file-1" } }]))).toBe(true);
    expect(inputIsUnsized({ input: [{ role: "user", content: [{ type: "input_image", image_url: "https://example.com/a.png" }] }] })).toBe(true);
    expect(inputIsUnsized({ input: [{ role: "user", content: [{ type: "input_file", file_id: "file-1" }] }] })).toBe(true);
    expect(inputIsUnsized(user([{ type: "image", source: { type: "url", url: "https://example.com/a.png" } }]))).toBe(true);
    expect(inputIsUnsized(user([{ type: "document", source: { type: "base64", media_type: "application/pdf", data: "AAAA" } }]))).toBe(true);
    expect(inputIsUnsized({ contents: [{ parts: [{ fileData: { fileUri: "gs://b/f.pdf", mimeType: "application/pdf" } }] }] })).toBe(true);
    expect(inputIsUnsized({ contents: [{ parts: [{ inline_data: { mime_type: "application/pdf", data: "AAAA" } }] }] })).toBe(true);
  });

  test("content nested in tool results counts too", () => {
    const nested = user([{ type: "tool_result", tool_use_id: "t", content: [{ type: "image", source: { type: "file", file_id: "f" } }] }]);
    expect(inputIsUnsized(nested)).toBe(true);
    expect(inputIsUnsized(user([{ type: "tool_result", tool_use_id: "t", content: [{ type: "text", text: "ok" }] }]))).toBe(false);
  });

  test("state held upstream and server tools that add input", () => {
    expect(inputIsUnsized({ input: "next", previous_response_id: "resp_1" })).toBe(true);
    expect(inputIsUnsized({ contents: [{ parts: [{ text: "q" }] }], cachedContent: "cachedContents/1" })).toBe(true);
    expect(inputIsUnsized({ prompt: { id: "pmpt_1" } })).toBe(true);
    expect(inputIsUnsized({ ...user("q"), tools: [{ type: "web_search_20250305", name: "web_search" }] })).toBe(true);
    expect(inputIsUnsized({ input: "q", tools: [{ type: "web_search" }] })).toBe(true);
    expect(inputIsUnsized({ contents: [{ parts: [{ text: "q" }] }], tools: [{ googleSearch: {} }] })).toBe(true);
  });

  test("function tools do not, even with parameters named like references", () => {
    const schema = { type: "object", properties: { file_id: { type: "string" } } };
    expect(inputIsUnsized({ ...user("q"), tools: [{ type: "function", function: { name: "f", parameters: schema } }] })).toBe(false);
    expect(inputIsUnsized({ ...user("q"), tools: [{ name: "f", description: "d", input_schema: schema }] })).toBe(false);
    expect(inputIsUnsized({ contents: [{ parts: [{ text: "q" }] }], tools: [{ functionDeclarations: [{ name: "f", parameters: schema }] }] })).toBe(false);
  });
});

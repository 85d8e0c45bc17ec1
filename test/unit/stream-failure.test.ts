import { describe, expect, test } from "bun:test";
import { failureAt, reportsFailure } from "../../src/formats/stream-failure.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

// Events as the providers send them: each failure shape is spotted in the raw bytes the
// relay passes and read as a failure; a response object's `"error":null` is neither.
const FAILURES = [
  ['Anthropic overloaded_error', 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'],
  ["OpenRouter's error chunk", 'data: {"id":"x","error":{"code":502,"message":"Provider returned error"},"choices":[{"delta":{},"finish_reason":"error"}]}\n\n'],
  ["Responses error event", 'event: error\ndata: {"type":"error","code":"server_error","message":"boom","param":null,"sequence_number":3}\n\n'],
  ["Responses response.failed", 'event: response.failed\ndata: {"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"}}}\n\n'],
  ["spaced JSON", 'data: {"error" : {"message":"x"}}\n\n'],
  ["a value typed error, spaced", 'data: {"type" : "error", "message":"x"}\n\n'],
] as const;

const HEALTHY = [
  ["Responses response.completed with error null", 'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r","status":"completed","error":null,"output":[{"type":"message","content":[{"type":"output_text","text":"the word \\"error\\" in text"}]}]}}\n\n'],
  ["Responses response.created", 'event: response.created\ndata: {"type":"response.created","response":{"id":"r","status":"in_progress","error":null}}\n\n'],
  ["a chat chunk saying error in its text", 'data: {"choices":[{"delta":{"content":"an \\"error\\": {not json}"}}]}\n\n'],
] as const;

describe("an upstream's own failure inside its stream", () => {
  for (const [name, text] of FAILURES) {
    test(`${name}: spotted in the raw bytes and read as a failure`, () => {
      expect(failureAt(bytes(text))).toBeGreaterThanOrEqual(0);
      expect(reportsFailure(text.slice(text.indexOf("data: ") + 6).trim())).toBe(true);
    });
  }
  for (const [name, text] of HEALTHY) {
    test(`${name}: neither spotted nor read as a failure`, () => {
      expect(failureAt(bytes(text))).toBe(-1);
      expect(reportsFailure(text.slice(text.indexOf("data: ") + 6).trim())).toBe(false);
    });
  }
  test("a read cut off right after the key counts as found (the decoder decides)", () => {
    expect(failureAt(bytes('data: {"error"'))).toBeGreaterThanOrEqual(0);
    expect(failureAt(bytes('data: {"error":'))).toBeGreaterThanOrEqual(0);
  });
});

import { describe, expect, test } from "bun:test";
import { indexOfBytes, objectKeyAt } from "../../src/formats/json.ts";
import { countContent } from "../../src/gateway/usage/content-count.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("content bytes of answers and stream chunks (estimates count content, not framing)", () => {
  test("OpenAI chat chunks: the delta's content only", () => {
    const chunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}\n\n`;
    expect(countContent(bytes(chunk))).toBe(5);
    expect(countContent(bytes(chunk + chunk))).toBe(10);
  });

  test("tool-call arguments, Anthropic text and thinking deltas, Responses deltas, Gemini parts", () => {
    expect(countContent(bytes(`{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\":1}"}}]}}`))).toBe(9);
    expect(countContent(bytes(`event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi there"}}\n\n`))).toBe(8);
    expect(countContent(bytes(`{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"hmm"}}`))).toBe(3);
    expect(countContent(bytes(`{"type":"response.output_text.delta","delta":"abc"}`))).toBe(3);
    expect(countContent(bytes(`{\n  "candidates": [{"content": {"parts": [{"text": "four"}], "role": "model"}}]\n}`))).toBe(4);
  });

  test("escaped quotes stay inside the string; framing members are not counted", () => {
    expect(countContent(bytes(`{"content":"say \\"hi\\": ok","role":"assistant","model":"m"}`))).toBe(14);
    expect(countContent(bytes(`{"id":"x","object":"chat.completion","usage":{"prompt_tokens":3}}`))).toBe(0);
    expect(countContent(bytes(""))).toBe(0);
  });

  test("a read that is a view into a larger buffer (offsets are the view's own)", () => {
    const chunk = `data: {"choices":[{"delta":{"content":"Hello"}}],"usage":null}\n\ndata: {"choices":[],"usage":{"prompt_tokens":3}}\n\n`;
    const whole = bytes(`"content":"not this read" ${chunk}`);
    const view = whole.subarray(whole.byteLength - bytes(chunk).byteLength);
    expect(countContent(view)).toBe(5);
    // The usage tap's search: the first "usage" holding an object, not the null one.
    expect(objectKeyAt(view, bytes('"usage"'))).toBe(chunk.lastIndexOf('"usage"'));
    expect(indexOfBytes(view, 0x7b)).toBe(6);
    expect(indexOfBytes(view, bytes('"nothing"'))).toBe(-1);
  });
});

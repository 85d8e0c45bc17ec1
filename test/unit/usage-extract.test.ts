import { describe, expect, test } from "bun:test";
import { createSseDecoder } from "../../src/formats/sse.ts";
import type { Family } from "../../src/formats/family.ts";
import type { StreamUsageTap } from "../../src/formats/format.ts";
import { formatOf } from "../../src/formats/registry.ts";

/** Each family's usage readers, as the relay finds them through the registry. */
const usageFromJson = (family: Family, body: unknown) => formatOf(family).usageFromJson(body);
const createStreamUsageTap = (family: Family) => formatOf(family).streamUsageTap();

/** Runs SSE text through the real decoder into a fresh tap, `chunk` bytes at a time. */
function tapStream(family: Family, sse: string, chunk = 1_000_000): StreamUsageTap {
  const tap = createStreamUsageTap(family);
  const decoder = createSseDecoder((e) => tap.onEvent(e));
  const bytes = new TextEncoder().encode(sse);
  for (let i = 0; i < bytes.length; i += chunk) decoder.push(bytes.subarray(i, i + chunk));
  decoder.end();
  return tap;
}

/** Formats events the way the upstream writes them: `event:` line when named, JSON data. */
function sse(events: Array<[string | undefined, unknown]>, eol = "\n"): string {
  return events
    .map(([name, data]) => {
      const body = typeof data === "string" ? data : JSON.stringify(data);
      return `${name === undefined ? "" : `event: ${name}${eol}`}data: ${body}${eol}${eol}`;
    })
    .join("");
}

describe("openai", () => {
  test("chat completion with cached prompt, reasoning and audio", () => {
    const body = {
      id: "chatcmpl-9xYz",
      object: "chat.completion",
      model: "o4-mini-2025-04-16",
      choices: [{ index: 0, message: { role: "assistant", content: "Hi" }, finish_reason: "stop" }],
      usage: {
        prompt_tokens: 2048,
        completion_tokens: 900,
        total_tokens: 2948,
        prompt_tokens_details: { cached_tokens: 1536, audio_tokens: 40 },
        completion_tokens_details: { reasoning_tokens: 768, audio_tokens: 12, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
    };
    expect(usageFromJson("openai", body)).toEqual({
      prompt: 2048,
      completion: 900,
      cacheRead: 1536,
      cacheWrite: 0,
      reasoning: 768,
      audioPrompt: 40,
      audioCompletion: 12,
    });
  });

  test("cache_write_tokens, when reported, becomes cacheWrite", () => {
    const body = { usage: { prompt_tokens: 5000, completion_tokens: 10, total_tokens: 5010, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 4096 } } };
    expect(usageFromJson("openai", body)).toMatchObject({ prompt: 5000, cacheRead: 0, cacheWrite: 4096 });
  });

  test("embeddings have prompt tokens only", () => {
    const body = { object: "list", data: [{ object: "embedding", index: 0, embedding: [0.1] }], model: "text-embedding-3-small", usage: { prompt_tokens: 8, total_tokens: 8 } };
    expect(usageFromJson("openai", body)).toEqual({ prompt: 8, completion: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
  });

  test("Responses API object uses input/output token names", () => {
    const body = {
      id: "resp_123",
      object: "response",
      status: "completed",
      model: "gpt-5-2025-08-07",
      output: [],
      usage: { input_tokens: 3000, input_tokens_details: { cached_tokens: 2048 }, output_tokens: 1200, output_tokens_details: { reasoning_tokens: 1024 }, total_tokens: 4200 },
    };
    expect(usageFromJson("openai", body)).toEqual({ prompt: 3000, completion: 1200, cacheRead: 2048, cacheWrite: 0, reasoning: 1024 });
  });

  test("bodies without usage give undefined", () => {
    expect(usageFromJson("openai", { object: "list", data: [] })).toBeUndefined();
    expect(usageFromJson("openai", { usage: null })).toBeUndefined();
    expect(usageFromJson("openai", { usage: {} })).toBeUndefined();
    expect(usageFromJson("openai", "not an object")).toBeUndefined();
    expect(usageFromJson("openai", null)).toBeUndefined();
  });

  test("missing or malformed numbers count as 0", () => {
    expect(usageFromJson("openai", { usage: { prompt_tokens: 12, completion_tokens: null, prompt_tokens_details: null } })).toEqual({
      prompt: 12,
      completion: 0,
      cacheRead: 0,
      cacheWrite: 0,
      reasoning: 0,
    });
  });

  const chunk = (delta: object, finish: string | null = null) => ({
    id: "chatcmpl-abc",
    object: "chat.completion.chunk",
    created: 1_750_000_000,
    model: "gpt-4o-2024-08-06",
    system_fingerprint: "fp_1",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    usage: null,
  });

  test("chat stream with include_usage: usage from the final empty-choices chunk, [DONE] ignored", () => {
    const stream = sse([
      [undefined, chunk({ role: "assistant", content: "" })],
      [undefined, chunk({ content: "Hello" })],
      [undefined, chunk({ content: " there" })],
      [undefined, chunk({}, "stop")],
      [
        undefined,
        {
          id: "chatcmpl-abc",
          object: "chat.completion.chunk",
          created: 1_750_000_000,
          model: "gpt-4o-2024-08-06",
          choices: [],
          usage: { prompt_tokens: 1200, completion_tokens: 3, total_tokens: 1203, prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 } },
        },
      ],
      [undefined, "[DONE]"],
    ]);
    for (const size of [1_000_000, 7, 1]) {
      const tap = tapStream("openai", stream, size);
      expect(tap.result()).toEqual({ prompt: 1200, completion: 3, cacheRead: 1024, cacheWrite: 0, reasoning: 0 });
    }
  });

  test("chat stream without include_usage has no usage", () => {
    const tap = tapStream("openai", sse([[undefined, chunk({ content: "Hi" })], [undefined, chunk({}, "stop")], [undefined, "[DONE]"]]));
    expect(tap.result()).toBeUndefined();
  });

  test("usage sent on every chunk (cumulative) resolves to the latest", () => {
    const withUsage = (completion: number) => ({ ...chunk({ content: "x" }), usage: { prompt_tokens: 50, completion_tokens: completion, total_tokens: 50 + completion } });
    const tap = tapStream("openai", sse([[undefined, withUsage(1)], [undefined, withUsage(2)], [undefined, withUsage(3)], [undefined, "[DONE]"]]));
    expect(tap.result()).toMatchObject({ prompt: 50, completion: 3 });
  });

  const responseObj = (status: string, usage: object | null) => ({
    id: "resp_67c",
    object: "response",
    created_at: 1_750_000_000,
    status,
    model: "o3-2025-04-16",
    output: [],
    usage,
  });

  test("Responses API stream: usage from response.completed, model from the response object", () => {
    const stream = sse([
      ["response.created", { type: "response.created", sequence_number: 0, response: responseObj("in_progress", null) }],
      ["response.in_progress", { type: "response.in_progress", sequence_number: 1, response: responseObj("in_progress", null) }],
      ["response.output_item.added", { type: "response.output_item.added", sequence_number: 2, output_index: 0, item: { id: "msg_1", type: "message", role: "assistant", content: [] } }],
      ["response.output_text.delta", { type: "response.output_text.delta", sequence_number: 3, item_id: "msg_1", output_index: 0, content_index: 0, delta: "Hi" }],
      ["response.output_text.done", { type: "response.output_text.done", sequence_number: 4, item_id: "msg_1", output_index: 0, content_index: 0, text: "Hi" }],
      [
        "response.completed",
        {
          type: "response.completed",
          sequence_number: 5,
          response: responseObj("completed", { input_tokens: 812, input_tokens_details: { cached_tokens: 512 }, output_tokens: 460, output_tokens_details: { reasoning_tokens: 448 }, total_tokens: 1272 }),
        },
      ],
    ]);
    const tap = tapStream("openai", stream, 13);
    expect(tap.result()).toEqual({ prompt: 812, completion: 460, cacheRead: 512, cacheWrite: 0, reasoning: 448 });
  });

  test("Responses API stream ending in response.incomplete still reports usage", () => {
    const stream = sse([
      ["response.created", { type: "response.created", response: responseObj("in_progress", null) }],
      ["response.incomplete", { type: "response.incomplete", response: responseObj("incomplete", { input_tokens: 100, output_tokens: 4096, total_tokens: 4196 }) }],
    ]);
    expect(tapStream("openai", stream).result()).toEqual({ prompt: 100, completion: 4096, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
  });

  test("image generation usage maps image token breakdowns", () => {
    const body = { created: 1, data: [], usage: { input_tokens: 50, input_tokens_details: { text_tokens: 40, image_tokens: 10 }, output_tokens: 4160, output_tokens_details: { image_tokens: 4160, text_tokens: 0 }, total_tokens: 4210 } };
    expect(usageFromJson("openai", body)).toEqual({ prompt: 50, completion: 4160, cacheRead: 0, cacheWrite: 0, reasoning: 0, imagePrompt: 10, imageCompletion: 4160 });
  });
});

describe("anthropic", () => {
  test("message with cache read and cache write adds both into prompt", () => {
    const body = {
      id: "msg_01",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5-20250929",
      content: [{ type: "text", text: "Hi" }],
      stop_reason: "end_turn",
      usage: { input_tokens: 25, cache_creation_input_tokens: 1800, cache_read_input_tokens: 12000, output_tokens: 310, cache_creation: { ephemeral_5m_input_tokens: 1800, ephemeral_1h_input_tokens: 0 }, service_tier: "standard" },
    };
    expect(usageFromJson("anthropic", body)).toEqual({ prompt: 13825, completion: 310, cacheRead: 12000, cacheWrite: 1800, reasoning: 0 });
  });

  test("null cache fields count as 0", () => {
    const body = { type: "message", usage: { input_tokens: 9, cache_creation_input_tokens: null, cache_read_input_tokens: null, output_tokens: 4 } };
    expect(usageFromJson("anthropic", body)).toEqual({ prompt: 9, completion: 4, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
  });

  test("thinking tokens broken out in output_tokens_details become reasoning, inside completion", () => {
    const body = { type: "message", usage: { input_tokens: 100, output_tokens: 2000, output_tokens_details: { thinking_tokens: 1500 } } };
    expect(usageFromJson("anthropic", body)).toEqual({ prompt: 100, completion: 2000, cacheRead: 0, cacheWrite: 0, reasoning: 1500 });
  });

  test("count_tokens is prompt only", () => {
    expect(usageFromJson("anthropic", { input_tokens: 2095 })).toEqual({ prompt: 2095, completion: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
  });

  test("an error body has no usage", () => {
    expect(usageFromJson("anthropic", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } })).toBeUndefined();
  });

  const messageStart = (usage: object) => ({
    type: "message_start",
    message: { id: "msg_01", type: "message", role: "assistant", model: "claude-opus-4-1-20250805", content: [], stop_reason: null, stop_sequence: null, usage },
  });
  const textDelta = (text: string) => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } });

  test("stream: message_delta is cumulative, so the last one wins rather than the sum", () => {
    const stream = sse([
      ["message_start", messageStart({ input_tokens: 30, cache_creation_input_tokens: 0, cache_read_input_tokens: 4000, output_tokens: 1 })],
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
      ["ping", { type: "ping" }],
      ["content_block_delta", textDelta("Hello")],
      ["message_delta", { type: "message_delta", delta: { stop_reason: null, stop_sequence: null }, usage: { output_tokens: 40 } }],
      ["content_block_delta", textDelta(" world")],
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 95 } }],
      ["message_stop", { type: "message_stop" }],
    ]);
    for (const size of [1_000_000, 5, 1]) {
      const tap = tapStream("anthropic", stream, size);
      expect(tap.result()).toEqual({ prompt: 4030, completion: 95, cacheRead: 4000, cacheWrite: 0, reasoning: 0 });
    }
  });

  test("stream: fields present in message_delta override message_start, nulls do not", () => {
    const stream = sse(
      [
        ["message_start", messageStart({ input_tokens: 10, cache_creation_input_tokens: 200, cache_read_input_tokens: 300, output_tokens: 2 })],
        [
          "message_delta",
          { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { input_tokens: 15, cache_creation_input_tokens: null, cache_read_input_tokens: 350, output_tokens: 70, output_tokens_details: { thinking_tokens: 50 } } },
        ],
        ["message_stop", { type: "message_stop" }],
      ],
      "\r\n",
    );
    expect(tapStream("anthropic", stream, 3).result()).toEqual({ prompt: 15 + 200 + 350, completion: 70, cacheRead: 350, cacheWrite: 200, reasoning: 50 });
  });

  test("stream: message_start alone gives the input side and the initial output count", () => {
    const tap = tapStream("anthropic", sse([["message_start", messageStart({ input_tokens: 12, output_tokens: 1 })]]));
    expect(tap.result()).toEqual({ prompt: 12, completion: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
  });

  test("stream: an error with no usage gives undefined, and garbage is tolerated", () => {
    const tap = tapStream("anthropic", sse([["error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }], [undefined, "{not json"], ["message_delta", "usage but not json"]]));
    expect(tap.result()).toBeUndefined();
  });

  test("stream: text that mentions usage does not confuse the tap", () => {
    const stream = sse([
      ["message_start", messageStart({ input_tokens: 5, output_tokens: 1 })],
      ["content_block_delta", textDelta('{"type":"message_delta","usage":{"output_tokens":99999}}')],
      ["message_delta", { type: "message_delta", delta: {}, usage: { output_tokens: 20 } }],
    ]);
    expect(tapStream("anthropic", stream).result()).toMatchObject({ completion: 20 });
  });
});

describe("gemini", () => {
  const response = (text: string, usageMetadata?: object, finishReason?: string) => ({
    candidates: [{ content: { role: "model", parts: [{ text }] }, index: 0, ...(finishReason ? { finishReason } : {}) }],
    ...(usageMetadata ? { usageMetadata } : {}),
    modelVersion: "gemini-2.5-pro",
    responseId: "abc123",
  });

  test("generateContent with thoughts, cached content and tool-use prompt", () => {
    const body = response("Done.", { promptTokenCount: 5000, candidatesTokenCount: 120, cachedContentTokenCount: 4096, thoughtsTokenCount: 880, toolUsePromptTokenCount: 300, totalTokenCount: 6300 }, "STOP");
    expect(usageFromJson("gemini", body)).toEqual({ prompt: 5300, completion: 1000, cacheRead: 4096, cacheWrite: 0, reasoning: 880 });
  });

  test("a response with only promptTokenCount (e.g. blocked prompt) counts the rest as 0", () => {
    const body = { promptFeedback: { blockReason: "SAFETY" }, usageMetadata: { promptTokenCount: 42, totalTokenCount: 42 }, modelVersion: "gemini-2.5-flash" };
    expect(usageFromJson("gemini", body)).toEqual({ prompt: 42, completion: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
  });

  test("modality details give image and audio breakdowns", () => {
    const body = response("", {
      promptTokenCount: 1290,
      candidatesTokenCount: 1290,
      totalTokenCount: 2580,
      promptTokensDetails: [
        { modality: "TEXT", tokenCount: 32 },
        { modality: "IMAGE", tokenCount: 1258 },
      ],
      candidatesTokensDetails: [{ modality: "IMAGE", tokenCount: 1290 }],
    });
    expect(usageFromJson("gemini", body)).toEqual({ prompt: 1290, completion: 1290, cacheRead: 0, cacheWrite: 0, reasoning: 0, imagePrompt: 1258, imageCompletion: 1290 });
  });

  test("a streamGenerateContent JSON array (no alt=sse) uses the last usageMetadata", () => {
    const body = [response("a", { promptTokenCount: 10, totalTokenCount: 10 }), response("b", { promptTokenCount: 10, candidatesTokenCount: 7, totalTokenCount: 17 }), response("", undefined)];
    expect(usageFromJson("gemini", body)).toMatchObject({ prompt: 10, completion: 7 });
  });

  test("no usageMetadata gives undefined", () => {
    expect(usageFromJson("gemini", response("hi"))).toBeUndefined();
    expect(usageFromJson("gemini", [])).toBeUndefined();
  });

  test("alt=sse stream: the last (cumulative) usageMetadata wins, thoughts included in completion", () => {
    const stream = sse(
      [
        [undefined, response("", { promptTokenCount: 800, totalTokenCount: 1100, thoughtsTokenCount: 300 })],
        [undefined, response("The answer", { promptTokenCount: 800, candidatesTokenCount: 3, thoughtsTokenCount: 512, totalTokenCount: 1315 })],
        [undefined, response(" is 42.", { promptTokenCount: 800, candidatesTokenCount: 9, cachedContentTokenCount: 512, thoughtsTokenCount: 512, totalTokenCount: 1321 }, "STOP")],
      ],
      "\r\n",
    );
    for (const size of [1_000_000, 11, 1]) {
      const tap = tapStream("gemini", stream, size);
      expect(tap.result()).toEqual({ prompt: 800, completion: 521, cacheRead: 512, cacheWrite: 0, reasoning: 512 });
    }
  });

  test("stream without usageMetadata gives undefined", () => {
    const tap = tapStream("gemini", sse([[undefined, response("x")]]));
    expect(tap.result()).toBeUndefined();
  });
});

test("non-JSON data and unknown events never throw, for every family", () => {
  for (const family of ["openai", "anthropic", "gemini"] as const) {
    const tap = createStreamUsageTap(family);
    for (const data of ["[DONE]", "", "{", "null", "42", '"usage"', '["usage"]', '{"usage":"lots","usageMetadata":7,"response":null}']) {
      expect(() => tap.onEvent({ event: "weird", data })).not.toThrow();
    }
    expect(tap.result()).toBeUndefined();
  }
});

test("result() returns a copy the caller may change", () => {
  const tap = tapStream("gemini", sse([[undefined, { usageMetadata: { promptTokenCount: 3 } }]]));
  const first = tap.result();
  if (first) first.prompt = 999;
  expect(tap.result()?.prompt).toBe(3);
});

describe("firstNeeded: where in raw bytes the first event a tap needs may be", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);
  const at = (family: Family, text: string) => createStreamUsageTap(family).firstNeeded(bytes(text));

  test("openai: a usage key whose value is an object, never \"usage\":null", () => {
    const content = 'data: {"model":"gpt-x","choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n';
    expect(at("openai", content)).toBe(-1);
    const usage = 'data: {"choices":[],"usage":{"prompt_tokens":1}}\n\n';
    expect(at("openai", content + usage)).toBe(content.length + usage.indexOf('"usage"'));
    expect(at("openai", 'data: {"choices":[],"usage" : \t{"prompt_tokens":1}}\n\n')).toBeGreaterThan(0);
    // The key is the last thing of the read: its value may be an object.
    expect(at("openai", 'data: {"choices":[],"usage":')).toBeGreaterThan(0);
    // Content that merely talks about usage, next to a null usage field.
    expect(at("openai", 'data: {"choices":[{"delta":{"content":"\\"usage\\" is a word"}}],"usage":null}\n\n')).toBe(-1);
  });

  test("anthropic: usage or message_start", () => {
    expect(at("anthropic", 'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"hi"}}\n\n')).toBe(-1);
    expect(at("anthropic", 'event: message_start\ndata: {"type":"message_start","message":{}}\n\n')).toBe(7);
    expect(at("anthropic", 'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":3}}\n\n')).toBeGreaterThan(0);
  });

  test("gemini: usageMetadata", () => {
    expect(at("gemini", 'data: {"candidates":[{"content":{}}],"modelVersion":"g"}\r\n\r\n')).toBe(-1);
    expect(at("gemini", 'data: {"candidates":[],"usageMetadata":{"promptTokenCount":2}}\r\n\r\n')).toBeGreaterThan(0);
  });
});

import { describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import AnthropicV0 from "anthropic-v0";
import OpenAI from "openai";
import OpenAIV7 from "openai-v7";
import { HttpError } from "../../src/core/errors.ts";
import type { Family } from "../../src/formats/family.ts";
import type { JsonObject } from "../../src/formats/json.ts";
import { formatOf } from "../../src/formats/registry.ts";
import { createSseDecoder } from "../../src/formats/sse.ts";
import { translatorFor } from "../../src/formats/translate/index.ts";
import { JSON_INSTRUCTION } from "../../src/formats/translate/json-mode.ts";
import type { AnswerContext, Translator } from "../../src/formats/translate/translator.ts";
import { ANTHROPIC_CLIENT, CREATED, MAX_TOKENS, OPENAI_CLIENT, type Ev, type Transcript } from "../fixtures/translation/anthropic-openai.ts";
import { decodeSse as decode, sseText } from "../helpers/sse-transcripts.ts";

const anthropicToOpenai = translatorFor("anthropic-messages", "openai-chat")!;
const openaiToAnthropic = translatorFor("openai-chat", "anthropic-messages")!;
const context = { maxTokens: MAX_TOKENS };
const answerContext: AnswerContext = { created: CREATED };

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Runs an upstream transcript through a stream translator, as the relay would: decoded event by event, then `end()`. */
function translateStream(translator: Translator, upstream: Ev[] | string, options: AnswerContext = answerContext): Uint8Array {
  const stream = translator.stream(options);
  const parts: Uint8Array[] = [];
  const decoder = createSseDecoder((e) => parts.push(stream.push(e)));
  decoder.push(new TextEncoder().encode(typeof upstream === "string" ? upstream : sseText(upstream)));
  decoder.end();
  parts.push(stream.end());
  return concat(parts);
}

/** The usage a family's reader finds in an SSE stream. */
function tapUsage(family: Family, bytes: Uint8Array) {
  const tap = formatOf(family).streamUsageTap();
  const decoder = createSseDecoder((e) => tap.onEvent(e));
  decoder.push(bytes);
  decoder.end();
  return tap.result();
}

const sseResponse = (bytes: Uint8Array) => async () => new Response(bytes.slice(), { headers: { "content-type": "text/event-stream" } });
const jsonResponse = (body: unknown) => async () => new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });

const directions: Array<{ name: string; translator: Translator; transcripts: Transcript[]; client: Family; upstream: Family }> = [
  { name: "Anthropic client → OpenAI Chat upstream", translator: anthropicToOpenai, transcripts: ANTHROPIC_CLIENT, client: "anthropic", upstream: "openai" },
  { name: "OpenAI Chat client → Anthropic upstream", translator: openaiToAnthropic, transcripts: OPENAI_CLIENT, client: "openai", upstream: "anthropic" },
];

for (const { name, translator, transcripts, client, upstream } of directions) {
  describe(`golden transcripts: ${name}`, () => {
    for (const t of transcripts) {
      describe(t.name, () => {
        test("the request sent upstream", () => {
          expect(translator.request(structuredClone(t.clientRequest), context)).toEqual(t.upstreamRequest);
        });

        test("a streamed request asks the upstream to stream (with usage where it must be asked for)", () => {
          const streamed = translator.request({ ...structuredClone(t.clientRequest), stream: true }, context);
          const extra = upstream === "openai" ? { stream: true, stream_options: { include_usage: true } } : { stream: true };
          expect(streamed).toEqual({ ...t.upstreamRequest, ...extra });
        });

        test("the JSON answer", () => {
          expect(translator.response(structuredClone(t.upstreamJson), answerContext)).toEqual(t.clientJson);
        });

        test("the stream, event by event", () => {
          expect(decode(translateStream(translator, t.upstreamSse))).toEqual(t.clientSse);
        });

        test("metering parity: the client format's usage reader finds what the upstream's finds", () => {
          const upstreamUsage = formatOf(upstream).usageFromJson(t.upstreamJson);
          expect(upstreamUsage).toBeDefined();
          expect(formatOf(client).usageFromJson(translator.response(t.upstreamJson, answerContext))).toEqual(upstreamUsage!);
          const upstreamTapped = tapUsage(upstream, new TextEncoder().encode(sseText(t.upstreamSse)));
          expect(tapUsage(client, translateStream(translator, t.upstreamSse))).toEqual(upstreamTapped!);
          // The JSON and the stream of one answer meter alike.
          expect(upstreamTapped).toEqual(upstreamUsage!);
        });
      });
    }
  });
}

/** The request an SDK sends, reduced to what its stream helpers need (the answer is canned). */
const anthropicParams = (t: Transcript) => ({ model: String(t.clientRequest.model), max_tokens: 100, messages: [{ role: "user" as const, content: "x" }] });
const openaiParams = (t: Transcript) => ({ model: String(t.clientRequest.model), messages: [{ role: "user" as const, content: "x" }] });

/** The message as JSON, without the SDK's own `parsed_output` (it parses structured output only when asked to). */
function withoutParsed(message: unknown): unknown {
  const m = JSON.parse(JSON.stringify(message)) as JsonObject;
  delete m.parsed_output;
  return m;
}

describe("the official Anthropic SDKs read what an OpenAI Chat upstream answered", () => {
  const sdks = [
    { name: "@anthropic-ai/sdk 1.x", make: (fetch: () => Promise<Response>) => new Anthropic({ apiKey: "k", baseURL: "http://router.test", maxRetries: 0, fetch }) },
    { name: "@anthropic-ai/sdk 0.x", make: (fetch: () => Promise<Response>) => new AnthropicV0({ apiKey: "k", baseURL: "http://router.test", maxRetries: 0, fetch }) as unknown as Anthropic },
  ];
  for (const sdk of sdks) {
    for (const t of ANTHROPIC_CLIENT) {
      test(`${sdk.name}: ${t.name}: the stream helper's final message is the JSON answer`, async () => {
        const bytes = translateStream(anthropicToOpenai, t.upstreamSse);
        const final = await sdk.make(sseResponse(bytes)).messages.stream(anthropicParams(t)).finalMessage();
        expect(withoutParsed(final)).toEqual(t.clientJson);
        const created = await sdk.make(jsonResponse(anthropicToOpenai.response(t.upstreamJson))).messages.create(anthropicParams(t));
        expect(withoutParsed(created)).toEqual(t.clientJson);
      });
    }
    test(`${sdk.name}: a translated mid-stream failure raises the SDK's error`, async () => {
      const stream = anthropicToOpenai.stream();
      const first = ANTHROPIC_CLIENT[1]!.upstreamSse[1]!;
      const bytes = concat([stream.push({ event: undefined, data: JSON.stringify(first.data) }), stream.fail(new HttpError("unavailable", "upstream overloaded")), stream.end()]);
      const run = sdk.make(sseResponse(bytes)).messages.stream(anthropicParams(ANTHROPIC_CLIENT[1]!)).finalMessage();
      await expect(run).rejects.toThrow("upstream overloaded");
    });
  }
});

/**
 * A completion reduced to what the stream helper and a JSON answer must agree on: tool-call
 * arguments compared as JSON values (a stream passes the model's own JSON text on verbatim,
 * spacing included), and without `reasoning_content`, which the helper does not accumulate
 * (it keeps an unknown delta field's last value, as against any OpenAI-compatible reasoning
 * server; the test checks its deltas instead).
 */
function comparable(completion: unknown): unknown {
  const c = JSON.parse(JSON.stringify(completion)) as JsonObject;
  for (const choice of c.choices as JsonObject[]) {
    const message = choice.message as JsonObject;
    delete message.parsed;
    delete message.reasoning_content;
    if (message.refusal === undefined) message.refusal = null;
    for (const call of (message.tool_calls ?? []) as Array<{ function: { arguments: unknown } }>) call.function.arguments = JSON.parse(String(call.function.arguments));
  }
  return c;
}

describe("the official OpenAI SDKs read what an Anthropic upstream answered", () => {
  const sdks = [
    { name: "openai 6", make: (fetch: () => Promise<Response>) => new OpenAI({ apiKey: "k", baseURL: "http://router.test/v1", maxRetries: 0, fetch }) },
    { name: "openai 7", make: (fetch: () => Promise<Response>) => new OpenAIV7({ apiKey: "k", baseURL: "http://router.test/v1", maxRetries: 0, fetch }) as unknown as OpenAI },
  ];
  for (const sdk of sdks) {
    for (const t of OPENAI_CLIENT) {
      test(`${sdk.name}: ${t.name}: the stream helper's final completion is the JSON answer`, async () => {
        const bytes = translateStream(openaiToAnthropic, t.upstreamSse);
        let reasoning = "";
        const stream = sdk.make(sseResponse(bytes)).chat.completions.stream(openaiParams(t));
        stream.on("chunk", (chunk) => {
          reasoning += (chunk.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? "";
        });
        const final = await stream.finalChatCompletion();
        expect(comparable(final)).toEqual(comparable(t.clientJson));
        const expectedMessage = (t.clientJson.choices as Array<{ message: JsonObject }>)[0]!.message;
        expect(reasoning).toBe(String(expectedMessage.reasoning_content ?? ""));
        const created = await sdk.make(jsonResponse(openaiToAnthropic.response(t.upstreamJson, answerContext))).chat.completions.create(openaiParams(t));
        expect(JSON.parse(JSON.stringify(created))).toEqual(t.clientJson);
      });
    }
    test(`${sdk.name}: a translated mid-stream failure raises the SDK's error`, async () => {
      const upstreamEvents = OPENAI_CLIENT[1]!.upstreamSse.slice(0, 3);
      const stream = openaiToAnthropic.stream(answerContext);
      const parts = upstreamEvents.map((e) => stream.push({ event: e.event, data: JSON.stringify(e.data) }));
      const bytes = concat([...parts, stream.fail(new HttpError("unavailable", "upstream overloaded")), stream.end()]);
      const run = sdk.make(sseResponse(bytes)).chat.completions.stream(openaiParams(OPENAI_CLIENT[1]!)).finalChatCompletion();
      await expect(run).rejects.toThrow("upstream overloaded");
    });
  }
});

/** The 400 a request translation throws, as the router would render it. */
function refusal(run: () => unknown): { status: number; param: string | undefined; message: string } {
  try {
    run();
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { status: error.status, param: error.param, message: error.message };
  }
  throw new Error("expected a refusal");
}

const anthropicBody = (extra: JsonObject = {}): JsonObject => ({ model: "m", max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...extra });
const openaiBody = (extra: JsonObject = {}): JsonObject => ({ model: "m", messages: [{ role: "user", content: "hi" }], ...extra });

describe("what cannot be carried is a 400 naming the parameter and the upstream format", () => {
  const towardsAnthropic: Array<[string, JsonObject]> = [
    ["n", { n: 2 }],
    ["tools[1].type", { tools: [{ type: "function", function: { name: "f" } }, { type: "file_search", vector_store_ids: ["vs"] }] }],
    ["tool_choice", { tools: [{ type: "function", function: { name: "f" } }], tool_choice: { type: "allowed_tools", allowed_tools: { mode: "auto", tools: [] } } }],
    ["logprobs", { logprobs: true }],
    ["logit_bias", { logit_bias: { "50256": -100 } }],
    ["audio", { modalities: ["text", "audio"], audio: { voice: "alloy", format: "wav" } }],
    ["web_search_options", { web_search_options: {} }],
    ["functions", { functions: [{ name: "f" }] }],
    ["messages[0].content[0].type", { messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AA==", format: "wav" } }] }] }],
    ["messages[0].content[0].file", { messages: [{ role: "user", content: [{ type: "file", file: { file_id: "file-1" } }] }] }],
    ["messages[0].tool_calls[0].function.arguments", { messages: [{ role: "assistant", content: null, tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{not json" } }] }] }],
  ];
  for (const [param, extra] of towardsAnthropic) {
    test(`OpenAI Chat → Anthropic: ${param}`, () => {
      const refused = refusal(() => openaiToAnthropic.request(openaiBody(extra), context));
      expect({ status: refused.status, param: refused.param }).toEqual({ status: 400, param });
      if (!param.endsWith("arguments")) expect(refused.message).toContain("Anthropic Messages");
    });
  }

  const towardsOpenai: Array<[string, JsonObject]> = [
    ["tools[0].type", { tools: [{ type: "web_search_20250305", name: "web_search" }] }],
    ["mcp_servers", { mcp_servers: [{ type: "url", url: "https://mcp.example", name: "x" }] }],
    ["container", { container: "container_1" }],
    ["messages[0].content[0].type", { messages: [{ role: "user", content: [{ type: "search_result", source: "s", title: "t", content: [] }] }] }],
    ["messages[0].content[0].source.type", { messages: [{ role: "user", content: [{ type: "image", source: { type: "file", file_id: "file_1" } }] }] }],
  ];
  for (const [param, extra] of towardsOpenai) {
    test(`Anthropic → OpenAI Chat: ${param}`, () => {
      const refused = refusal(() => anthropicToOpenai.request(anthropicBody(extra), context));
      expect(refused).toMatchObject({ status: 400, param });
      expect(refused.message).toContain("OpenAI Chat Completions");
    });
  }

  test("harmless hints are dropped, not refused", () => {
    const toAnthropic = openaiToAnthropic.request(openaiBody({ n: 1, seed: 1, frequency_penalty: 0.5, presence_penalty: 0.5, store: true, metadata: { a: "b" }, service_tier: "auto", prompt_cache_key: "k", stream_options: { include_usage: true }, response_format: { type: "json_object" }, logprobs: false }), context);
    // JSON mode, which Anthropic has not, is asked for in the instructions.
    expect(toAnthropic).toEqual({ model: "m", system: [{ type: "text", text: JSON_INSTRUCTION }], messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], max_tokens: MAX_TOKENS });
    const toOpenai = anthropicToOpenai.request(anthropicBody({ top_k: 5, metadata: { user_id: "u" }, service_tier: "auto", thinking: { type: "disabled" } }), context);
    expect(toOpenai).toEqual({ model: "m", messages: [{ role: "user", content: "hi" }], max_completion_tokens: 100 });
  });
});

describe("request details", () => {
  test("the reserved bound goes upstream when the client names none, and thinking stays below it", () => {
    expect(openaiToAnthropic.request(openaiBody(), { maxTokens: 777 }).max_tokens).toBe(777);
    expect(openaiToAnthropic.request(openaiBody({ max_tokens: 50 }), context).max_tokens).toBe(50);
    expect(openaiToAnthropic.request(openaiBody({ reasoning_effort: "high", max_completion_tokens: 5000 }), context).thinking).toEqual({ type: "enabled", budget_tokens: 4999 });
    // Anthropic's smallest budget does not fit under a bound this small: no thinking rather than a refused call.
    expect(openaiToAnthropic.request(openaiBody({ reasoning_effort: "low", max_tokens: 1000 }), context).thinking).toBeUndefined();
    expect(openaiToAnthropic.request(openaiBody({ reasoning_effort: "minimal" }), context).thinking).toBeUndefined();
  });

  test("efforts and budgets: thinking budgets become efforts, output_config.effort wins", () => {
    const effort = (extra: JsonObject) => anthropicToOpenai.request(anthropicBody(extra), context).reasoning_effort;
    expect(effort({ thinking: { type: "enabled", budget_tokens: 1024 } })).toBe("low");
    expect(effort({ thinking: { type: "enabled", budget_tokens: 32000 } })).toBe("high");
    expect(effort({ thinking: { type: "enabled", budget_tokens: 32000 }, output_config: { effort: "low" } })).toBe("low");
    expect(effort({ thinking: { type: "adaptive" } })).toBeUndefined();
  });

  test("sampling: OpenAI temperatures above Anthropic's range are capped at 1; a single stop string becomes a list", () => {
    const body = openaiToAnthropic.request(openaiBody({ temperature: 1.7, stop: "END" }), context);
    expect({ temperature: body.temperature, stop_sequences: body.stop_sequences }).toEqual({ temperature: 1, stop_sequences: ["END"] });
  });

  test("tool choices both ways", () => {
    const tools = [{ type: "function", function: { name: "f", parameters: { type: "object" } } }];
    const toAnthropic = (tool_choice: unknown, extra: JsonObject = {}) => openaiToAnthropic.request(openaiBody({ tools, tool_choice, ...extra }), context).tool_choice;
    expect(toAnthropic("required")).toEqual({ type: "any" });
    expect(toAnthropic("none", { parallel_tool_calls: false })).toEqual({ type: "none" });
    expect(toAnthropic({ type: "function", function: { name: "f" } }, { parallel_tool_calls: false })).toEqual({ type: "tool", name: "f", disable_parallel_tool_use: true });
    const anthropicTools = [{ name: "f", input_schema: { type: "object" } }];
    const toOpenai = (tool_choice: JsonObject) => {
      const body = anthropicToOpenai.request(anthropicBody({ tools: anthropicTools, tool_choice }), context);
      return { tool_choice: body.tool_choice, parallel_tool_calls: body.parallel_tool_calls };
    };
    expect(toOpenai({ type: "any" })).toEqual({ tool_choice: "required", parallel_tool_calls: undefined });
    expect(toOpenai({ type: "tool", name: "f", disable_parallel_tool_use: true })).toEqual({ tool_choice: { type: "function", function: { name: "f" } }, parallel_tool_calls: false });
    expect(toOpenai({ type: "none" })).toEqual({ tool_choice: "none", parallel_tool_calls: undefined });
  });

  test("Anthropic tool results: an image travels in a user message after the tool messages; thinking in the history is dropped", () => {
    const image = { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } };
    const body = anthropicToOpenai.request(anthropicBody({
      messages: [
        { role: "user", content: "Screenshot please" },
        { role: "assistant", content: [{ type: "thinking", thinking: "hm", signature: "s" }, { type: "text", text: "Taking it." }, { type: "tool_use", id: "t1", name: "shot", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", is_error: false, content: [{ type: "text", text: "done" }, image] }, { type: "text", text: "What do you see?" }] },
      ],
    }), context);
    expect(body.messages).toEqual([
      { role: "user", content: "Screenshot please" },
      { role: "assistant", content: "Taking it.", tool_calls: [{ id: "t1", type: "function", function: { name: "shot", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "t1", content: "done" },
      { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }, { type: "text", text: "What do you see?" }] },
    ]);
  });

  test("PDF documents: Anthropic base64 documents ⇄ Chat file parts", () => {
    const doc = { type: "document", title: "report.pdf", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" } };
    const file = { type: "file", file: { filename: "report.pdf", file_data: "data:application/pdf;base64,JVBERi0=" } };
    expect(anthropicToOpenai.request(anthropicBody({ messages: [{ role: "user", content: [doc] }] }), context).messages).toEqual([{ role: "user", content: [file] }]);
    expect(openaiToAnthropic.request(openaiBody({ messages: [{ role: "user", content: [file] }] }), context).messages).toEqual([{ role: "user", content: [doc] }]);
  });
});

describe("streams: tool-call deltas keep their own call", () => {
  const chunk = (delta: JsonObject, finish: string | null = null): Ev => ({ data: { id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] } });
  const call = (index: number, args: string, start?: { id: string; name: string }) => ({ index, ...(start ? { id: start.id, type: "function" } : {}), function: { ...(start ? { name: start.name } : {}), arguments: args } });

  test("an upstream that interleaves two calls' fragments: each fragment goes to its own call's block, in order", async () => {
    const upstream = [
      chunk({ role: "assistant", tool_calls: [call(0, '{"a"', { id: "c0", name: "f" }), call(1, '{"b"', { id: "c1", name: "g" })] }),
      chunk({ tool_calls: [call(0, ":1}")] }),
      chunk({ tool_calls: [call(1, ":2}")] }),
      chunk({}, "tool_calls"),
      { data: "[DONE]" },
    ];
    const bytes = translateStream(anthropicToOpenai, upstream);
    const deltas = decode(bytes).filter((e) => e.event === "content_block_delta").map((e) => {
      const d = e.data as { index: number; delta: { partial_json: string } };
      return [d.index, d.delta.partial_json];
    });
    expect(deltas).toEqual([[0, '{"a"'], [1, '{"b"'], [0, ":1}"], [1, ":2}"]]);
    const final = await new Anthropic({ apiKey: "k", baseURL: "http://router.test", maxRetries: 0, fetch: sseResponse(bytes) }).messages.stream(anthropicParams(ANTHROPIC_CLIENT[0]!)).finalMessage();
    expect(final.content as unknown[]).toEqual([
      { type: "tool_use", id: "c0", name: "f", input: { a: 1 } },
      { type: "tool_use", id: "c1", name: "g", input: { b: 2 } },
    ]);
  });

  test("Anthropic tool uses separated by text become Chat calls 0 and 1, and the SDK assembles each apart", async () => {
    const upstream: Ev[] = [
      { event: "message_start", data: { type: "message_start", message: { id: "msg", type: "message", role: "assistant", model: "m", content: [], usage: { input_tokens: 5, output_tokens: 1 } } } },
      { event: "content_block_start", data: { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "t0", name: "f", input: {} } } },
      { event: "content_block_delta", data: { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"x":' } } },
      { event: "content_block_delta", data: { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "1}" } } },
      { event: "content_block_stop", data: { type: "content_block_stop", index: 0 } },
      { event: "content_block_start", data: { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } } },
      { event: "content_block_delta", data: { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "and" } } },
      { event: "content_block_stop", data: { type: "content_block_stop", index: 1 } },
      { event: "content_block_start", data: { type: "content_block_start", index: 2, content_block: { type: "tool_use", id: "t1", name: "f", input: {} } } },
      { event: "content_block_delta", data: { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '{"x":2}' } } },
      { event: "content_block_stop", data: { type: "content_block_stop", index: 2 } },
      { event: "message_delta", data: { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 9 } } },
      { event: "message_stop", data: { type: "message_stop" } },
    ];
    const bytes = translateStream(openaiToAnthropic, upstream);
    const final = await new OpenAI({ apiKey: "k", baseURL: "http://router.test/v1", maxRetries: 0, fetch: sseResponse(bytes) }).chat.completions.stream(openaiParams(OPENAI_CLIENT[0]!)).finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe("and");
    expect(final.choices[0]!.message.tool_calls!.map((c) => (c.type === "function" ? [c.id, c.function.arguments] : []))).toEqual([["t0", '{"x":1}'], ["t1", '{"x":2}']]);
    expect(final.choices[0]!.finish_reason).toBe("tool_calls");
  });
});

describe("streams: endings", () => {
  test("an OpenAI upstream that ends without [DONE] (or usage) still gets a whole Anthropic message on end()", () => {
    const t = ANTHROPIC_CLIENT[1]!;
    const events = decode(translateStream(anthropicToOpenai, t.upstreamSse.slice(0, 5)));
    expect(events.map((e) => e.event)).toEqual(["message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
  });

  test("usage in the finishing chunk (as some OpenAI-compatible servers send it) is metered", () => {
    const upstream: Ev[] = [{ data: { id: "c", model: "m", choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "length" }], usage: { prompt_tokens: 7, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 2 } } } }];
    const events = decode(translateStream(anthropicToOpenai, upstream));
    expect(events.at(-2)!.data).toEqual({ type: "message_delta", delta: { stop_reason: "max_tokens", stop_sequence: null }, usage: { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 2, output_tokens: 3 } });
  });

  test("an in-band upstream error becomes the client's terminal error event, and nothing follows it", () => {
    const toAnthropic = decode(translateStream(anthropicToOpenai, [{ data: { error: { message: "boom", type: "server_error" } } }, { data: "[DONE]" }]));
    // The message may have been opened first (as Anthropic's own streams do); the error ends it, with no message_stop.
    expect(toAnthropic.at(-1)).toEqual({ event: "error", data: { type: "error", error: { type: "api_error", message: "boom" } } });
    expect(toAnthropic.filter((e) => e.event !== "message_start" && e.event !== "error")).toEqual([]);
    const toOpenai = decode(translateStream(openaiToAnthropic, [
      ...OPENAI_CLIENT[1]!.upstreamSse.slice(0, 2),
      { event: "error", data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } },
      OPENAI_CLIENT[1]!.upstreamSse.at(-1)!,
    ], answerContext));
    expect(toOpenai.at(-1)).toEqual({ data: { error: { message: "Overloaded", type: "overloaded_error", param: null, code: null } } });
    expect(toOpenai.filter((e) => e.data === "[DONE]")).toEqual([]);
  });

  test("an OpenAI client that did not ask for usage gets no usage chunk", () => {
    const events = decode(translateStream(openaiToAnthropic, OPENAI_CLIENT[1]!.upstreamSse, { created: CREATED, usageChunk: false }));
    expect(events.slice(-2)).toEqual([OPENAI_CLIENT[1]!.clientSse.at(-3)!, { data: "[DONE]" }]);
  });

  test("fail() after the stream finished adds nothing", () => {
    const stream = openaiToAnthropic.stream(answerContext);
    for (const e of OPENAI_CLIENT[1]!.upstreamSse) stream.push({ event: e.event, data: JSON.stringify(e.data) });
    expect(stream.fail(new HttpError("upstream", "late")).byteLength).toBe(0);
    expect(stream.end().byteLength).toBe(0);
  });
});

describe("upstream errors in the client's envelope", () => {
  test("Anthropic's errors for an OpenAI client: 529 overloaded reads as 503, the type and message kept", () => {
    expect(openaiToAnthropic.error(529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } })).toEqual({
      status: 503, body: { error: { message: "Overloaded", type: "overloaded_error", param: null, code: null } },
    });
    expect(openaiToAnthropic.error(400, { type: "error", error: { type: "invalid_request_error", message: "max_tokens: too large" } })).toEqual({
      status: 400, body: { error: { message: "max_tokens: too large", type: "invalid_request_error", param: null, code: null } },
    });
  });

  test("OpenAI's errors for an Anthropic client: the status kept, the type in Anthropic's words", () => {
    expect(anthropicToOpenai.error(429, { error: { message: "Rate limit reached", type: "requests", param: null, code: "rate_limit_exceeded" } })).toEqual({
      status: 429, body: { type: "error", error: { type: "rate_limit_error", message: "Rate limit reached" } },
    });
    // OpenAI types a bad key as an invalid request; the 401 tells Anthropic's SDK what it is.
    expect(anthropicToOpenai.error(401, { error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } })).toEqual({
      status: 401, body: { type: "error", error: { type: "authentication_error", message: "Incorrect API key provided" } },
    });
    // An answer in neither envelope: the status decides.
    expect(anthropicToOpenai.error(502, "<html>Bad gateway</html>")).toEqual({ status: 502, body: { type: "error", error: { type: "api_error", message: "The upstream answered 502" } } });
  });
});

describe("purity", () => {
  test("translating leaves the client's body and the upstream's answer as they were", () => {
    for (const { translator, transcripts } of directions) {
      for (const t of transcripts) {
        const request = structuredClone(t.clientRequest);
        const answer = structuredClone(t.upstreamJson);
        translator.request(request, context);
        translator.response(answer, answerContext);
        expect({ request, answer }).toEqual({ request: t.clientRequest, answer: t.upstreamJson });
      }
    }
  });
});

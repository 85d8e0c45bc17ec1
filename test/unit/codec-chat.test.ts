/**
 * The OpenAI Chat Completions codec (src/formats/translate/codecs/chat/): Chat requests
 * read into the shared model and written out of it, upstream answers and streams read,
 * client answers and streams written (and read back by the official OpenAI SDKs), errors
 * both ways. Fixtures are hand-written from OpenAI's Chat Completions reference.
 */
import { describe, expect, test } from "bun:test";
import OpenAI from "openai";
import OpenAIV7 from "openai-v7";
import { HttpError } from "../../src/core/errors.ts";
import type { JsonObject } from "../../src/formats/json.ts";
import { openaiUsageFromJson } from "../../src/formats/openai/usage.ts";
import { formatOf } from "../../src/formats/registry.ts";
import { createSseDecoder, type SseEvent } from "../../src/formats/sse.ts";
import type { ReadContext } from "../../src/formats/translate/codec.ts";
import { chatCodec } from "../../src/formats/translate/codecs/chat/index.ts";
import { codecOf } from "../../src/formats/translate/codecs/index.ts";
import type { IrAnswer, IrEvent, IrRequest } from "../../src/formats/translate/ir.ts";
import type { AnswerContext } from "../../src/formats/translate/translator.ts";
import { CREATED, chunk, FULL_IR, FULL_REQUEST, INTERLEAVED_EVENTS, INTERLEAVED_STREAM, NORMAL_REQUESTS, PNG, STREAM_USAGE, TOOL_ANSWER, usageChunk } from "../fixtures/translation/chat.ts";
import { decodeSse, thrownHttpError as thrown } from "../helpers/sse-transcripts.ts";

const UPSTREAM = "Anthropic Messages";
const readContext = (body: JsonObject): ReadContext => ({ model: typeof body.model === "string" ? body.model : undefined, stream: body.stream === true, upstream: UPSTREAM });
const read = (body: JsonObject) => chatCodec.readRequest(structuredClone(body), readContext(body));
const requestContext = { maxTokens: 4096 };
const write = (request: IrRequest) => chatCodec.writeRequest(structuredClone(request), requestContext);

/** A minimal IR request, with `extra` over it. */
const ir = (extra: Partial<IrRequest> = {}): IrRequest => ({
  model: "m", stream: false, system: [], messages: [{ role: "user", parts: [{ type: "text", text: "hi" }], param: "messages[0]" }], tools: [], ...extra,
});

/** SSE events of chunks as an upstream sends them. */
const sse = (items: Array<JsonObject | "[DONE]">): SseEvent[] => items.map((data) => ({ event: undefined, data: typeof data === "string" ? data : JSON.stringify(data) }));

/** Every event an upstream stream makes, `end()` included. */
function readStream(items: Array<JsonObject | "[DONE]">): IrEvent[] {
  const reader = chatCodec.streamReader();
  return [...sse(items).flatMap((e) => reader.push(e)), ...reader.end()];
}

/** The SSE text a writer makes of events (each batch written as it comes), then `end()`. */
function writeStream(batches: IrEvent[][], context: AnswerContext = { created: CREATED }): string {
  const writer = chatCodec.streamWriter(context);
  return batches.map((b) => writer.write(b)).join("") + writer.end();
}

/** A Chat stream's chunks (and its `[DONE]`), decoded. */
const decode = (text: string) => decodeSse(text).map((e) => e.data) as Array<JsonObject | "[DONE]">;

// ——— (a) client requests read into the model ———

describe("reading Chat requests", () => {
  test("a request using nearly every field reads into exact model values", () => {
    expect(read(FULL_REQUEST)).toEqual(FULL_IR);
  });

  test("the effective model and stream flag come from the context", () => {
    const request = chatCodec.readRequest({ messages: [{ role: "user", content: "hi" }] }, { model: "from-path", stream: true, upstream: UPSTREAM });
    expect({ model: request.model, stream: request.stream }).toEqual({ model: "from-path", stream: true });
  });

  test("max_tokens when max_completion_tokens is absent; JSON mode; text format; nulls read as absent", () => {
    const request = read({
      model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 77, response_format: { type: "json_object" },
      temperature: null, stop: null, tool_choice: null, reasoning_effort: null, n: 1, logprobs: false, functions: null, audio: null,
    });
    expect(request).toEqual({ ...ir(), maxTokens: 77, output: { type: "json", param: "response_format" } });
    expect(read({ model: "m", messages: [], response_format: { type: "text" } }).output).toEqual({ type: "text" });
  });

  test("a schema without strict reads as loose (Chat's default); stop lists; tool choices", () => {
    const request = read({
      model: "m", messages: [], stop: ["a", "b"], tools: [{ type: "function", function: { name: "f" } }], tool_choice: "required",
      response_format: { type: "json_schema", json_schema: { name: "n", schema: { type: "object" } } },
    });
    expect(request.output).toEqual({ type: "json_schema", name: "n", schema: { type: "object" }, strict: false, param: "response_format" });
    expect(request.stop).toEqual({ sequences: ["a", "b"], param: "stop" });
    expect(request.toolChoice).toEqual({ type: "required" });
    expect(read({ model: "m", messages: [], tool_choice: "none" }).toolChoice).toEqual({ type: "none" });
    expect(read({ model: "m", messages: [], tool_choice: "auto", parallel_tool_calls: true }).parallelToolCalls).toBe(true);
  });

  test("a logprobs request without top_logprobs asks for no alternatives; every effort word reads as itself", () => {
    expect(read({ model: "m", messages: [], logprobs: true }).logprobs).toEqual({ top: 0, param: "logprobs" });
    const efforts = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];
    expect(efforts.map((e) => read({ model: "m", messages: [], reasoning_effort: e }).reasoning as unknown)).toEqual(efforts.map((effort) => ({ effort })));
  });

  test("an assistant turn of refusal text, empty text and reasoning; a tool message answering an unknown call has no name", () => {
    const request = read({
      model: "m",
      messages: [
        { role: "assistant", content: [{ type: "refusal", refusal: "I can't." }, { type: "text", text: "" }], reasoning: "hidden" },
        { role: "assistant", content: "" },
        { role: "tool", tool_call_id: "nowhere", content: "" },
      ],
    });
    expect(request.messages).toEqual([
      { role: "assistant", parts: [{ type: "text", text: "I can't." }], param: "messages[0]" },
      { role: "user", parts: [{ type: "tool_result", callId: "nowhere", content: [{ type: "text", text: "" }] }], param: "messages[2]" },
    ]);
  });

  const refused: Array<[string, JsonObject]> = [
    ["logit_bias", { logit_bias: { "50256": -100 } }],
    ["audio", { modalities: ["text", "audio"], audio: { voice: "alloy", format: "wav" } }],
    ["modalities", { modalities: ["text", "audio"] }],
    ["web_search_options", { web_search_options: {} }],
    ["functions", { functions: [{ name: "f" }] }],
    ["function_call", { function_call: "auto" }],
    ["tools[1].type", { tools: [{ type: "function", function: { name: "f" } }, { type: "file_search", vector_store_ids: ["vs"] }] }],
    ["tools[0].type", { tools: [{ type: "custom", custom: { name: "grammar" } }] }],
    ["tool_choice", { tools: [{ type: "function", function: { name: "f" } }], tool_choice: { type: "allowed_tools", allowed_tools: { mode: "auto", tools: [] } } }],
    ["messages[0].content[0].type", { messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AA==", format: "wav" } }] }] }],
    ["messages[0].content[0].file", { messages: [{ role: "user", content: [{ type: "file", file: { file_id: "file-1" } }] }] }],
    ["messages[0].content[0].file", { messages: [{ role: "user", content: [{ type: "file", file: { filename: "a.txt", file_data: "data:text/plain;base64,aGk=" } }] }] }],
    ["messages[0].content[0].image_url.url", { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/svg+xml,<svg/>" } }] }] }],
    ["messages[0].role", { messages: [{ role: "function", name: "f", content: "x" }] }],
    ["messages[0].function_call", { messages: [{ role: "assistant", content: null, function_call: { name: "f", arguments: "{}" } }] }],
    ["messages[0].audio", { messages: [{ role: "assistant", content: null, audio: { id: "audio_1" } }] }],
    ["messages[0].tool_calls[0].type", { messages: [{ role: "assistant", content: null, tool_calls: [{ id: "c", type: "custom", custom: { name: "g", input: "x" } }] }] }],
  ];
  for (const [param, extra] of refused) {
    test(`refused: ${param} (${JSON.stringify(extra).slice(0, 60)})`, () => {
      const error = thrown(() => read({ model: "m", messages: [{ role: "user", content: "hi" }], ...extra }));
      expect({ status: error.status, param: error.param, code: error.code }).toEqual({ status: 400, param, code: "unsupported_parameter" });
      expect(error.message).toContain("which speaks Anthropic Messages");
    });
  }

  const malformed: Array<[string, JsonObject]> = [
    ["messages", { messages: "hi" }],
    ["messages[0]", { messages: ["hi"] }],
    ["messages[0].role", { messages: [{ role: "robot", content: "hi" }] }],
    ["messages[0].content", { messages: [{ role: "user", content: 5 }] }],
    ["messages[0].content[0]", { messages: [{ role: "system", content: [{ type: "image_url", image_url: { url: "https://x" } }] }] }],
    ["messages[0].content[0].text", { messages: [{ role: "user", content: [{ type: "text", text: 1 }] }] }],
    ["messages[0].content[0].image_url.url", { messages: [{ role: "user", content: [{ type: "image_url", image_url: {} }] }] }],
    ["messages[0].content[0]", { messages: [{ role: "assistant", content: [{ type: "image_url" }] }] }],
    ["messages[0].tool_calls", { messages: [{ role: "assistant", tool_calls: {} }] }],
    ["messages[0].tool_calls[0]", { messages: [{ role: "assistant", tool_calls: [{ type: "function", function: { name: "f" } }] }] }],
    ["messages[0].tool_calls[0].function.arguments", { messages: [{ role: "assistant", content: null, tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{not json" } }] }] }],
    ["messages[0].tool_calls[0].function.arguments", { messages: [{ role: "assistant", content: null, tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "[1]" } }] }] }],
    ["messages[0].tool_call_id", { messages: [{ role: "tool", content: "x" }] }],
    ["max_completion_tokens", { max_completion_tokens: "100" }],
    ["max_tokens", { max_tokens: "100" }],
    ["temperature", { temperature: "hot" }],
    ["stop", { stop: [1] }],
    ["reasoning_effort", { reasoning_effort: "extreme" }],
    ["n", { n: 1.5 }],
    ["n", { n: "2" }],
    ["top_logprobs", { logprobs: true, top_logprobs: -1 }],
    ["response_format", { response_format: "json" }],
    ["response_format.type", { response_format: { type: "xml" } }],
    ["response_format.json_schema", { response_format: { type: "json_schema", json_schema: { schema: {} } } }],
    ["response_format.json_schema.schema", { response_format: { type: "json_schema", json_schema: { name: "n", schema: "x" } } }],
    ["tools", { tools: { type: "function" } }],
    ["tools[0]", { tools: ["f"] }],
    ["tools[0].function", { tools: [{ type: "function", function: { description: "no name" } }] }],
    ["tool_choice", { tool_choice: 5 }],
    ["tool_choice.function.name", { tool_choice: { type: "function", function: {} } }],
  ];
  for (const [param, extra] of malformed) {
    test(`malformed: ${param} (${JSON.stringify(extra).slice(0, 60)})`, () => {
      const error = thrown(() => read({ model: "m", messages: [{ role: "user", content: "hi" }], ...extra }));
      expect({ status: error.status, param: error.param, code: error.code }).toEqual({ status: 400, param, code: "invalid_request" });
    });
  }

  test("reading leaves the client's body as it was", () => {
    const body = structuredClone(FULL_REQUEST);
    chatCodec.readRequest(body, readContext(body));
    expect(body).toEqual(FULL_REQUEST);
  });
});

// ——— (b) the model written as a Chat request ———

describe("writing Chat requests", () => {
  test("a conversation from another format: system texts as parts, thinking dropped, tool results split out, top_k and user dropped", () => {
    const request: IrRequest = {
      model: "gpt-5",
      stream: true,
      system: ["You answer with tools.", "Be brief."],
      messages: [
        { role: "user", parts: [{ type: "text", text: "Screenshot please" }], param: "messages[0]" },
        {
          role: "assistant",
          param: "messages[1]",
          parts: [
            { type: "thinking", text: "hm", signature: { wire: "anthropic-messages", value: "sig" } },
            { type: "redacted_thinking", signature: { wire: "anthropic-messages", value: "enc" } },
            { type: "text", text: "Taking " },
            { type: "text", text: "it." },
            { type: "tool_call", id: "t1", name: "shot", arguments: "{}", signature: { wire: "gemini-generate", value: "ts" } },
            { type: "tool_call", id: "t2", name: "read", arguments: '{"path":"a.md"}' },
          ],
        },
        {
          role: "user",
          param: "messages[2]",
          parts: [
            { type: "tool_result", callId: "t1", name: "shot", isError: false, content: [{ type: "text", text: "done" }, { type: "image", source: { kind: "base64", mediaType: "image/png", data: PNG }, param: "messages[2].content[0].content[1]" }] },
            { type: "tool_result", callId: "t2", content: [{ type: "document", source: { kind: "text", text: "# A" }, param: "messages[2].content[1].content[0]" }, { type: "text", text: "(end)" }], isError: true },
            { type: "text", text: "What do you see?" },
            { type: "document", source: { kind: "base64", mediaType: "text/plain", data: "plain notes" }, param: "messages[2].content[2]" },
            { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0=" }, param: "messages[2].content[3]" },
          ],
        },
      ],
      tools: [{ name: "shot", parameters: { type: "object", properties: {} }, param: "tools[0]" }, { name: "read", description: "Reads a file", parameters: { type: "object" }, strict: false, param: "tools[1]" }],
      toolChoice: { type: "auto" },
      parallelToolCalls: true,
      topK: 40,
      user: "user-1",
      reasoning: { budget: 8000, visible: true },
      output: { type: "json_schema", schema: { type: "object" }, param: "output_config.format" },
    };
    expect(write(request)).toEqual({
      model: "gpt-5",
      messages: [
        { role: "system", content: [{ type: "text", text: "You answer with tools." }, { type: "text", text: "Be brief." }] },
        { role: "user", content: "Screenshot please" },
        {
          role: "assistant", content: "Taking it.",
          tool_calls: [
            { id: "t1", type: "function", function: { name: "shot", arguments: "{}" } },
            { id: "t2", type: "function", function: { name: "read", arguments: '{"path":"a.md"}' } },
          ],
        },
        { role: "tool", tool_call_id: "t1", content: "done" },
        { role: "tool", tool_call_id: "t2", content: "# A\n(end)" },
        {
          role: "user",
          content: [
            { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
            { type: "text", text: "What do you see?" },
            { type: "text", text: "plain notes" },
            { type: "file", file: { filename: "document.pdf", file_data: "data:application/pdf;base64,JVBERi0=" } },
          ],
        },
      ],
      max_completion_tokens: 4096,
      tools: [
        { type: "function", function: { name: "shot", parameters: { type: "object", properties: {} } } },
        { type: "function", function: { name: "read", description: "Reads a file", parameters: { type: "object" }, strict: false } },
      ],
      tool_choice: "auto",
      reasoning_effort: "medium",
      // An open object schema is not one OpenAI's strict mode takes: sent loose.
      response_format: { type: "json_schema", json_schema: { name: "output", schema: { type: "object" }, strict: false } },
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  test("the model from the context when the request names none (a Gemini client names it in its path)", () => {
    expect(chatCodec.writeRequest(ir({ model: undefined }), { maxTokens: 10, model: "gpt-5" }).model).toBe("gpt-5");
  });

  test("sampling, penalties, seed and stop sequences as they are; the client's bound over the reserved one", () => {
    const body = write(ir({ maxTokens: 300, temperature: 1.5, topP: 0.5, seed: 3, presencePenalty: 1, frequencyPenalty: -1, stop: { sequences: ["END"], param: "stop_sequences" } }));
    expect(body).toEqual({
      model: "m", messages: [{ role: "user", content: "hi" }], max_completion_tokens: 300,
      temperature: 1.5, top_p: 0.5, seed: 3, presence_penalty: 1, frequency_penalty: -1, stop: ["END"],
    });
    expect(write(ir({ stop: { sequences: [], param: "stop" } })).stop).toBeUndefined();
  });

  test("reasoning: an effort as it is; a budget as its effort; budgets 0 and -1 send none", () => {
    const effort = (reasoning: IrRequest["reasoning"]) => write(ir({ reasoning })).reasoning_effort;
    expect([effort({ effort: "none" }), effort({ effort: "minimal" }), effort({ effort: "xhigh" }), effort({ effort: "max" })]).toEqual(["none", "minimal", "xhigh", "max"]);
    expect([effort({ budget: 1024 }), effort({ budget: 4096 }), effort({ budget: 16384 }), effort({ effort: "low", budget: 30000 })]).toEqual(["low", "medium", "high", "low"]);
    expect([effort({ budget: 0 }), effort({ budget: -1 }), effort({ visible: true })]).toEqual([undefined, undefined, undefined]);
  });

  test("output formats: JSON mode, a named loose schema, plain text sends nothing", () => {
    expect(write(ir({ output: { type: "json", param: "p" } })).response_format).toEqual({ type: "json_object" });
    expect(write(ir({ output: { type: "json_schema", name: "w", description: "d", schema: {}, strict: false, param: "p" } })).response_format).toEqual({
      type: "json_schema", json_schema: { name: "w", description: "d", schema: {}, strict: false },
    });
    expect(write(ir({ output: { type: "text" } })).response_format).toBeUndefined();
  });

  test("tool choices are sent only with tools; one call at a time is said, the default is not", () => {
    const tools = [{ name: "f", parameters: { type: "object" }, param: "tools[0]" }];
    const choice = (toolChoice: IrRequest["toolChoice"]) => write(ir({ tools, toolChoice })).tool_choice;
    expect([choice({ type: "auto" }), choice({ type: "required" }), choice({ type: "none" }), choice({ type: "tool", name: "f", param: "tool_choice" })]).toEqual([
      "auto", "required", "none", { type: "function", function: { name: "f" } },
    ]);
    expect(write(ir({ tools, parallelToolCalls: false })).parallel_tool_calls).toBe(false);
    const withoutTools = write(ir({ toolChoice: { type: "none" }, parallelToolCalls: false }));
    expect([withoutTools.tools, withoutTools.tool_choice, withoutTools.parallel_tool_calls]).toEqual([undefined, undefined, undefined]);
  });

  test("an assistant turn of thinking only sends empty content; a user turn of tool results only sends no user message", () => {
    const body = write(ir({
      messages: [
        { role: "assistant", parts: [{ type: "thinking", text: "x" }], param: "messages[0]" },
        { role: "user", parts: [{ type: "tool_result", callId: "c", content: [] }], param: "messages[1]" },
      ],
    }));
    expect(body.messages).toEqual([{ role: "assistant", content: "" }, { role: "tool", tool_call_id: "c", content: "" }]);
  });

  const refused: Array<[string, string, Partial<IrRequest>]> = [
    ["candidateCount", "More than one candidate answer", { candidates: { count: 2, param: "candidateCount" } }],
    ["logprobs", "Log probabilities", { logprobs: { top: 0, param: "logprobs" } }],
    ["messages[0].content[0]", "A document given by URL", { messages: [{ role: "user", parts: [{ type: "document", source: { kind: "url", url: "https://x/a.pdf" }, param: "messages[0].content[0]" }], param: "messages[0]" }] }],
    ["messages[0].content[0]", "A document of type application/msword", { messages: [{ role: "user", parts: [{ type: "document", source: { kind: "base64", mediaType: "application/msword", data: "AA" }, param: "messages[0].content[0]" }], param: "messages[0]" }] }],
    ["messages[0].content[0]", "An image given as text", { messages: [{ role: "user", parts: [{ type: "image", source: { kind: "text", text: "x" }, param: "messages[0].content[0]" }], param: "messages[0]" }] }],
    ["messages[0]", "An assistant part of type image", { messages: [{ role: "assistant", parts: [{ type: "image", source: { kind: "url", url: "https://x" }, param: "messages[0].content[0]" }], param: "messages[0]" }] }],
    ["messages[0].content[0].content[0]", "A tool result holding a document part", { messages: [{ role: "user", parts: [{ type: "tool_result", callId: "c", content: [{ type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "AA" }, param: "messages[0].content[0].content[0]" }] }], param: "messages[0]" }] }],
    ["messages[0]", "A user part of type thinking", { messages: [{ role: "user", parts: [{ type: "thinking", text: "x" }], param: "messages[0]" }] }],
  ];
  for (const [param, what, extra] of refused) {
    test(`refused: ${what} (${param})`, () => {
      const error = thrown(() => write(ir(extra)));
      expect({ status: error.status, param: error.param, code: error.code }).toEqual({ status: 400, param, code: "unsupported_parameter" });
      expect(error.message).toBe(`${param}: ${what} cannot be carried to this model's upstream, which speaks OpenAI Chat Completions`);
    });
  }

  test("one candidate is not refused", () => {
    expect(write(ir({ candidates: { count: 1, param: "n" } })).n).toBeUndefined();
  });
});

// ——— (c) round trips ———

describe("round trips: what is read and written back is what was sent", () => {
  NORMAL_REQUESTS.forEach((body, i) => {
    test(`request ${i}`, () => {
      expect(write(read(body))).toEqual(body);
    });
  });

  test("the full request (without n and logprobs, which a Chat upstream is not asked for), modulo the documented normalisations", () => {
    const { n: _n, logprobs: _logprobs, top_logprobs: _top, ...carried } = FULL_REQUEST;
    const written = write(read(carried));
    expect(written.messages).toEqual([
      { role: "system", content: [{ type: "text", text: "You are a meteorologist." }, { type: "text", text: "Answer in JSON." }, { type: "text", text: "Be brief." }, { type: "text", text: "Mind the units." }] },
      (FULL_REQUEST.messages as JsonObject[])[2],
      {
        role: "assistant", content: "Looking it up.",
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
          { id: "call_b", type: "function", function: { name: "get_time", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: "18°C, sunny" },
      { role: "tool", tool_call_id: "call_b", content: "09:30\nCET" },
      { role: "user", content: "Celsius please." },
    ].map((m, i) => (i === 1 ? withoutDetail(m as JsonObject) : m)));
    // The older max_tokens, the user ids and the hints dropped, a stop string as a list, an empty schema for a function without one (stream_options is the writer's own).
    const { messages: _messages, ...rest } = written;
    expect(rest).toEqual({
      model: "gpt-5", max_completion_tokens: 900, temperature: 0.4, top_p: 0.8, seed: 42, presence_penalty: 0.1, frequency_penalty: 0.2, stop: ["END"],
      tools: [(FULL_REQUEST.tools as JsonObject[])[0], { type: "function", function: { name: "get_time", parameters: { type: "object", properties: {} } } }], tool_choice: FULL_REQUEST.tool_choice, parallel_tool_calls: false, reasoning_effort: "low",
      response_format: FULL_REQUEST.response_format, stream: true, stream_options: { include_usage: true },
    });
  });

  test("an answer", () => {
    expect(chatCodec.writeAnswer(chatCodec.readAnswer(TOOL_ANSWER), { created: CREATED })).toEqual(TOOL_ANSWER);
  });

  test("a stream in the writer's form (each call's first fragment with empty arguments)", () => {
    const stream = decode(writeStream([INTERLEAVED_EVENTS]));
    expect(decode(writeStream([readStream(stream)]))).toEqual(stream);
  });
});

/** The user message of FULL_REQUEST without the image `detail`, which has no counterpart. */
function withoutDetail(message: JsonObject): JsonObject {
  const m = structuredClone(message);
  for (const part of m.content as JsonObject[]) if (part.type === "image_url") delete (part.image_url as JsonObject).detail;
  return m;
}

// ——— (d) upstream answers and streams read into the model ———

const TOOL_ANSWER_IR: IrAnswer = {
  id: "chatcmpl-7",
  model: "deepseek-reasoner",
  parts: [
    { type: "thinking", text: "Two lookups are needed." },
    { type: "text", text: "Checking both." },
    { type: "tool_call", id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}' },
    { type: "tool_call", id: "call_b", name: "get_time", arguments: '{"tz":"Asia/Tokyo"}' },
  ],
  finish: "tool_calls",
  usage: { prompt: 2000, completion: 140, cacheRead: 1800, cacheWrite: 150, reasoning: 90 },
};

describe("reading upstream answers", () => {
  test("reasoning, text, parallel tool calls and usage with cache reads, writes and reasoning tokens", () => {
    expect(chatCodec.readAnswer(TOOL_ANSWER)).toEqual(TOOL_ANSWER_IR);
    expect(chatCodec.readAnswer(TOOL_ANSWER).usage).toEqual(openaiUsageFromJson(TOOL_ANSWER)!);
  });

  test("finish reasons", () => {
    const finish = (reason: unknown) => chatCodec.readAnswer({ choices: [{ message: { content: "x" }, finish_reason: reason }] }).finish;
    expect(["stop", "length", "tool_calls", "function_call", "content_filter", null, "weird"].map(finish)).toEqual(["stop", "length", "tool_calls", "tool_calls", "content_filter", "stop", "stop"]);
  });

  test("a refusal is text; content as parts; the `reasoning` field; a call without arguments; no usage; a stop with calls is a tool-call finish", () => {
    const answer = chatCodec.readAnswer({
      id: "c", model: "m",
      choices: [{ message: { content: [{ type: "text", text: "a" }, { type: "text", text: "b" }], refusal: "No.", reasoning: "think", tool_calls: [{ id: "x", type: "function", function: { name: "f" } }, "junk"] }, finish_reason: "stop" }],
    });
    expect(answer).toEqual({
      id: "c", model: "m", finish: "tool_calls",
      parts: [{ type: "thinking", text: "think" }, { type: "text", text: "ab" }, { type: "text", text: "No." }, { type: "tool_call", id: "x", name: "f", arguments: "{}" }],
    });
  });

  test("calls without an id get ids of their own (unique, within 40 characters, Anthropic's alphabet), in answers and streams", () => {
    const call = { type: "function", function: { name: "f", arguments: "{}" } };
    const answerIds = (chatCodec.readAnswer({ id: "c", choices: [{ message: { tool_calls: [call, call] }, finish_reason: "tool_calls" }] }).parts as Array<{ id: string }>).map((p) => p.id);
    const streamIds = readStream([{ id: "c", choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...call }, { index: 1, ...call }] } }] }]).flatMap((e) => (e.type === "tool_call_start" ? [e.id] : []));
    const all = [...answerIds, ...streamIds];
    expect(new Set(all).size).toBe(4);
    for (const id of all) expect(id).toMatch(/^call_[0-9a-f]{24}$/);
  });

  test("odd bodies give an empty answer, never a throw", () => {
    for (const body of [undefined, null, "oops", [], { choices: "no" }, { choices: [null] }, { choices: [{ message: 5 }], usage: {} }]) {
      expect(chatCodec.readAnswer(body)).toEqual({ id: "", model: "", parts: [], finish: "stop" });
    }
  });
});

describe("reading upstream streams", () => {
  test("a stop after calls is a tool-call finish (not every compatible server says tool_calls); so is a cut stream after calls", () => {
    const chunk = (delta: JsonObject, finish: string | null = null) => ({ id: "c", model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });
    const calls = [chunk({ role: "assistant" }), chunk({ tool_calls: [{ index: 0, id: "k", type: "function", function: { name: "f", arguments: "{}" } }] })];
    const finishes = (chunks: JsonObject[]) => readStream(chunks).filter((e) => e.type === "finish");
    expect(finishes([...calls, chunk({}, "stop")])).toEqual([{ type: "finish", finish: "tool_calls" }]);
    expect(finishes(calls)).toEqual([{ type: "finish", finish: "tool_calls" }]);
    expect(finishes([...calls, chunk({}, "length")])).toEqual([{ type: "finish", finish: "length" }]);
    expect(finishes([chunk({ content: "hi" }), chunk({}, "stop")])).toEqual([{ type: "finish", finish: "stop" }]);
  });

  test("parallel calls whose fragments interleave stay apart, each on its own call, in order", () => {
    expect(readStream(INTERLEAVED_STREAM)).toEqual(INTERLEAVED_EVENTS);
  });

  test("events come as the chunks arrive, none held back", () => {
    const reader = chatCodec.streamReader();
    const perChunk = sse(INTERLEAVED_STREAM).map((e) => reader.push(e).length);
    expect(perChunk).toEqual([1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 0]);
    expect(reader.end()).toEqual([]);
  });

  test("usage in the finishing chunk comes before the finish; usage on every chunk is cumulative", () => {
    const events = readStream([
      { ...chunk({ content: "hi" }), usage: { prompt_tokens: 7, completion_tokens: 1 } },
      { ...chunk({}, "length"), usage: { prompt_tokens: 7, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 2 } } },
    ]);
    expect(events).toEqual([
      { type: "start", id: "chatcmpl-s", model: "gpt-5" },
      { type: "text", text: "hi" },
      { type: "usage", usage: { prompt: 7, completion: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 } },
      { type: "usage", usage: { prompt: 7, completion: 3, cacheRead: 2, cacheWrite: 0, reasoning: 0 } },
      { type: "finish", finish: "length" },
    ]);
  });

  test("a stream cut before its finish ends as a stop; an empty one still starts", () => {
    expect(readStream(INTERLEAVED_STREAM.slice(0, 4))).toEqual([...INTERLEAVED_EVENTS.slice(0, 4), { type: "finish", finish: "stop" }]);
    expect(readStream([])).toEqual([{ type: "start", id: "", model: "" }, { type: "finish", finish: "stop" }]);
  });

  test("an in-stream error object is the upstream failing: an error event, and nothing after it", () => {
    const reader = chatCodec.streamReader();
    const [first, failed, after] = sse([chunk({ role: "assistant", content: "" }), { error: { message: "boom", type: "server_error", code: "overloaded" } }, chunk({ content: "late" })]).map((e) => reader.push(e));
    expect(first).toEqual([{ type: "start", id: "chatcmpl-s", model: "gpt-5" }]);
    expect(failed!.length).toBe(1);
    const error = (failed![0] as Extract<IrEvent, { type: "error" }>).error;
    expect({ kind: error.kind, status: error.status, message: error.message, code: error.code }).toEqual({ kind: "upstream", status: 502, message: "boom", code: "overloaded" });
    expect([after, reader.end()]).toEqual([[], []]);
  });

  test("non-JSON data, comments-only chunks, other choices and empty deltas make nothing", () => {
    const reader = chatCodec.streamReader();
    reader.push({ event: undefined, data: JSON.stringify(chunk({ role: "assistant" })) });
    const pushes = [
      { event: undefined, data: "not json" },
      { event: undefined, data: "[1,2]" },
      { event: undefined, data: JSON.stringify({ ...chunk({}), choices: [] }) },
      { event: undefined, data: JSON.stringify({ ...chunk({}), choices: [{ index: 1, delta: { content: "second candidate" }, finish_reason: null }] }) },
      { event: undefined, data: JSON.stringify(chunk({ content: "", reasoning_content: null, refusal: null, tool_calls: [] })) },
    ].map((e) => reader.push(e));
    expect(pushes).toEqual([[], [], [], [], []]);
  });

  test("calls sent whole at one index (as some compatible servers do) and calls without an index are told apart", () => {
    const events = readStream([
      chunk({ tool_calls: [{ index: 0, id: "a", type: "function", function: { name: "f", arguments: '{"x":1}' } }] }),
      chunk({ tool_calls: [{ index: 0, id: "b", type: "function", function: { name: "g", arguments: '{"y":2}' } }] }),
      chunk({ tool_calls: [{ id: "c", type: "function", function: { name: "h", arguments: "{}" } }, { id: "d", type: "function", function: { name: "k" } }] }),
      chunk({}, "tool_calls"),
    ]);
    expect(events.filter((e) => e.type.startsWith("tool_call"))).toEqual([
      { type: "tool_call_start", call: 0, id: "a", name: "f" },
      { type: "tool_call_arguments", call: 0, delta: '{"x":1}' },
      { type: "tool_call_start", call: 1, id: "b", name: "g" },
      { type: "tool_call_arguments", call: 1, delta: '{"y":2}' },
      { type: "tool_call_start", call: 2, id: "c", name: "h" },
      { type: "tool_call_arguments", call: 2, delta: "{}" },
      { type: "tool_call_start", call: 3, id: "d", name: "k" },
    ]);
  });

  test("refusal deltas are text; the `reasoning` delta field is thinking", () => {
    expect(readStream([chunk({ reasoning: "r" }), chunk({ refusal: "No." }), chunk({}, "content_filter")]).slice(1)).toEqual([
      { type: "thinking", text: "r" }, { type: "text", text: "No." }, { type: "finish", finish: "content_filter" },
    ]);
  });
});

// ——— (e) the model written as Chat answers and streams ———

const INTERLEAVED_CHUNKS: Array<JsonObject | "[DONE]"> = [
  chunk({ role: "assistant", content: "" }),
  chunk({ reasoning_content: "Two " }),
  chunk({ reasoning_content: "lookups." }),
  chunk({ content: "Checking" }),
  chunk({ content: " both." }),
  chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } }] }),
  chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "get_time", arguments: "" } }] }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: '{"tz":' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: '"Asia/Tokyo"}' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
  chunk({}, "tool_calls"),
  usageChunk(STREAM_USAGE),
  "[DONE]",
];

const sseResponse = (text: string) => async () => new Response(text, { headers: { "content-type": "text/event-stream" } });
const jsonResponse = (body: unknown) => async () => new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
const SDKS = [
  { name: "openai 6", make: (fetch: () => Promise<Response>) => new OpenAI({ apiKey: "k", baseURL: "http://router.test/v1", maxRetries: 0, fetch }) },
  { name: "openai 7", make: (fetch: () => Promise<Response>) => new OpenAIV7({ apiKey: "k", baseURL: "http://router.test/v1", maxRetries: 0, fetch }) as unknown as OpenAI },
];
const params = { model: "gpt-5", messages: [{ role: "user" as const, content: "x" }] };

describe("writing Chat answers", () => {
  test("an answer from the model, exactly", () => {
    expect(chatCodec.writeAnswer(TOOL_ANSWER_IR, { created: CREATED })).toEqual(TOOL_ANSWER);
  });

  test("only tool calls: content null; signatures and redacted thinking dropped; stop sequences and pauses are stops; no usage is zeros", () => {
    const answer: IrAnswer = {
      id: "msg", model: "claude", finish: "stop_sequence", stopSequence: "END",
      parts: [
        { type: "redacted_thinking", signature: { wire: "anthropic-messages", value: "x" } },
        { type: "thinking", text: "a", signature: { wire: "anthropic-messages", value: "s" } },
        { type: "thinking", text: "b" },
        { type: "tool_call", id: "t", name: "f", arguments: "{}", signature: { wire: "gemini-generate", value: "g" } },
      ],
    };
    expect(chatCodec.writeAnswer(answer, { created: 5 })).toEqual({
      id: "msg", object: "chat.completion", created: 5, model: "claude",
      choices: [{ index: 0, message: { role: "assistant", content: null, refusal: null, reasoning_content: "ab", tool_calls: [{ id: "t", type: "function", function: { name: "f", arguments: "{}" } }] }, logprobs: null, finish_reason: "stop" }],
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } },
    });
    const finish = (f: IrAnswer["finish"]) => (chatCodec.writeAnswer({ ...answer, finish: f }, {}).choices as JsonObject[])[0]!.finish_reason;
    expect((["stop", "stop_sequence", "pause", "length", "tool_calls", "content_filter"] as const).map(finish)).toEqual(["stop", "stop", "stop", "length", "tool_calls", "content_filter"]);
  });

  test("an empty answer has empty text content; created defaults to now", () => {
    const written = chatCodec.writeAnswer({ id: "i", model: "m", parts: [], finish: "stop" }, {});
    expect((written.choices as JsonObject[])[0]!.message).toEqual({ role: "assistant", content: "", refusal: null });
    expect(Math.abs(Number(written.created) - Date.now() / 1000)).toBeLessThan(5);
  });

  for (const sdk of SDKS) {
    test(`${sdk.name} reads the written answer as it is`, async () => {
      const created = await sdk.make(jsonResponse(chatCodec.writeAnswer(TOOL_ANSWER_IR, { created: CREATED }))).chat.completions.create(params);
      expect(JSON.parse(JSON.stringify(created))).toEqual(TOOL_ANSWER);
    });
  }
});

describe("writing Chat streams", () => {
  test("each call keeps its own index; first fragments carry id, type, name and empty arguments; usage chunk and [DONE] last", () => {
    expect(decode(writeStream([INTERLEAVED_EVENTS]))).toEqual(INTERLEAVED_CHUNKS);
  });

  test("written as the events come: nothing waits but the usage chunk and [DONE], which end() writes", () => {
    const writer = chatCodec.streamWriter({ created: CREATED });
    const sizes = INTERLEAVED_EVENTS.map((e) => decode(writer.write([e])).length);
    expect(sizes).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
    expect(decode(writer.end())).toEqual(INTERLEAVED_CHUNKS.slice(-2));
  });

  test("no usage chunk when the client did not ask for one", () => {
    expect(decode(writeStream([INTERLEAVED_EVENTS], { created: CREATED, usageChunk: false }))).toEqual([...INTERLEAVED_CHUNKS.slice(0, -2), "[DONE]"]);
  });

  test("usage from the start event when no later usage comes; empty deltas, signatures and redacted thinking send nothing; a call with no argument text gets {}", () => {
    const events: IrEvent[] = [
      { type: "start", id: "msg", model: "claude", usage: { prompt: 10, completion: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 } },
      { type: "thinking", text: "" },
      { type: "thinking_signature", signature: { wire: "anthropic-messages", value: "s" } },
      { type: "redacted_thinking", signature: { wire: "anthropic-messages", value: "r" } },
      { type: "text", text: "" },
      { type: "tool_call_start", call: 7, id: "t", name: "f" },
      { type: "tool_call_arguments", call: 7, delta: "" },
      { type: "tool_call_arguments", call: 8, delta: "{}" },
    ];
    const c = (delta: JsonObject, finish: string | null = null) => ({ id: "msg", object: "chat.completion.chunk", created: CREATED, model: "claude", choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
    expect(decode(writeStream([events]))).toEqual([
      c({ role: "assistant", content: "" }),
      c({ tool_calls: [{ index: 0, id: "t", type: "function", function: { name: "f", arguments: "" } }] }),
      c({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] }),
      c({}, "stop"),
      { id: "msg", object: "chat.completion.chunk", created: CREATED, model: "claude", choices: [], usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } } },
      "[DONE]",
    ]);
  });

  test("a failure midway is OpenAI's terminal error event, with nothing after it", () => {
    const writer = chatCodec.streamWriter({ created: CREATED });
    const before = writer.write(INTERLEAVED_EVENTS.slice(0, 4));
    const failed = writer.fail(new HttpError("unavailable", "upstream overloaded"));
    expect(decode(failed)).toEqual([{ error: { message: "upstream overloaded", type: "overloaded_error", param: null, code: null } }]);
    expect([writer.write(INTERLEAVED_EVENTS.slice(4)), writer.end(), writer.fail(new HttpError("upstream", "again"))]).toEqual(["", "", ""]);
    expect(decode(before).length).toBe(4);
  });

  test("an upstream error event is the same terminal event", () => {
    const text = writeStream([[INTERLEAVED_EVENTS[0]!, { type: "error", error: new HttpError("rate_limit", "slow down", { code: "rate_limit_exceeded" }) }, { type: "text", text: "late" }]]);
    expect(decode(text)).toEqual([INTERLEAVED_CHUNKS[0]!, { error: { message: "slow down", type: "rate_limit_error", param: null, code: "rate_limit_exceeded" } }]);
  });

  test("fail() after the finish adds nothing (the client has its answer), and end() then adds nothing either", () => {
    const writer = chatCodec.streamWriter({ created: CREATED });
    writer.write(INTERLEAVED_EVENTS);
    expect([writer.fail(new HttpError("upstream", "late")), writer.end()]).toEqual(["", ""]);
  });

  for (const sdk of SDKS) {
    test(`${sdk.name}: the stream helper assembles each call apart, with the text, finish and usage`, async () => {
      let reasoning = "";
      const stream = sdk.make(sseResponse(writeStream([INTERLEAVED_EVENTS]))).chat.completions.stream(params);
      stream.on("chunk", (c) => {
        reasoning += (c.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? "";
      });
      const final = await stream.finalChatCompletion();
      const message = final.choices[0]!.message;
      expect(message.content).toBe("Checking both.");
      expect(message.tool_calls!.map((c) => (c.type === "function" ? [c.id, c.function.name, c.function.arguments] : []))).toEqual([
        ["call_a", "get_weather", '{"city":"Paris"}'],
        ["call_b", "get_time", '{"tz":"Asia/Tokyo"}'],
      ]);
      expect(final.choices[0]!.finish_reason).toBe("tool_calls");
      expect(JSON.parse(JSON.stringify(final.usage))).toEqual(STREAM_USAGE);
      expect(reasoning).toBe("Two lookups.");
    });

    test(`${sdk.name}: a failure midway raises the SDK's error`, async () => {
      const writer = chatCodec.streamWriter({ created: CREATED });
      const text = writer.write(INTERLEAVED_EVENTS.slice(0, 4)) + writer.fail(new HttpError("unavailable", "upstream overloaded")) + writer.end();
      await expect(sdk.make(sseResponse(text)).chat.completions.stream(params).finalChatCompletion()).rejects.toThrow("upstream overloaded");
    });
  }
});

describe("metering parity: the router's OpenAI readers find in what is written the usage the model was given", () => {
  const usages = [
    { prompt: 2000, completion: 140, cacheRead: 1800, cacheWrite: 150, reasoning: 90 },
    { prompt: 12, completion: 3, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
    { prompt: 500, completion: 0, cacheRead: 500, cacheWrite: 0, reasoning: 0 },
  ];
  for (const usage of usages) {
    test(JSON.stringify(usage), () => {
      expect(openaiUsageFromJson(chatCodec.writeAnswer({ ...TOOL_ANSWER_IR, usage }, { created: CREATED }))).toEqual(usage);
      const tap = formatOf("openai").streamUsageTap();
      const decoder = createSseDecoder((e) => tap.onEvent(e));
      decoder.push(new TextEncoder().encode(writeStream([[...INTERLEAVED_EVENTS.slice(0, -1), { type: "usage", usage }]])));
      decoder.end();
      expect(tap.result()).toEqual(usage);
    });
  }
});

// ——— (f) errors ———

describe("errors", () => {
  test("written in OpenAI's envelope; Anthropic's 529 as 503", () => {
    expect(chatCodec.writeError(new HttpError("unavailable", "Overloaded", { status: 529 }))).toEqual({
      status: 503, body: { error: { message: "Overloaded", type: "overloaded_error", param: null, code: null } },
    });
    expect(chatCodec.writeError(new HttpError("invalid_request", "bad temperature", { param: "temperature", code: "invalid_value" }))).toEqual({
      status: 400, body: { error: { message: "bad temperature", type: "invalid_request_error", param: "temperature", code: "invalid_value" } },
    });
    expect(chatCodec.writeError(new HttpError("rate_limit", "slow", { status: 429 })).status).toBe(429);
  });

  test("read from an upstream: status, message, code and param kept; the status decides when it tells", () => {
    const error = chatCodec.readError(429, { error: { message: "Rate limit reached", type: "requests", param: null, code: "rate_limit_exceeded" } });
    expect({ kind: error.kind, status: error.status, message: error.message, code: error.code }).toEqual({ kind: "rate_limit", status: 429, message: "Rate limit reached", code: "rate_limit_exceeded" });
    const badKey = chatCodec.readError(401, { error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } });
    expect({ kind: badKey.kind, status: badKey.status }).toEqual({ kind: "authentication", status: 401 });
    const param = chatCodec.readError(400, { error: { message: "bad", type: "invalid_request_error", param: "messages[1]", code: null } });
    expect({ kind: param.kind, param: param.param }).toEqual({ kind: "invalid_request", param: "messages[1]" });
    const html = chatCodec.readError(502, "<html>Bad gateway</html>");
    expect({ kind: html.kind, status: html.status, message: html.message }).toEqual({ kind: "upstream", status: 502, message: "The upstream answered 502" });
  });

  test("an error read from a Chat upstream and written for a Chat client is what the upstream sent", () => {
    const body = { error: { message: "Context too long", type: "invalid_request_error", param: "messages", code: "context_length_exceeded" } };
    expect(chatCodec.writeError(chatCodec.readError(400, body))).toEqual({ status: 400, body });
  });
});

test("the codec is registered for openai-chat and sends to /v1/chat/completions", () => {
  expect(codecOf("openai-chat")).toBe(chatCodec);
  expect([chatCodec.wire, chatCodec.name, chatCodec.target("gpt-5", true)]).toEqual(["openai-chat", "OpenAI Chat Completions", { path: "/v1/chat/completions", search: "" }]);
});

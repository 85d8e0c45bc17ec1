import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import OpenAIV7 from "openai-v7";
import { HttpError } from "../../src/core/errors.ts";
import type { JsonObject } from "../../src/formats/json.ts";
import { openaiUsageFromJson } from "../../src/formats/openai/usage.ts";
import { formatOf } from "../../src/formats/registry.ts";
import { createSseDecoder } from "../../src/formats/sse.ts";
import type { ReadContext } from "../../src/formats/translate/codec.ts";
import { codecOf } from "../../src/formats/translate/codecs/index.ts";
import { responsesCodec as codec } from "../../src/formats/translate/codecs/responses/index.ts";
import { compose } from "../../src/formats/translate/compose.ts";
import type { IrAnswer, IrEvent, IrRequest } from "../../src/formats/translate/ir.ts";
import {
  CLIENT_ANSWER,
  CLIENT_ANSWER_IR,
  CLIENT_REQUEST,
  CLIENT_REQUEST_IR,
  CLIENT_STREAM,
  CLIENT_STREAM_IR,
  CREATED,
  ECHO,
  PNG,
  ROUND_TRIP_REQUEST,
  UPSTREAM_ANSWER,
  UPSTREAM_ANSWER_IR,
  UPSTREAM_IR,
  UPSTREAM_REQUEST,
  UPSTREAM_SSE,
  UPSTREAM_SSE_IR,
  type Ev,
} from "../fixtures/translation/responses.ts";
import { decodeSse as decode, sseText, thrownHttpError as thrown } from "../helpers/sse-transcripts.ts";

const UPSTREAM_NAME = "Anthropic Messages";
const readContext = (body: JsonObject): ReadContext => ({ model: typeof body.model === "string" ? body.model : undefined, stream: body.stream === true, upstream: UPSTREAM_NAME });
const read = (body: JsonObject) => codec.readRequest(structuredClone(body), readContext(body));
const requestContext = { maxTokens: 4096 };

/** An upstream SSE transcript read event by event, then ended. */
function readStream(events: Ev[] | string): IrEvent[] {
  const reader = codec.streamReader();
  const out: IrEvent[] = [];
  const decoder = createSseDecoder((e) => out.push(...reader.push(e)));
  decoder.push(new TextEncoder().encode(typeof events === "string" ? events : sseText(events)));
  decoder.end();
  out.push(...reader.end());
  return out;
}

/** IR events written one at a time (as a relay feeds them), then ended. */
function writeStream(events: IrEvent[]): string {
  const writer = codec.streamWriter({ created: CREATED });
  return events.map((e) => writer.write([e])).join("") + writer.end();
}

// ——— (a) client requests read into the shared model ———

describe("reading a Responses client's request", () => {
  test("every mapped field, in order; hints dropped", () => {
    expect(read(CLIENT_REQUEST)).toEqual(CLIENT_REQUEST_IR);
  });

  test("a string input is one user message; a model and stream come from the context", () => {
    expect(codec.readRequest({ model: "x", input: "Hello" }, { model: "gpt-5", stream: false, upstream: UPSTREAM_NAME })).toEqual({
      model: "gpt-5",
      stream: false,
      system: [],
      messages: [{ role: "user", parts: [{ type: "text", text: "Hello" }], param: "input" }],
      tools: [],
    });
  });

  test("reasoning with encrypted content only is hidden reasoning; an empty reasoning item carries nothing; reasoning text stands in for a missing summary", () => {
    const ir = read({
      model: "m",
      input: [
        { type: "reasoning", summary: [], encrypted_content: "enc" },
        { type: "reasoning", summary: [] },
        { type: "reasoning", summary: [], content: [{ type: "reasoning_text", text: "raw" }] },
        { role: "assistant", content: [{ type: "refusal", refusal: "I can't." }] },
      ],
    });
    expect(ir.messages).toEqual([
      {
        role: "assistant",
        param: "input[0]",
        parts: [{ type: "redacted_thinking", signature: { wire: "openai-responses", value: "enc" } }, { type: "thinking", text: "raw" }, { type: "text", text: "I can't." }],
      },
    ]);
  });

  test("a plain-text file is a text document; bare base64 file data is a PDF", () => {
    const ir = read({
      model: "m",
      input: [
        {
          role: "user",
          content: [
            { type: "input_file", filename: "notes.txt", file_data: `data:text/plain;base64,${Buffer.from("héllo").toString("base64")}` },
            { type: "input_file", file_data: "JVBERi0x" },
          ],
        },
      ],
    });
    expect(ir.messages[0]!.parts).toEqual([
      { type: "document", source: { kind: "text", text: "héllo" }, title: "notes.txt", param: "input[0].content[0]" },
      { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0x" }, param: "input[0].content[1]" },
    ]);
  });

  test("json_object, text and effort without summary; user as a fallback for safety_identifier; include alone asks for logprobs", () => {
    const ir = read({ model: "m", input: "hi", text: { format: { type: "json_object" } }, reasoning: { effort: "minimal", summary: null }, user: "u", include: ["message.output_text.logprobs"] });
    expect(ir.output).toEqual({ type: "json", param: "text.format" });
    expect(ir.reasoning).toEqual({ effort: "minimal" });
    expect(ir.user).toBe("u");
    expect(ir.logprobs).toEqual({ top: 0, param: "include" });
    expect(read({ model: "m", input: "hi", text: { format: { type: "text" } }, tool_choice: "none" })).toMatchObject({ output: { type: "text" }, toolChoice: { type: "none" } });
  });

  test("what is not server state passes: null previous_response_id, background false, store", () => {
    expect(() => read({ model: "m", input: "hi", previous_response_id: null, background: false, store: true, conversation: null, prompt: null })).not.toThrow();
  });

  const refusals: Array<[string, JsonObject, string]> = [
    ["previous_response_id", { previous_response_id: "resp_1" }, "previous_response_id"],
    ["conversation", { conversation: "conv_1" }, "conversation"],
    ["prompt", { prompt: { id: "pmpt_1" } }, "prompt"],
    ["item_reference", { input: [{ type: "item_reference", id: "msg_1" }] }, "input[0]"],
    ["a hosted tool's item", { input: [{ type: "web_search_call", id: "ws_1", status: "completed" }] }, "input[0].type"],
    ["an image by file_id", { input: [{ role: "user", content: [{ type: "input_image", file_id: "file-1", detail: "auto" }] }] }, "input[0].content[0].file_id"],
    ["a file by file_id", { input: [{ role: "user", content: [{ type: "input_file", file_id: "file-1" }] }] }, "input[0].content[0].file_id"],
    ["a file by URL", { input: [{ role: "user", content: [{ type: "input_file", file_url: "https://x/a.pdf" }] }] }, "input[0].content[0].file_url"],
    ["web_search", { tools: [{ type: "web_search" }] }, "tools[0].type"],
    ["file_search", { tools: [{ type: "function", name: "f" }, { type: "file_search", vector_store_ids: ["vs"] }] }, "tools[1].type"],
    ["code_interpreter", { tools: [{ type: "code_interpreter", container: { type: "auto" } }] }, "tools[0].type"],
    ["computer_use_preview", { tools: [{ type: "computer_use_preview" }] }, "tools[0].type"],
    ["image_generation", { tools: [{ type: "image_generation" }] }, "tools[0].type"],
    ["mcp", { tools: [{ type: "mcp", server_label: "s" }] }, "tools[0].type"],
    ["local_shell", { tools: [{ type: "local_shell" }] }, "tools[0].type"],
    ["custom", { tools: [{ type: "custom", name: "grammar" }] }, "tools[0].type"],
    ["allowed_tools", { tool_choice: { type: "allowed_tools", mode: "auto", tools: [] } }, "tool_choice"],
    ["a hosted tool choice", { tool_choice: { type: "web_search_preview" } }, "tool_choice"],
  ];
  for (const [name, fields, param] of refusals) {
    test(`refuses ${name}, naming ${param} and the upstream`, () => {
      const error = thrown(() => read({ model: "m", input: "hi", ...fields }));
      expect(error.status).toBe(400);
      expect(error.code).toBe("unsupported_parameter");
      expect(error.param).toBe(param);
      expect(error.message).toContain(`which speaks ${UPSTREAM_NAME}`);
    });
  }

  const malformed: Array<[string, JsonObject, string]> = [
    ["no input", { input: undefined }, "input"],
    ["a numeric input", { input: 3 }, "input"],
    ["an item that is not an object", { input: ["hi"] }, "input[0]"],
    ["an item without type or role", { input: [{ content: "hi" }] }, "input[0].type"],
    ["an unknown role", { input: [{ role: "tool", content: "hi" }] }, "input[0].role"],
    ["content that is a number", { input: [{ role: "user", content: 1 }] }, "input[0].content"],
    ["an unknown part type", { input: [{ role: "user", content: [{ type: "text", text: "hi" }] }] }, "input[0].content[0].type"],
    ["a text part without text", { input: [{ role: "user", content: [{ type: "input_text" }] }] }, "input[0].content[0].text"],
    ["an image part without a URL", { input: [{ role: "user", content: [{ type: "input_image", detail: "auto" }] }] }, "input[0].content[0].image_url"],
    ["a system message with an image", { input: [{ role: "system", content: [{ type: "input_image", image_url: "https://x/a.png" }] }] }, "input[0].content"],
    ["a function call without call_id", { input: [{ type: "function_call", name: "f", arguments: "{}" }] }, "input[0].call_id"],
    ["a function call output that is a number", { input: [{ type: "function_call_output", call_id: "c", output: 1 }] }, "input[0].output"],
    ["encrypted content that is not text", { input: [{ type: "reasoning", summary: [], encrypted_content: 1 }] }, "input[0].encrypted_content"],
    ["instructions that are not text", { instructions: ["a"] }, "instructions"],
    ["tools that are not an array", { tools: {} }, "tools"],
    ["a function tool without a name", { tools: [{ type: "function" }] }, "tools[0].name"],
    ["function parameters that are not an object", { tools: [{ type: "function", name: "f", parameters: "x" }] }, "tools[0].parameters"],
    ["an unknown tool choice", { tool_choice: "any" }, "tool_choice"],
    ["a textual max_output_tokens", { max_output_tokens: "100" }, "max_output_tokens"],
    ["a textual temperature", { temperature: "hot" }, "temperature"],
    ["an unknown effort", { reasoning: { effort: "extreme" } }, "reasoning.effort"],
    ["reasoning that is not an object", { reasoning: "high" }, "reasoning"],
    ["an unknown text format", { text: { format: { type: "yaml" } } }, "text.format.type"],
    ["a json_schema without schema", { text: { format: { type: "json_schema", name: "x" } } }, "text.format.schema"],
    ["a negative top_logprobs", { top_logprobs: -1 }, "top_logprobs"],
  ];
  for (const [name, fields, param] of malformed) {
    test(`a 400 for ${name}, naming ${param}`, () => {
      const error = thrown(() => read({ model: "m", input: "hi", ...fields }));
      expect(error.status).toBe(400);
      expect(error.code).toBe("invalid_request");
      expect(error.param).toBe(param);
    });
  }
});

// ——— (b) the shared model written as a Responses request ———

describe("writing a request for a Responses upstream", () => {
  test("every field; other formats' reasoning and signatures, top_k, seed and penalties dropped", () => {
    expect(codec.writeRequest(structuredClone(UPSTREAM_IR), requestContext)).toEqual(UPSTREAM_REQUEST);
  });

  const minimal = (fields: Partial<IrRequest>): IrRequest => ({ model: "m", stream: false, system: [], messages: [{ role: "user", parts: [{ type: "text", text: "hi" }], param: "messages[0]" }], tools: [], ...fields });
  const hi = [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }];

  test("no output bound unless the client gave one; the context's model when the request has none; no stream flag when not streaming", () => {
    expect(codec.writeRequest(minimal({ model: undefined }), { maxTokens: 4096, model: "gpt-5" })).toEqual({ model: "gpt-5", input: hi, store: false });
  });

  test("efforts: max asks for xhigh; a zero budget is none (no encrypted reasoning asked); visibility alone asks for a summary", () => {
    expect(codec.writeRequest(minimal({ reasoning: { effort: "max" } }), requestContext)).toMatchObject({ reasoning: { effort: "xhigh" }, include: ["reasoning.encrypted_content"] });
    const off = codec.writeRequest(minimal({ reasoning: { budget: 0, visible: true } }), requestContext);
    expect(off.reasoning).toEqual({ effort: "none" });
    expect(off.include).toBeUndefined();
    expect(codec.writeRequest(minimal({ reasoning: { visible: true } }), requestContext)).toMatchObject({ reasoning: { summary: "auto" }, include: ["reasoning.encrypted_content"] });
  });

  test("json mode and plain tool choices; log probabilities refused (the shared answer cannot bring them back)", () => {
    const tools = [{ name: "f", parameters: { type: "object", properties: {} }, param: "tools[0]" }];
    const out = codec.writeRequest(minimal({ output: { type: "json", param: "response_format" }, tools, toolChoice: { type: "required" } }), requestContext);
    expect(out.text).toEqual({ format: { type: "json_object" } });
    expect(out.tool_choice).toBe("required");
    const error = thrown(() => codec.writeRequest(minimal({ logprobs: { top: 5, param: "top_logprobs" } }), requestContext));
    expect({ status: error.status, param: error.param, code: error.code }).toEqual({ status: 400, param: "top_logprobs", code: "unsupported_parameter" });
  });

  test("a document by URL is a file URL; a plain-text base64 document is its text", () => {
    const out = codec.writeRequest(
      minimal({
        messages: [
          {
            role: "user",
            param: "messages[0]",
            parts: [
              { type: "document", source: { kind: "url", url: "https://x/a.pdf" }, param: "p" },
              { type: "document", source: { kind: "base64", mediaType: "text/plain", data: "notes" }, param: "p" },
            ],
          },
        ],
      }),
      requestContext,
    );
    expect(out.input).toEqual([{ type: "message", role: "user", content: [{ type: "input_file", file_url: "https://x/a.pdf" }, { type: "input_text", text: "notes" }] }]);
  });

  test("refuses several candidates and stop sequences, naming the client's parameter", () => {
    const cases: Array<[Partial<IrRequest>, string]> = [
      [{ candidates: { count: 2, param: "n" } }, "n"],
      [{ stop: { sequences: ["END"], param: "stop_sequences" } }, "stop_sequences"],
    ];
    for (const [fields, param] of cases) {
      const error = thrown(() => codec.writeRequest(minimal(fields), requestContext));
      expect(error.status).toBe(400);
      expect(error.code).toBe("unsupported_parameter");
      expect(error.param).toBe(param);
      expect(error.message).toContain("which speaks OpenAI Responses");
    }
    expect(() => codec.writeRequest(minimal({ candidates: { count: 1, param: "n" }, stop: { sequences: [], param: "stop" } }), requestContext)).not.toThrow();
  });

  test("the upstream path", () => {
    expect(codec.target("gpt-5", true)).toEqual({ path: "/v1/responses", search: "" });
  });
});

// ——— (c) round trips ———

describe("round trips", () => {
  test("a request read then written is unchanged", () => {
    expect(codec.writeRequest(read(ROUND_TRIP_REQUEST), requestContext)).toEqual(ROUND_TRIP_REQUEST);
  });

  test("an answer read then written is unchanged", () => {
    expect(codec.writeAnswer(codec.readAnswer(structuredClone(CLIENT_ANSWER)), { created: CREATED })).toEqual(CLIENT_ANSWER);
    const incomplete = { ...CLIENT_ANSWER, status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output: [{ ...(CLIENT_ANSWER.output as JsonObject[])[1], id: "msg_msg_01XYz_0", status: "incomplete" }] };
    expect(codec.writeAnswer(codec.readAnswer(structuredClone(incomplete)), { created: CREATED })).toEqual(incomplete);
  });

  test("a stream read then written is unchanged, event by event", () => {
    expect(decode(writeStream(readStream(CLIENT_STREAM)))).toEqual(CLIENT_STREAM);
  });

  test("through compose(): a Responses client served by a Responses upstream", () => {
    const translator = compose(codec, codec);
    expect(translator.request(structuredClone(ROUND_TRIP_REQUEST), requestContext)).toEqual(ROUND_TRIP_REQUEST);
    expect(translator.response(structuredClone(CLIENT_ANSWER), { created: CREATED })).toEqual(CLIENT_ANSWER);
    const stream = translator.stream({ created: CREATED });
    const chunks: Uint8Array[] = [];
    const decoder = createSseDecoder((e) => chunks.push(stream.push(e)));
    decoder.push(new TextEncoder().encode(sseText(CLIENT_STREAM)));
    decoder.end();
    chunks.push(stream.end());
    expect(decode(chunks.map((c) => new TextDecoder().decode(c)).join(""))).toEqual(CLIENT_STREAM);
  });

  test("the codec is registered for its wire", () => {
    expect(codecOf("openai-responses")).toBe(codec);
  });
});

// ——— (d) upstream answers and streams read into the shared model ———

describe("reading a Responses upstream's answer", () => {
  test("reasoning, text and parallel calls in order, finish tool_calls, usage as the OpenAI reader reads it", () => {
    const answer = codec.readAnswer(structuredClone(UPSTREAM_ANSWER));
    expect(answer).toEqual(UPSTREAM_ANSWER_IR);
    expect(answer.usage).toEqual(openaiUsageFromJson(UPSTREAM_ANSWER)!);
  });

  test("incomplete answers: max_output_tokens is length, content_filter is content_filter; a refusal is text", () => {
    const body = (reason: string) => ({ id: "r", model: "m", status: "incomplete", incomplete_details: { reason }, output: [{ type: "message", content: [{ type: "refusal", refusal: "No." }] }] });
    expect(codec.readAnswer(body("max_output_tokens"))).toEqual({ id: "r", model: "m", parts: [{ type: "text", text: "No." }], finish: "length" });
    expect(codec.readAnswer(body("content_filter")).finish).toBe("content_filter");
  });

  test("odd bodies give an empty answer, never a throw", () => {
    const empty: IrAnswer = { id: "", model: "", parts: [], finish: "stop" };
    expect(codec.readAnswer(undefined)).toEqual(empty);
    expect(codec.readAnswer("oops")).toEqual(empty);
    expect(codec.readAnswer({ output: [null, 3, { type: "message", content: "x" }, { type: "function_call" }] })).toEqual({ ...empty, parts: [{ type: "tool_call", id: "", name: "", arguments: "" }], finish: "tool_calls" });
  });
});

describe("reading a Responses upstream's stream", () => {
  test("reasoning paragraphs and signature, text, interleaved calls routed by item id, usage, finish", () => {
    expect(readStream(UPSTREAM_SSE)).toEqual(UPSTREAM_SSE_IR);
  });

  const created = { type: "response.created", response: { id: "resp_x", model: "m", usage: null } };
  const completed = (response: JsonObject) => ({ type: "response.completed", response: { status: "completed", ...response } });
  const ev = (data: JsonObject): Ev => ({ event: String(data.type), data });

  test("a cut stream ends with the finish its content implies", () => {
    expect(readStream([ev(created), ev({ type: "response.output_text.delta", item_id: "m1", output_index: 0, delta: "Hel" })])).toEqual([
      { type: "start", id: "resp_x", model: "m" },
      { type: "text", text: "Hel" },
      { type: "finish", finish: "stop" },
    ]);
    expect(readStream([ev(created), ev({ type: "response.output_item.added", output_index: 0, item: { type: "function_call", id: "f", call_id: "c", name: "n", arguments: "" } })]).at(-1)).toEqual({ type: "finish", finish: "tool_calls" });
    expect(readStream("")).toEqual([]);
  });

  test("servers that send no deltas: arguments from done events, text and reasoning from finished items, hidden reasoning", () => {
    expect(
      readStream([
        ev(created),
        ev({ type: "response.output_item.done", output_index: 0, item: { id: "rs", type: "reasoning", summary: [{ type: "summary_text", text: "S" }], encrypted_content: "e1" } }),
        ev({ type: "response.output_item.done", output_index: 1, item: { id: "rs2", type: "reasoning", summary: [], encrypted_content: "e2" } }),
        ev({ type: "response.output_item.done", output_index: 2, item: { id: "m", type: "message", content: [{ type: "output_text", text: "T" }] } }),
        ev({ type: "response.output_item.added", output_index: 3, item: { id: "f1", type: "function_call", call_id: "c1", name: "a", arguments: "" } }),
        ev({ type: "response.function_call_arguments.delta", item_id: "f1", output_index: 3, delta: '{"x"' }),
        ev({ type: "response.function_call_arguments.done", item_id: "f1", output_index: 3, arguments: '{"x":1}' }),
        ev({ type: "response.output_item.done", output_index: 4, item: { id: "f2", type: "function_call", call_id: "c2", name: "b", arguments: "{}" } }),
        ev(completed({ usage: { input_tokens: 5, output_tokens: 2 } })),
      ]),
    ).toEqual([
      { type: "start", id: "resp_x", model: "m" },
      { type: "thinking", text: "S" },
      { type: "thinking_signature", signature: { wire: "openai-responses", value: "e1" } },
      { type: "redacted_thinking", signature: { wire: "openai-responses", value: "e2" } },
      { type: "text", text: "T" },
      { type: "tool_call_start", call: 0, id: "c1", name: "a" },
      { type: "tool_call_arguments", call: 0, delta: '{"x"' },
      { type: "tool_call_arguments", call: 0, delta: ":1}" },
      { type: "tool_call_start", call: 1, id: "c2", name: "b" },
      { type: "tool_call_arguments", call: 1, delta: "{}" },
      { type: "usage", usage: { prompt: 5, completion: 2, cacheRead: 0, cacheWrite: 0, reasoning: 0 } },
      { type: "finish", finish: "tool_calls" },
    ]);
  });

  test("events lacking item_id are routed by output_index; a finished item whose text came as deltas adds nothing", () => {
    expect(
      readStream([
        ev(created),
        ev({ type: "response.output_text.delta", output_index: 0, content_index: 0, delta: "Hi" }),
        ev({ type: "response.output_item.done", output_index: 0, item: { id: "m", type: "message", content: [{ type: "output_text", text: "Hi" }] } }),
        ev({ type: "response.output_item.added", output_index: 1, item: { id: "f", type: "function_call", call_id: "c", name: "n", arguments: "" } }),
        ev({ type: "response.function_call_arguments.delta", output_index: 1, delta: "{}" }),
        ev({ type: "response.output_item.done", output_index: 1, item: { type: "function_call", call_id: "c", name: "n", arguments: "{}" } }),
        ev(completed({})),
      ]),
    ).toEqual([
      { type: "start", id: "resp_x", model: "m" },
      { type: "text", text: "Hi" },
      { type: "tool_call_start", call: 0, id: "c", name: "n" },
      { type: "tool_call_arguments", call: 0, delta: "{}" },
      { type: "finish", finish: "tool_calls" },
    ]);
  });

  test("refusal and reasoning text deltas; incomplete endings; nothing after the end", () => {
    expect(
      readStream([
        ev(created),
        ev({ type: "response.refusal.delta", item_id: "m", output_index: 0, content_index: 0, delta: "No" }),
        ev({ type: "response.reasoning_text.delta", item_id: "r", output_index: 1, content_index: 0, delta: "raw" }),
        ev({ type: "response.incomplete", response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } } }),
        ev({ type: "response.output_text.delta", item_id: "m", output_index: 0, delta: "late" }),
      ]),
    ).toEqual([{ type: "start", id: "resp_x", model: "m" }, { type: "text", text: "No" }, { type: "thinking", text: "raw" }, { type: "finish", finish: "length" }]);
    expect(readStream([ev(created), ev({ type: "response.incomplete", response: { incomplete_details: { reason: "content_filter" } } })]).at(-1)).toEqual({ type: "finish", finish: "content_filter" });
  });

  test("response.failed and error events are errors; nothing follows", () => {
    const failed = readStream([ev(created), ev({ type: "response.failed", response: { status: "failed", error: { code: "rate_limit_exceeded", message: "Slow down" } } }), ev({ type: "response.output_text.delta", delta: "x" })]);
    expect(failed).toHaveLength(2);
    const error = (failed[1] as Extract<IrEvent, { type: "error" }>).error;
    expect([error.kind, error.status, error.message, error.code]).toEqual(["rate_limit", 429, "Slow down", "rate_limit_exceeded"]);

    const server = readStream([ev(created), ev({ type: "response.failed", response: { status: "failed", error: { code: "server_error", message: "" } } })])[1] as Extract<IrEvent, { type: "error" }>;
    expect([server.error.kind, server.error.status, server.error.message]).toEqual(["upstream", 502, "The upstream response failed"]);

    const events = readStream([ev({ type: "error", code: "invalid_request_error", message: "Bad input", param: "input" })]);
    expect(events).toHaveLength(1);
    const bad = (events[0] as Extract<IrEvent, { type: "error" }>).error;
    expect([bad.kind, bad.status, bad.message, bad.param]).toEqual(["invalid_request", 400, "Bad input", "input"]);
    const limited = (readStream([ev({ type: "error", code: "rate_limit_exceeded", message: "Slow down", param: null })])[0] as Extract<IrEvent, { type: "error" }>).error;
    expect([limited.kind, limited.status, limited.code, limited.param]).toEqual(["rate_limit", 429, "rate_limit_exceeded", undefined]);
    const enveloped = (readStream([ev({ type: "error", error: { type: "server_error", message: "Boom" } })])[0] as Extract<IrEvent, { type: "error" }>).error;
    expect([enveloped.kind, enveloped.message]).toEqual(["upstream", "Boom"]);
  });
});

// ——— (e) answers and streams written for a Responses client, and read by the SDK ———

describe("writing for a Responses client", () => {
  test("an answer: reasoning without another format's signature, text runs joined, calls as items, usage as Responses spells it", () => {
    expect(codec.writeAnswer(structuredClone(CLIENT_ANSWER_IR), { created: CREATED })).toEqual(CLIENT_ANSWER);
  });

  test("an answer: incomplete by length or filter; Responses' own hidden reasoning kept encrypted; no usage when the upstream said none", () => {
    const out = codec.writeAnswer({ id: "", model: "m", parts: [{ type: "redacted_thinking", signature: { wire: "openai-responses", value: "enc" } }], finish: "length" }, { created: CREATED });
    expect(String(out.id)).toMatch(/^resp_[0-9a-f]{32}$/);
    const base = String(out.id).slice(5);
    expect(out).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, usage: null, output: [{ id: `rs_${base}_0`, type: "reasoning", summary: [], encrypted_content: "enc" }] });
    expect(codec.writeAnswer({ id: "a", model: "m", parts: [], finish: "content_filter" }, { created: CREATED })).toMatchObject({ status: "incomplete", incomplete_details: { reason: "content_filter" } });
  });

  test("a stream: the exact event sequence, sequence numbers from 0, interleaved calls each to their own item", () => {
    expect(decode(writeStream(CLIENT_STREAM_IR))).toEqual(CLIENT_STREAM);
  });

  test("a stream: a call that got no argument text closes with {} (a delta, the done event and the item)", () => {
    const events = decode(writeStream([{ type: "start", id: "x", model: "m" }, { type: "tool_call_start", call: 0, id: "c", name: "f" }, { type: "tool_call_arguments", call: 0, delta: "" }, { type: "finish", finish: "tool_calls" }]));
    const data = events.map((e) => e.data as JsonObject);
    expect(data.filter((d) => String(d.type).startsWith("response.function_call_arguments")).map((d) => [d.type, d.delta ?? d.arguments])).toEqual([
      ["response.function_call_arguments.delta", "{}"],
      ["response.function_call_arguments.done", "{}"],
    ]);
    expect(data.find((d) => d.type === "response.output_item.done")!.item).toMatchObject({ type: "function_call", arguments: "{}" });
  });

  test("a stream: the client's final usage is what metering reads from it", () => {
    const tap = formatOf("openai").streamUsageTap();
    const decoder = createSseDecoder((e) => tap.onEvent(e));
    decoder.push(new TextEncoder().encode(writeStream(CLIENT_STREAM_IR)));
    decoder.end();
    expect(tap.result()).toEqual({ prompt: 30, completion: 20, cacheRead: 10, cacheWrite: 0, reasoning: 5 });
  });

  test("a stream that fails midway ends with response.failed (open items as they stood), and nothing after", () => {
    const writer = codec.streamWriter({ created: CREATED });
    let text = writer.write([{ type: "start", id: "x", model: "m" }, { type: "text", text: "Hal" }, { type: "tool_call_start", call: 0, id: "c", name: "f" }, { type: "tool_call_arguments", call: 0, delta: "{" }]);
    text += writer.write([{ type: "error", error: new HttpError("rate_limit", "Too many requests") }]);
    expect(writer.write([{ type: "text", text: "more" }]) + writer.end() + writer.fail(new HttpError("upstream", "again"))).toBe("");
    const events = decode(text);
    expect(events.at(-1)).toEqual({
      event: "response.failed",
      data: {
        type: "response.failed",
        sequence_number: events.length - 1,
        response: {
          id: "resp_x",
          object: "response",
          created_at: CREATED,
          status: "failed",
          ...ECHO,
          error: { code: "rate_limit_exceeded", message: "Too many requests" },
          incomplete_details: null,
          model: "m",
          output: [
            { id: "msg_x_0", type: "message", status: "completed", content: [{ type: "output_text", annotations: [], text: "Hal" }], role: "assistant" },
            { id: "fc_x_1", type: "function_call", status: "incomplete", arguments: "{", call_id: "c", name: "f" },
          ],
          usage: null,
          metadata: {},
        },
      },
    });
  });

  test("a stream: usage told up front stands when no later report comes", () => {
    const events = decode(writeStream([{ type: "start", id: "x", model: "m", usage: { prompt: 7, completion: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 } }, { type: "text", text: "a" }, { type: "finish", finish: "stop" }]));
    expect((events.at(-1)!.data as JsonObject).response).toMatchObject({ status: "completed", usage: { input_tokens: 7, output_tokens: 0, total_tokens: 7 } });
  });

  test("a stream that fails before anything: created, then failed", () => {
    const events = decode(codec.streamWriter({ created: CREATED }).fail(new HttpError("unavailable", "Overloaded")));
    expect(events.map((e) => e.event)).toEqual(["response.created", "response.in_progress", "response.failed"]);
    expect((events[2]!.data as JsonObject).response).toMatchObject({ status: "failed", error: { code: "server_error", message: "Overloaded" } });
  });

  test("a stream cut by length ends incomplete; hidden reasoning of Responses is an item of its own", () => {
    const events = decode(writeStream([{ type: "start", id: "x", model: "m" }, { type: "redacted_thinking", signature: { wire: "openai-responses", value: "e" } }, { type: "redacted_thinking", signature: { wire: "anthropic-messages", value: "a" } }, { type: "text", text: "a" }, { type: "finish", finish: "length" }]));
    expect(events.map((e) => e.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.incomplete",
    ]);
    expect((events[3]!.data as JsonObject).item).toEqual({ id: "rs_x_0", type: "reasoning", summary: [], encrypted_content: "e" });
    expect((events[9]!.data as JsonObject).item).toEqual({ id: "msg_x_1", type: "message", status: "incomplete", content: [{ type: "output_text", annotations: [], text: "a" }], role: "assistant" });
    expect((events.at(-1)!.data as JsonObject).response).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
  });

  describe("read by the OpenAI SDK", () => {
    let server: ReturnType<typeof Bun.serve>;
    let body = "";
    let contentType = "";
    beforeAll(() => {
      server = Bun.serve({ port: 0, fetch: () => new Response(body, { headers: { "content-type": contentType } }) });
    });
    afterAll(() => server.stop(true));
    const serve = (text: string, type: string) => {
      body = text;
      contentType = type;
    };
    const clients = [
      { name: "openai 6", make: () => new OpenAI({ apiKey: "k", baseURL: `http://localhost:${server.port}/v1`, maxRetries: 0 }) },
      { name: "openai 7", make: () => new OpenAIV7({ apiKey: "k", baseURL: `http://localhost:${server.port}/v1`, maxRetries: 0 }) as unknown as OpenAI },
    ];

    for (const { name, make } of clients) {
      test(`${name}: responses.stream() accumulates the written stream into the final response`, async () => {
        serve(writeStream(CLIENT_STREAM_IR), "text/event-stream");
        const argumentSnapshots: string[] = [];
        const stream = make().responses.stream({ model: "gpt-5", input: "hi" });
        stream.on("response.function_call_arguments.delta", (e) => argumentSnapshots.push(`${e.output_index}:${e.snapshot}`));
        const final = await stream.finalResponse();
        expect(final.status).toBe("completed");
        expect(final.output_text).toBe("Hi");
        // The SDK adds its own `parsed` fields to what it read.
        expect(final.output).toMatchObject((CLIENT_STREAM.at(-1)!.data as { response: { output: unknown } }).response.output as never);
        expect(final.usage).toEqual({ input_tokens: 30, input_tokens_details: { cached_tokens: 10, cache_write_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 5 }, total_tokens: 50 });
        expect(argumentSnapshots).toEqual(['2:{"city"', '3:{"tz":', '2:{"city":"Paris"}', '3:{"tz":"UTC"}']);
      });

      test(`${name}: responses.create() reads the written answer`, async () => {
        serve(JSON.stringify(codec.writeAnswer(CLIENT_ANSWER_IR, { created: CREATED })), "application/json");
        const response = await make().responses.create({ model: "gpt-5", input: "hi" });
        expect(response.output_text).toBe("Checking both.");
        expect(response.output.filter((o) => o.type === "function_call").map((o) => [o.call_id, o.name, o.arguments])).toEqual([
          ["toolu_1", "get_weather", '{"city":"Paris"}'],
          ["toolu_2", "get_time", '{"tz":"Asia/Tokyo"}'],
        ]);
      });

      test(`${name}: a failed stream gives the failed response and its error`, async () => {
        const writer = codec.streamWriter({ created: CREATED });
        serve(writer.write([{ type: "start", id: "x", model: "m" }, { type: "text", text: "partial" }]) + writer.fail(new HttpError("upstream", "Upstream broke")), "text/event-stream");
        const final = await make().responses.stream({ model: "gpt-5", input: "hi" }).finalResponse();
        expect(final.status).toBe("failed");
        expect(final.error).toEqual({ code: "server_error", message: "Upstream broke" });
        expect(final.output_text).toBe("partial");
      });
    }
  });
});

// ——— (f) errors both ways ———

describe("errors", () => {
  test("written in OpenAI's envelope; 529 reads as 503", () => {
    expect(codec.writeError(new HttpError("invalid_request", "Bad", { param: "input", code: "unsupported_parameter" }))).toEqual({
      status: 400,
      body: { error: { message: "Bad", type: "invalid_request_error", param: "input", code: "unsupported_parameter" } },
    });
    expect(codec.writeError(new HttpError("unavailable", "Overloaded", { status: 529 }))).toEqual({
      status: 503,
      body: { error: { message: "Overloaded", type: "overloaded_error", param: null, code: null } },
    });
    expect(codec.writeError(new HttpError("rate_limit", "Slow")).status).toBe(429);
  });

  test("an upstream's errors read with their status, message, code and param", () => {
    const limited = codec.readError(429, { error: { message: "Rate limit reached", type: "requests", param: null, code: "rate_limit_exceeded" } });
    expect([limited.kind, limited.status, limited.message, limited.code]).toEqual(["rate_limit", 429, "Rate limit reached", "rate_limit_exceeded"]);
    const bad = codec.readError(400, { error: { message: "Unknown parameter", type: "invalid_request_error", param: "input[0].foo", code: "unknown_parameter" } });
    expect([bad.kind, bad.status, bad.param, bad.code]).toEqual(["invalid_request", 400, "input[0].foo", "unknown_parameter"]);
    const broken = codec.readError(500, "not json");
    expect([broken.kind, broken.status, broken.message]).toEqual(["upstream", 500, "The upstream answered 500"]);
  });

  test("through compose(): an upstream error in the client's envelope", () => {
    expect(compose(codec, codec).error(401, { error: { message: "Incorrect API key", type: "invalid_request_error", code: "invalid_api_key" } })).toEqual({
      status: 401,
      body: { error: { message: "Incorrect API key", type: "authentication_error", param: null, code: "invalid_api_key" } },
    });
  });
});

test("fixture sanity: the PNG is base64", () => {
  expect(Buffer.from(PNG, "base64").subarray(1, 4).toString()).toBe("PNG");
});

describe("namespace tools (Codex groups its sub-agent tools so)", () => {
  const clientRequest: JsonObject = {
    model: "m",
    input: [
      { role: "user", content: "spawn one" },
      { type: "function_call", call_id: "call_1", namespace: "agents", name: "spawn", arguments: '{"task":"x"}' },
      { type: "function_call_output", call_id: "call_1", output: "spawned" },
    ],
    tools: [
      { type: "function", name: "exec", parameters: { type: "object" } },
      { type: "namespace", name: "agents", description: "Sub-agents", tools: [{ type: "function", name: "spawn", description: "Start one", parameters: { type: "object", properties: { task: { type: "string" } } } }, { type: "function", name: "close", parameters: { type: "object" } }] },
    ],
  };

  test("a namespace's functions travel flat, as <namespace>__<function>, and so do the calls sent back", () => {
    const request = read(clientRequest);
    expect(request.tools.map((t) => [t.name, t.param])).toEqual([
      ["exec", "tools[0]"],
      ["agents__spawn", "tools[1].tools[0]"],
      ["agents__close", "tools[1].tools[1]"],
    ]);
    expect(request.tools[1]!.description).toBe("Start one");
    expect(request.messages[1]!.parts).toEqual([{ type: "tool_call", id: "call_1", name: "agents__spawn", arguments: '{"task":"x"}' }]);
    expect(request.messages[2]!.parts).toEqual([{ type: "tool_result", callId: "call_1", name: "agents__spawn", content: [{ type: "text", text: "spawned" }] }]);
  });

  test("a namespace holding a hosted tool is refused like the hosted tool itself", () => {
    const error = thrown(() => read({ model: "m", input: "x", tools: [{ type: "namespace", name: "n", tools: [{ type: "web_search" }] }] }));
    expect({ status: error.status, param: error.param }).toEqual({ status: 400, param: "tools[0].tools[0].type" });
  });

  test("calls coming back are named as the client declared them: namespace apart, in answers and streams", () => {
    const answer: IrAnswer = { id: "up", model: "m", parts: [{ type: "tool_call", id: "call_2", name: "agents__close", arguments: "{}" }, { type: "tool_call", id: "call_3", name: "exec", arguments: "{}" }], finish: "tool_calls" };
    const written = codec.writeAnswer(answer, { created: CREATED, clientRequest });
    expect((written.output as JsonObject[]).map((item) => [item.namespace, item.name])).toEqual([
      ["agents", "close"],
      [undefined, "exec"],
    ]);
    // Without the request's namespaces a flat name stays as it is.
    expect((codec.writeAnswer(answer, { created: CREATED }).output as JsonObject[])[0]!.name).toBe("agents__close");
    const writer = codec.streamWriter({ created: CREATED, clientRequest });
    const events = decode(
      writer.write([
        { type: "start", id: "up", model: "m" },
        { type: "tool_call_start", call: 0, id: "call_2", name: "agents__close" },
        { type: "tool_call_arguments", call: 0, delta: "{}" },
        { type: "finish", finish: "tool_calls" },
      ]) + writer.end(),
    );
    const added = events.find((e) => (e.data as JsonObject).type === "response.output_item.added")!.data as JsonObject;
    expect(added.item).toMatchObject({ type: "function_call", namespace: "agents", name: "close", call_id: "call_2" });
    const completed = events.at(-1)!.data as JsonObject;
    expect((completed.response as JsonObject).output).toEqual([expect.objectContaining({ namespace: "agents", name: "close" })]);
  });
});

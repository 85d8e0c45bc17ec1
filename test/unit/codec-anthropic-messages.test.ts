import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import AnthropicV0 from "anthropic-v0";
import { HttpError } from "../../src/core/errors.ts";
import type { JsonObject } from "../../src/formats/json.ts";
import { formatOf } from "../../src/formats/registry.ts";
import { createSseDecoder } from "../../src/formats/sse.ts";
import { codecOf } from "../../src/formats/translate/codecs/index.ts";
import { compose } from "../../src/formats/translate/compose.ts";
import { anthropicCodec as codec } from "../../src/formats/translate/codecs/anthropic/index.ts";
import type { IrEvent, IrRequest } from "../../src/formats/translate/ir.ts";
import {
  ANSWER, ANSWER_IR, answerSchema, blockDelta, blockStart, blockStop, CLIENT_REQUEST, CLIENT_REQUEST_IR, CLIENT_REQUEST_NORMALISED, MAX_TOKENS,
  MESSAGE_STOP, messageDelta, messageStart, MODEL_REQUEST, MODEL_REQUEST_WRITTEN, PING, PNG, STREAM, STREAM_AS_SENT, STREAM_IR, type Ev,
} from "../fixtures/translation/anthropic-messages.ts";
import { decodeSse as decode, sseText, thrownHttpError } from "../helpers/sse-transcripts.ts";

const UPSTREAM = "OpenAI Chat Completions";
const readContext = { model: "claude-sonnet-4-5", stream: true, upstream: UPSTREAM };
const requestContext = { maxTokens: MAX_TOKENS };
const W = "anthropic-messages" as const;

const read = (body: JsonObject, context: Partial<typeof readContext> = {}) => codec.readRequest(structuredClone(body), { ...readContext, ...context });
const write = (request: IrRequest) => codec.writeRequest(structuredClone(request), requestContext);

/** The request a client sends, minimal, with `extra` fields over it. */
const body = (extra: JsonObject = {}): JsonObject => ({ model: "claude-sonnet-4-5", max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...extra });
/** A model request, minimal, with `extra` fields over it. */
const ir = (extra: Partial<IrRequest> = {}): IrRequest => ({ model: "m", stream: false, system: [], messages: [{ role: "user", parts: [{ type: "text", text: "hi" }], param: "messages[0]" }], tools: [], ...extra });

/** An upstream stream read as the relay would feed it: decoded event by event, then `end()`. */
function readStream(events: Ev[] | string): IrEvent[] {
  const reader = codec.streamReader();
  const out: IrEvent[] = [];
  const decoder = createSseDecoder((e) => out.push(...reader.push(e)));
  decoder.push(new TextEncoder().encode(typeof events === "string" ? events : sseText(events)));
  decoder.end();
  out.push(...reader.end());
  return out;
}

/** Model events written as one client stream: each event on its own, then `end()`. */
function writeStream(events: IrEvent[]): string {
  const writer = codec.streamWriter({});
  return events.map((e) => writer.write([e])).join("") + writer.end();
}

/** The refusal a call throws, as the assertions compare it. */
function thrown(run: () => unknown): { status: number; param: string | undefined; code: string | undefined; message: string } {
  const error = thrownHttpError(run);
  return { status: error.status, param: error.param, code: error.code, message: error.message };
}

describe("the codec is registered", () => {
  test("codecOf finds it, with its wire, name and target", () => {
    expect(codecOf("anthropic-messages")).toBe(codec);
    expect({ wire: codec.wire, name: codec.name }).toEqual({ wire: W, name: "Anthropic Messages" });
    expect(codec.target("claude-sonnet-4-5", true)).toEqual({ path: "/v1/messages", search: "" });
  });
});

// ——— (a) client requests read into the model ———

describe("reading an Anthropic client's request", () => {
  test("a realistic turn reads into exact model values (hints with no counterpart dropped)", () => {
    expect(read(CLIENT_REQUEST)).toEqual(CLIENT_REQUEST_IR);
  });

  test("model and stream come from the context; a string system and string contents are text", () => {
    expect(read(body({ system: "Be kind.", stream: false }), { model: "claude-opus-4-5", stream: false })).toEqual({
      model: "claude-opus-4-5", stream: false, system: ["Be kind."], maxTokens: 100, tools: [],
      messages: [{ role: "user", parts: [{ type: "text", text: "hi" }], param: "messages[0]" }],
    });
    expect(read(body({ system: "" })).system).toEqual([]);
  });

  test("system messages in the list (newer API versions) join the instructions", () => {
    const request = read(body({ system: "First.", messages: [{ role: "system", content: [{ type: "text", text: "Second." }] }, { role: "user", content: "hi" }] }));
    expect(request.system).toEqual(["First.", "Second."]);
    expect(request.messages).toEqual([{ role: "user", parts: [{ type: "text", text: "hi" }], param: "messages[1]" }]);
  });

  test("thinking modes: enabled is a budget, adaptive lets the model decide, disabled is 0; display says whether it is shown", () => {
    const reasoning = (extra: JsonObject) => read(body(extra)).reasoning;
    expect(reasoning({ thinking: { type: "enabled", budget_tokens: 4000 } })).toEqual({ budget: 4000 });
    expect(reasoning({ thinking: { type: "adaptive" } })).toEqual({ budget: -1 });
    expect(reasoning({ thinking: { type: "adaptive", display: "omitted" }, output_config: { effort: "xhigh" } })).toEqual({ budget: -1, visible: false, effort: "xhigh" });
    expect(reasoning({ thinking: { type: "enabled", budget_tokens: 2000, display: "summarized" } })).toEqual({ budget: 2000, visible: true });
    expect(reasoning({ thinking: { type: "disabled" } })).toEqual({ budget: 0 });
    expect(reasoning({ output_config: { effort: "low" } })).toEqual({ effort: "low" });
    expect(reasoning({ thinking: { type: "between_tools" } })).toBeUndefined();
    expect(reasoning({})).toBeUndefined();
  });

  test("the beta's top-level output_format is a JSON schema too, named by its own param", () => {
    expect(read(body({ output_format: { type: "json_schema", schema: answerSchema } })).output).toEqual({ type: "json_schema", schema: answerSchema, param: "output_format" });
  });

  test("tool choices", () => {
    const choice = (tool_choice: JsonObject) => {
      const r = read(body({ tools: [{ name: "f", input_schema: { type: "object" } }], tool_choice }));
      return { toolChoice: r.toolChoice, parallelToolCalls: r.parallelToolCalls };
    };
    expect(choice({ type: "any" })).toEqual({ toolChoice: { type: "required" }, parallelToolCalls: undefined });
    expect(choice({ type: "none" })).toEqual({ toolChoice: { type: "none" }, parallelToolCalls: undefined });
    expect(choice({ type: "tool", name: "f", disable_parallel_tool_use: true })).toEqual({ toolChoice: { type: "tool", name: "f", param: "tool_choice" }, parallelToolCalls: false });
    expect(choice({ type: "auto", disable_parallel_tool_use: false })).toEqual({ toolChoice: { type: "auto" }, parallelToolCalls: undefined });
  });

  test("a thinking block with an empty signature (a translated answer's) reads as unsigned", () => {
    const request = read(body({ messages: [{ role: "user", content: "q" }, { role: "assistant", content: [{ type: "thinking", thinking: "hm", signature: "" }, { type: "text", text: "a" }] }] }));
    expect(request.messages[1]!.parts).toEqual([{ type: "thinking", text: "hm" }, { type: "text", text: "a" }]);
  });

  test("a tool result for a call the history does not show keeps no name", () => {
    const request = read(body({ messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_x" }] }] }));
    expect(request.messages[0]!.parts).toEqual([{ type: "tool_result", callId: "toolu_x", content: [] }]);
  });

  test("context management is dropped: the upstream reads the whole conversation (Claude Code sends it on every call)", () => {
    const request = read(body({ context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] } }));
    expect(request).toEqual(read(body({})));
  });

  describe("what the model cannot hold is refused: a 400 naming the client's parameter and the upstream format", () => {
    const refused: Array<[string, JsonObject]> = [
      ["container", { container: "container_1" }],
      ["mcp_servers", { mcp_servers: [{ type: "url", url: "https://mcp.example", name: "x" }] }],
      ["tools[1].type", { tools: [{ name: "f", input_schema: { type: "object" } }, { type: "web_search_20250305", name: "web_search" }] }],
      ["tools[0].type", { tools: [{ type: "bash_20250124", name: "bash" }] }],
      ["tools[0].type", { tools: [{ type: "text_editor_20250728", name: "str_replace_based_edit_tool" }] }],
      ["tools[0].type", { tools: [{ type: "code_execution_20250825", name: "code_execution" }] }],
      ["tools[0].type", { tools: [{ type: "computer_20250124", name: "computer", display_width_px: 1024, display_height_px: 768 }] }],
      ["messages[0].content[0].type", { messages: [{ role: "user", content: [{ type: "search_result", source: "https://s", title: "t", content: [{ type: "text", text: "x" }] }] }] }],
      ["messages[0].content[0].type", { messages: [{ role: "user", content: [{ type: "container_upload", file_id: "file_1" }] }] }],
      ["messages[0].content[0].source.type", { messages: [{ role: "user", content: [{ type: "image", source: { type: "file", file_id: "file_1" } }] }] }],
      ["messages[0].content[0].source.type", { messages: [{ role: "user", content: [{ type: "document", source: { type: "file", file_id: "file_1" } }] }] }],
      ["messages[0].content[0].source.type", { messages: [{ role: "user", content: [{ type: "document", source: { type: "url", url: "https://example.com/a.pdf" } }] }] }],
      ["messages[0].content[0].source.type", { messages: [{ role: "user", content: [{ type: "document", source: { type: "content", content: [{ type: "text", text: "x" }] } }] }] }],
      ["messages[1].content[0].type", { messages: [{ role: "user", content: "q" }, { role: "assistant", content: [{ type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }] }] }],
      ["messages[0].content[0].content[0].type", { messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: [{ type: "search_result", source: "s", title: "t", content: [] }] }] }] }],
      ["messages[0].content[0].content[1].source.type", { messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: [{ type: "text", text: "x" }, { type: "image", source: { type: "file", file_id: "f" } }] }] }] }],
    ];
    for (const [param, extra] of refused) {
      test(`${param}: ${JSON.stringify(extra).slice(0, 90)}`, () => {
        const error = thrown(() => read(body(extra)));
        expect({ status: error.status, param: error.param, code: error.code }).toEqual({ status: 400, param, code: "unsupported_parameter" });
        expect(error.message).toContain(UPSTREAM);
      });
    }
  });

  describe("malformed requests are a plain 400 naming the parameter", () => {
    const malformed: Array<[string, JsonObject]> = [
      ["messages", { messages: "hi" }],
      ["messages[0]", { messages: ["hi"] }],
      ["messages[0].role", { messages: [{ role: "tool", content: "x" }] }],
      ["messages[0].content", { messages: [{ role: "user", content: 42 }] }],
      ["messages[0].content[0]", { messages: [{ role: "user", content: ["x"] }] }],
      ["messages[0].content[0].text", { messages: [{ role: "user", content: [{ type: "text", text: 1 }] }] }],
      ["messages[0].content[0].source", { messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", data: PNG } }] }] }],
      ["messages[0].content[0].tool_use_id", { messages: [{ role: "user", content: [{ type: "tool_result", content: "x" }] }] }],
      ["messages[0].content[0].content", { messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: 5 }] }] }],
      ["messages[1].content[0].input", { messages: [{ role: "user", content: "q" }, { role: "assistant", content: [{ type: "tool_use", id: "t", name: "f", input: "{}" }] }] }],
      ["messages[1].content[0]", { messages: [{ role: "user", content: "q" }, { role: "assistant", content: [{ type: "tool_use", name: "f", input: {} }] }] }],
      ["messages[1].content[0].thinking", { messages: [{ role: "user", content: "q" }, { role: "assistant", content: [{ type: "thinking", signature: "s" }] }] }],
      ["messages[1].content[0].data", { messages: [{ role: "user", content: "q" }, { role: "assistant", content: [{ type: "redacted_thinking" }] }] }],
      ["system", { system: 5 }],
      ["system[1]", { system: [{ type: "text", text: "a" }, { type: "image", source: {} }] }],
      ["messages[0].content[0]", { messages: [{ role: "system", content: [{ type: "image", source: {} }] }, { role: "user", content: "hi" }] }],
      ["max_tokens", { max_tokens: "100" }],
      ["temperature", { temperature: "hot" }],
      ["top_k", { top_k: "5" }],
      ["stop_sequences", { stop_sequences: "END" }],
      ["tools", { tools: { name: "f" } }],
      ["tools[0]", { tools: ["f"] }],
      ["tools[0].name", { tools: [{ input_schema: { type: "object" } }] }],
      ["tools[0].input_schema", { tools: [{ name: "f", input_schema: "object" }] }],
      ["tool_choice", { tool_choice: "auto" }],
      ["tool_choice.type", { tool_choice: { type: "function" } }],
      ["tool_choice.name", { tool_choice: { type: "tool" } }],
      ["thinking", { thinking: true }],
      ["thinking.budget_tokens", { thinking: { type: "enabled" } }],
      ["output_config.effort", { output_config: { effort: "extreme" } }],
      ["output_config.format", { output_config: { format: { type: "json_object" } } }],
      ["output_format", { output_format: { type: "json_schema" } }],
    ];
    for (const [param, extra] of malformed) {
      test(param, () => {
        expect(thrown(() => read(body(extra)))).toMatchObject({ status: 400, param, code: "invalid_request" });
      });
    }
  });
});

// ——— (b) model requests written as Anthropic requests ———

describe("writing an Anthropic request", () => {
  test("another format's turn, exactly: what is dropped, merged, reordered and capped", () => {
    expect(write(MODEL_REQUEST)).toEqual(MODEL_REQUEST_WRITTEN);
  });

  test("the client's bound wins over the reserved one; a stream is asked for", () => {
    expect(write(ir({ maxTokens: 300, stream: true }))).toEqual({ model: "m", messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], max_tokens: 300, stream: true });
    expect(codec.writeRequest(ir({ model: undefined }), { maxTokens: 50, model: "claude-haiku-4-5" }).model).toBe("claude-haiku-4-5");
  });

  test("reasoning: efforts become budgets kept below max_tokens, budgets are sent as given within Anthropic's bounds", () => {
    const reasoning = (r: IrRequest["reasoning"], maxTokens = 20000) => {
      const out = write(ir({ reasoning: r, maxTokens }));
      return { thinking: out.thinking, output_config: out.output_config };
    };
    expect(reasoning({ effort: "low" })).toEqual({ thinking: { type: "enabled", budget_tokens: 2048 }, output_config: undefined });
    expect(reasoning({ effort: "medium" }).thinking).toEqual({ type: "enabled", budget_tokens: 8192 });
    expect(reasoning({ effort: "high" }).thinking).toEqual({ type: "enabled", budget_tokens: 16384 });
    expect(reasoning({ effort: "xhigh" }).thinking).toEqual({ type: "enabled", budget_tokens: 19999 });
    expect(reasoning({ effort: "max" }, 64000).thinking).toEqual({ type: "enabled", budget_tokens: 32768 });
    expect(reasoning({ effort: "none" }).thinking).toBeUndefined();
    expect(reasoning({ effort: "minimal" }).thinking).toBeUndefined();
    // Anthropic's smallest budget does not fit under a bound this small: no thinking rather than a refused call.
    expect(reasoning({ effort: "low" }, 1024).thinking).toBeUndefined();
    expect(reasoning({ budget: 5000 }, 1000).thinking).toBeUndefined();
    expect(reasoning({ budget: 500 }).thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
    expect(reasoning({ budget: 50000 }).thinking).toEqual({ type: "enabled", budget_tokens: 19999 });
    expect(reasoning({ budget: 0 }).thinking).toEqual({ type: "disabled" });
    expect(reasoning({ budget: -1 }).thinking).toEqual({ type: "adaptive" });
    expect(reasoning({ budget: -1, visible: false })).toEqual({ thinking: { type: "adaptive", display: "omitted" }, output_config: undefined });
    expect(reasoning({ budget: 3000, visible: true }).thinking).toEqual({ type: "enabled", budget_tokens: 3000, display: "summarized" });
    expect(reasoning({ budget: 0, visible: true }).thinking).toEqual({ type: "disabled" });
    // An effort given with a budget (only an Anthropic client gives both) is also sent as Anthropic's effort.
    expect(reasoning({ budget: -1, effort: "high" })).toEqual({ thinking: { type: "adaptive" }, output_config: { effort: "high" } });
    expect(reasoning({ budget: 2000, effort: "minimal" })).toEqual({ thinking: { type: "enabled", budget_tokens: 2000 }, output_config: undefined });
  });

  test("a tool loop whose last assistant turn has no Anthropic thinking goes on without thinking (Anthropic would refuse it)", () => {
    const loop = (first: IrRequest["messages"][0]["parts"]): IrRequest["messages"] => [
      { role: "user", parts: [{ type: "text", text: "q" }], param: "messages[0]" },
      { role: "assistant", parts: [...first, { type: "tool_call", id: "c", name: "f", arguments: "{}" }], param: "messages[1]" },
      { role: "user", parts: [{ type: "tool_result", callId: "c", content: [{ type: "text", text: "r" }] }], param: "messages[2]" },
    ];
    const thinking = (messages: IrRequest["messages"], reasoning: IrRequest["reasoning"]) => write(ir({ messages, reasoning, maxTokens: 20000 })).thinking;
    expect(thinking(loop([]), { effort: "high" })).toBeUndefined();
    expect(thinking(loop([{ type: "thinking", text: "from Chat" }]), { budget: -1 })).toBeUndefined();
    expect(thinking(loop([]), { budget: 0 })).toEqual({ type: "disabled" });
    expect(thinking(loop([{ type: "thinking", text: "ours", signature: { wire: W, value: "s" } }]), { effort: "high" })).toEqual({ type: "enabled", budget_tokens: 16384 });
    expect(thinking(loop([{ type: "redacted_thinking", signature: { wire: W, value: "r" } }]), { effort: "low" })).toEqual({ type: "enabled", budget_tokens: 2048 });
    // A finished loop (the last assistant turn answered in text) asks for thinking again.
    const finished: IrRequest["messages"] = [...loop([]), { role: "assistant", parts: [{ type: "text", text: "done" }], param: "messages[3]" }, { role: "user", parts: [{ type: "text", text: "next" }], param: "messages[4]" }];
    expect(thinking(finished, { effort: "high" })).toEqual({ type: "enabled", budget_tokens: 16384 });
  });

  test("a forced tool call goes without thinking; with thinking, the sampling settings Anthropic refuses beside it are dropped", () => {
    const tools = [{ name: "f", parameters: { type: "object" }, param: "tools[0]" }];
    const sampling = { temperature: 0.3, topP: 0.9, topK: 20 };
    const written = (extra: Partial<IrRequest>) => {
      const out = write(ir({ tools, maxTokens: 20000, ...extra }));
      return { thinking: out.thinking, tool_choice: out.tool_choice, temperature: out.temperature, top_p: out.top_p, top_k: out.top_k };
    };
    expect(written({ toolChoice: { type: "required" }, reasoning: { effort: "high" }, ...sampling })).toEqual({ thinking: undefined, tool_choice: { type: "any" }, temperature: 0.3, top_p: undefined, top_k: 20 });
    expect(written({ toolChoice: { type: "tool", name: "f", param: "tool_choice" }, reasoning: { budget: -1 } }).thinking).toBeUndefined();
    expect(written({ toolChoice: { type: "auto" }, reasoning: { effort: "high" }, ...sampling })).toEqual({ thinking: { type: "enabled", budget_tokens: 16384 }, tool_choice: { type: "auto" }, temperature: undefined, top_p: undefined, top_k: undefined });
    expect(written({ reasoning: { budget: -1 }, temperature: 1.4, topP: 0.97 })).toEqual({ thinking: { type: "adaptive" }, tool_choice: undefined, temperature: 1, top_p: undefined, top_k: undefined });
    expect(written({ reasoning: { budget: 0 }, toolChoice: { type: "required" }, ...sampling })).toEqual({ thinking: { type: "disabled" }, tool_choice: { type: "any" }, temperature: 0.3, top_p: undefined, top_k: 20 });
  });

  test("tool choices, and one call at a time said on an explicit choice", () => {
    const tools = [{ name: "f", parameters: { type: "object" }, param: "tools[0]" }];
    const choice = (extra: Partial<IrRequest>) => write(ir({ tools, ...extra })).tool_choice;
    expect(choice({})).toBeUndefined();
    expect(choice({ toolChoice: { type: "auto" } })).toEqual({ type: "auto" });
    expect(choice({ toolChoice: { type: "required" } })).toEqual({ type: "any" });
    expect(choice({ toolChoice: { type: "tool", name: "f", param: "tool_choice" }, parallelToolCalls: false })).toEqual({ type: "tool", name: "f", disable_parallel_tool_use: true });
    expect(choice({ parallelToolCalls: false })).toEqual({ type: "auto", disable_parallel_tool_use: true });
    expect(choice({ toolChoice: { type: "none" }, parallelToolCalls: false })).toEqual({ type: "none" });
    expect(choice({ parallelToolCalls: true })).toBeUndefined();
    // Without tools a choice means nothing.
    expect(write(ir({ toolChoice: { type: "required" }, parallelToolCalls: false })).tool_choice).toBeUndefined();
  });

  test("output formats: a JSON schema is output_config.format (with the effort when both), JSON mode is dropped", () => {
    expect(write(ir({ output: { type: "json_schema", name: "plan", description: "d", schema: answerSchema, strict: true, param: "response_format" } })).output_config).toEqual({ format: { type: "json_schema", schema: answerSchema } });
    expect(write(ir({ output: { type: "json", param: "response_format" } })).output_config).toBeUndefined();
    expect(write(ir({ output: { type: "text" } })).output_config).toBeUndefined();
    expect(write(ir({ maxTokens: 5000, reasoning: { budget: 2000, effort: "low" }, output: { type: "json_schema", schema: answerSchema, param: "output_config.format" } })).output_config).toEqual({ effort: "low", format: { type: "json_schema", schema: answerSchema } });
  });

  test("media: images and documents by URL and inline, text documents as text sources", () => {
    const parts: IrRequest["messages"][0]["parts"] = [
      { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "AAAA" }, param: "p0" },
      { type: "document", source: { kind: "url", url: "https://example.com/a.pdf" }, param: "p1" },
      { type: "document", source: { kind: "text", text: "plain" }, title: "t", param: "p2" },
      { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBE" }, param: "p3" },
    ];
    expect(write(ir({ messages: [{ role: "user", parts, param: "messages[0]" }] })).messages).toEqual([{
      role: "user",
      content: [
        { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "AAAA" } },
        { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } },
        { type: "document", title: "t", source: { type: "text", media_type: "text/plain", data: "plain" } },
        { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBE" } },
      ],
    }]);
  });

  test("a tool result sent in an assistant message still goes to a user turn; an assistant message left empty adds no turn", () => {
    const messages: IrRequest["messages"] = [
      { role: "user", parts: [{ type: "text", text: "q" }], param: "messages[0]" },
      { role: "assistant", parts: [{ type: "tool_call", id: "c", name: "f", arguments: "{}" }, { type: "tool_result", callId: "c", content: [] }], param: "messages[1]" },
      { role: "assistant", parts: [{ type: "thinking", text: "unsigned" }, { type: "text", text: "" }], param: "messages[2]" },
      { role: "user", parts: [{ type: "text", text: "more" }], param: "messages[3]" },
    ];
    expect(write(ir({ messages })).messages).toEqual([
      { role: "user", content: [{ type: "text", text: "q" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "c", name: "f", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "c" }, { type: "text", text: "more" }] },
    ]);
  });

  describe("refused: what changes the answer and Anthropic cannot carry, naming the client's parameter", () => {
    const cases: Array<[string, Partial<IrRequest>]> = [
      ["n", { candidates: { count: 2, param: "n" } }],
      ["candidateCount", { candidates: { count: 3, param: "candidateCount" } }],
      ["logprobs", { logprobs: { top: 0, param: "logprobs" } }],
      ["top_logprobs", { logprobs: { top: 5, param: "top_logprobs" } }],
      ["contents[1].parts[0]", { messages: [{ role: "user", parts: [{ type: "text", text: "draw" }], param: "contents[0]" }, { role: "assistant", parts: [{ type: "image", source: { kind: "base64", mediaType: "image/png", data: PNG }, param: "contents[1].parts[0]" }], param: "contents[1]" }] }],
      ["messages[0].content[0]", { messages: [{ role: "user", parts: [{ type: "image", source: { kind: "text", text: "x" }, param: "messages[0].content[0]" }], param: "messages[0]" }] }],
    ];
    for (const [param, extra] of cases) {
      test(param, () => {
        const error = thrown(() => write(ir(extra)));
        expect({ status: error.status, param: error.param, code: error.code }).toEqual({ status: 400, param, code: "unsupported_parameter" });
        expect(error.message).toContain("Anthropic Messages");
      });
    }

    test("past tool calls whose arguments are not a JSON object: a 400 naming the client's message", () => {
      for (const args of ["{not json", "[1,2]", '"text"']) {
        const messages: IrRequest["messages"] = [{ role: "assistant", parts: [{ type: "tool_call", id: "c", name: "f", arguments: args }], param: "messages[1]" }];
        expect(thrown(() => write(ir({ messages })))).toMatchObject({ status: 400, param: "messages[1]", code: "invalid_request" });
      }
    });
  });
});

// ——— (c) round trips ———

describe("round trips: an Anthropic request, answer and stream through the model come back as they were", () => {
  test("requests: write(read(x)) is x, once the hints with no counterpart are gone", () => {
    const context = { maxTokens: 1 };
    expect(codec.writeRequest(read(CLIENT_REQUEST), context)).toEqual(CLIENT_REQUEST_NORMALISED);
    expect(codec.writeRequest(read(CLIENT_REQUEST_NORMALISED), context)).toEqual(CLIENT_REQUEST_NORMALISED);
  });

  test("a thinking turn: enabled thinking with its display, signed and redacted thinking sent back, the sampling thinking allows", () => {
    const x: JsonObject = {
      model: "claude-opus-4-5", max_tokens: 16000, system: [{ type: "text", text: "Think first." }],
      messages: [
        { role: "user", content: [{ type: "text", text: "Is 391 prime?" }] },
        { role: "assistant", content: [{ type: "thinking", thinking: "17 × 23 = 391.", signature: "EqQBsig" }, { type: "redacted_thinking", data: "EmwKr" }, { type: "tool_use", id: "toolu_1", name: "factor", input: { n: 391 } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "17 × 23" }] },
      ],
      top_p: 0.95,
      tools: [{ name: "factor", input_schema: { type: "object", properties: { n: { type: "integer" } } } }],
      thinking: { type: "enabled", budget_tokens: 8000, display: "summarized" },
      output_config: { effort: "high" },
    };
    expect(codec.writeRequest(read(x, { model: "claude-opus-4-5", stream: false }), { maxTokens: 1 })).toEqual(x);
  });

  test("documented normalisations: a string system and string contents come back as text blocks, one text block of a result as a string", () => {
    const x = body({ system: "Be kind.", messages: [{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }, { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: [{ type: "text", text: "r" }] }] }] });
    expect(codec.writeRequest(read(x, { stream: false }), { maxTokens: 1 })).toEqual({
      model: "claude-sonnet-4-5", max_tokens: 100, system: [{ type: "text", text: "Be kind." }],
      messages: [
        { role: "user", content: [{ type: "text", text: "hi" }] },
        { role: "assistant", content: [{ type: "text", text: "hello" }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: "r" }] },
      ],
    });
  });

  test("answers: writeAnswer(readAnswer(x)) is x", () => {
    expect(codec.writeAnswer(codec.readAnswer(structuredClone(ANSWER)), {})).toEqual(ANSWER);
    const stopped = { ...ANSWER, content: [{ type: "text", text: "1, 2, 3" }], stop_reason: "stop_sequence", stop_sequence: "4" };
    expect(codec.writeAnswer(codec.readAnswer(stopped), {})).toEqual(stopped);
  });

  test("streams: the events written from the events read are the stream itself", () => {
    expect(decode(writeStream(readStream(STREAM)))).toEqual(STREAM);
  });

  test("a stream as the wire carries it comes back without the ping and empty deltas, its usage restated in full", () => {
    expect(decode(writeStream(readStream(STREAM_AS_SENT)))).toEqual(STREAM);
  });
});

// ——— (d) answers and streams read into the model ———

describe("reading an Anthropic upstream's answer", () => {
  test("a realistic answer: thinking with its signature, redacted thinking, text, parallel tool uses, usage with cache and thinking", () => {
    expect(codec.readAnswer(structuredClone(ANSWER))).toEqual(ANSWER_IR);
  });

  test("usage is what the router's own Anthropic reader meters", () => {
    expect(codec.readAnswer(ANSWER).usage).toEqual(formatOf("anthropic").usageFromJson(ANSWER)!);
  });

  test("stop reasons", () => {
    const finish = (stop_reason: unknown, stop_sequence: unknown = null) => {
      const answer = codec.readAnswer({ ...ANSWER, stop_reason, stop_sequence });
      return [answer.finish, answer.stopSequence];
    };
    expect(finish("end_turn")).toEqual(["stop", undefined]);
    expect(finish("stop_sequence", "###")).toEqual(["stop_sequence", "###"]);
    expect(finish("max_tokens")).toEqual(["length", undefined]);
    expect(finish("model_context_window_exceeded")).toEqual(["length", undefined]);
    expect(finish("tool_use")).toEqual(["tool_calls", undefined]);
    expect(finish("refusal")).toEqual(["content_filter", undefined]);
    expect(finish("pause_turn")).toEqual(["pause", undefined]);
    expect(finish(null)).toEqual(["stop", undefined]);
  });

  test("odd answers never throw: missing fields give an empty answer, unknown blocks are skipped", () => {
    expect(codec.readAnswer(undefined)).toEqual({ id: "", model: "", parts: [], finish: "stop" });
    expect(codec.readAnswer("<html>")).toEqual({ id: "", model: "", parts: [], finish: "stop" });
    const odd = { id: "m", model: "x", content: [null, 5, { type: "server_tool_use", id: "s", name: "web_search", input: {} }, { type: "text" }, { type: "tool_use", id: "t", name: "f", input: "oops" }, { type: "text", text: "ok", citations: [] }], usage: "none" };
    expect(codec.readAnswer(odd)).toEqual({ id: "m", model: "x", parts: [{ type: "tool_call", id: "t", name: "f", arguments: "{}" }, { type: "text", text: "ok" }], finish: "stop" });
  });
});

describe("reading an Anthropic upstream's stream", () => {
  test("a realistic stream, event by event (ping, empty deltas and stops make nothing)", () => {
    expect(readStream(STREAM_AS_SENT)).toEqual(STREAM_IR);
  });

  test("usage: message_delta's counts replace message_start's field by field; the last usage is what the router's tap meters", () => {
    const events = readStream(STREAM_AS_SENT);
    const tap = formatOf("anthropic").streamUsageTap();
    const decoder = createSseDecoder((e) => tap.onEvent(e));
    decoder.push(new TextEncoder().encode(sseText(STREAM_AS_SENT)));
    decoder.end();
    const usages = events.flatMap((e) => (e.type === "usage" ? [e.usage] : e.type === "start" && e.usage ? [e.usage] : []));
    expect(usages.at(-1)).toEqual(tap.result()!);
  });

  test("argument deltas go to their own call by block index, even interleaved; each call is numbered in start order", () => {
    const events = readStream([
      messageStart("msg", "m", { input_tokens: 5, output_tokens: 1 }),
      blockStart(0, { type: "tool_use", id: "t0", name: "f", input: {} }),
      blockStart(1, { type: "tool_use", id: "t1", name: "g", input: {} }),
      blockDelta(1, { type: "input_json_delta", partial_json: '{"b"' }),
      blockDelta(0, { type: "input_json_delta", partial_json: '{"a"' }),
      blockDelta(1, { type: "input_json_delta", partial_json: ":2}" }),
      blockDelta(0, { type: "input_json_delta", partial_json: ":1}" }),
      blockDelta(7, { type: "input_json_delta", partial_json: "lost" }),
      blockStop(0),
      blockStop(1),
      messageDelta("tool_use", { output_tokens: 9 }),
      MESSAGE_STOP,
    ]);
    expect(events).toEqual([
      { type: "start", id: "msg", model: "m", usage: { prompt: 5, completion: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 } },
      { type: "tool_call_start", call: 0, id: "t0", name: "f" },
      { type: "tool_call_start", call: 1, id: "t1", name: "g" },
      { type: "tool_call_arguments", call: 1, delta: '{"b"' },
      { type: "tool_call_arguments", call: 0, delta: '{"a"' },
      { type: "tool_call_arguments", call: 1, delta: ":2}" },
      { type: "tool_call_arguments", call: 0, delta: ":1}" },
      { type: "usage", usage: { prompt: 5, completion: 9, cacheRead: 0, cacheWrite: 0, reasoning: 0 } },
      { type: "finish", finish: "tool_calls" },
    ]);
  });

  test("a stop sequence, and message_delta's null counts keep the earlier ones", () => {
    const events = readStream([
      messageStart("msg", "m", { input_tokens: 10, cache_read_input_tokens: 4, output_tokens: 1 }),
      blockStart(0, { type: "text", text: "1, 2" }),
      blockDelta(0, { type: "text_delta", text: ", 3" }),
      blockDelta(0, { type: "citations_delta", citation: { type: "char_location", cited_text: "x" } }),
      blockStop(0),
      messageDelta("stop_sequence", { input_tokens: null, cache_read_input_tokens: null, output_tokens: 6 }, "4"),
      MESSAGE_STOP,
    ]);
    expect(events).toEqual([
      { type: "start", id: "msg", model: "m", usage: { prompt: 14, completion: 1, cacheRead: 4, cacheWrite: 0, reasoning: 0 } },
      { type: "text", text: "1, 2" },
      { type: "text", text: ", 3" },
      { type: "usage", usage: { prompt: 14, completion: 6, cacheRead: 4, cacheWrite: 0, reasoning: 0 } },
      { type: "finish", finish: "stop_sequence", stopSequence: "4" },
    ]);
  });

  test("a thinking block whose text is omitted still opens a thinking part for its signature", () => {
    const events = readStream([
      messageStart("msg", "m", { input_tokens: 1, output_tokens: 1 }),
      blockStart(0, { type: "thinking", thinking: "", signature: "" }),
      blockDelta(0, { type: "signature_delta", signature: "sig-only" }),
      blockStop(0),
      messageDelta("end_turn", { output_tokens: 2 }),
      MESSAGE_STOP,
    ]);
    expect(events.slice(1, 3)).toEqual([{ type: "thinking", text: "" }, { type: "thinking_signature", signature: { wire: W, value: "sig-only" } }]);
  });

  test("an error event is the model's error, and nothing after it is read", () => {
    const events = readStream([
      messageStart("msg", "m", { input_tokens: 1, output_tokens: 1 }),
      blockStart(0, { type: "text", text: "" }),
      blockDelta(0, { type: "text_delta", text: "Hel" }),
      { event: "error", data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } },
      blockDelta(0, { type: "text_delta", text: "lo" }),
    ]);
    expect(events.slice(0, 2)).toEqual([{ type: "start", id: "msg", model: "m", usage: { prompt: 1, completion: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 } }, { type: "text", text: "Hel" }]);
    expect(events).toHaveLength(3);
    const error = (events[2] as { type: "error"; error: HttpError }).error;
    expect({ type: events[2]!.type, kind: error.kind, status: error.status, message: error.message }).toEqual({ type: "error", kind: "unavailable", status: 503, message: "Overloaded" });
  });

  test("a stream cut without its end still finishes (a plain stop) on end(); odd events are skipped", () => {
    const events = readStream(`event: message_start\ndata: ${JSON.stringify(STREAM[0]!.data)}\n\nevent: content_block_delta\ndata: {not json\n\ndata: [DONE]\n\n${sseText([blockStart(0, { type: "text", text: "" }), blockDelta(0, { type: "text_delta", text: "Hi" })])}`);
    expect(events.slice(1)).toEqual([{ type: "text", text: "Hi" }, { type: "finish", finish: "stop" }]);
    expect(codec.streamReader().end()).toEqual([{ type: "finish", finish: "stop" }]);
  });
});

// ——— (e) answers and streams written for an Anthropic client ———

describe("writing an answer for an Anthropic client", () => {
  test("parts of other wires: foreign signatures become empty, foreign redacted reasoning and media are left out, bad arguments an empty input", () => {
    const answer = codec.writeAnswer({
      id: "chatcmpl-1", model: "gpt-5",
      parts: [
        { type: "thinking", text: "reasoning text", signature: { wire: "openai-responses", value: "enc" } },
        { type: "redacted_thinking", signature: { wire: "openai-responses", value: "enc2" } },
        { type: "text", text: "Here." },
        { type: "image", source: { kind: "base64", mediaType: "image/png", data: PNG }, param: "" },
        { type: "tool_call", id: "call_1", name: "f", arguments: "{broken" },
      ],
      finish: "tool_calls",
      usage: { prompt: 2000, completion: 14, cacheRead: 1800, cacheWrite: 150, reasoning: 0 },
    }, {});
    expect(answer).toEqual({
      id: "chatcmpl-1", type: "message", role: "assistant", model: "gpt-5",
      content: [{ type: "thinking", thinking: "reasoning text", signature: "" }, { type: "text", text: "Here." }, { type: "tool_use", id: "call_1", name: "f", input: {} }],
      stop_reason: "tool_use", stop_sequence: null,
      usage: { input_tokens: 50, cache_creation_input_tokens: 150, cache_read_input_tokens: 1800, output_tokens: 14 },
    });
    // The client's own usage reader meters what the upstream's reader read.
    expect(formatOf("anthropic").usageFromJson(answer)).toEqual({ prompt: 2000, completion: 14, cacheRead: 1800, cacheWrite: 150, reasoning: 0 });
  });

  test("stop reasons; an answer without usage reports zeros", () => {
    const stop = (finish: IrEvent & { type: "finish" }) => {
      const answer = codec.writeAnswer({ id: "i", model: "m", parts: [], finish: finish.finish, stopSequence: finish.stopSequence }, {});
      return [answer.stop_reason, answer.stop_sequence];
    };
    expect(stop({ type: "finish", finish: "stop" })).toEqual(["end_turn", null]);
    expect(stop({ type: "finish", finish: "stop_sequence", stopSequence: "END" })).toEqual(["stop_sequence", "END"]);
    expect(stop({ type: "finish", finish: "stop_sequence" })).toEqual(["stop_sequence", null]);
    expect(stop({ type: "finish", finish: "length" })).toEqual(["max_tokens", null]);
    expect(stop({ type: "finish", finish: "tool_calls" })).toEqual(["tool_use", null]);
    expect(stop({ type: "finish", finish: "content_filter" })).toEqual(["refusal", null]);
    expect(stop({ type: "finish", finish: "pause" })).toEqual(["pause_turn", null]);
    expect(codec.writeAnswer({ id: "i", model: "m", parts: [], finish: "stop" }, {}).usage).toEqual({ input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 });
  });
});

/** What a Chat upstream's stream reads into: usage only at the end, two calls whose fragments interleave, then text. */
const CHAT_LIKE: IrEvent[] = [
  { type: "start", id: "chatcmpl-9", model: "gpt-5" },
  { type: "thinking", text: "Two lookups." },
  { type: "thinking_signature", signature: { wire: "openai-responses", value: "not ours" } },
  { type: "tool_call_start", call: 0, id: "call_a", name: "get_weather" },
  { type: "tool_call_arguments", call: 0, delta: '{"ci' },
  { type: "tool_call_start", call: 1, id: "call_b", name: "get_time" },
  { type: "tool_call_arguments", call: 1, delta: '{"tz":"Asia/' },
  { type: "tool_call_arguments", call: 0, delta: 'ty":"Paris"}' },
  { type: "tool_call_arguments", call: 1, delta: 'Tokyo"}' },
  { type: "tool_call_arguments", call: 5, delta: "no such call" },
  { type: "finish", finish: "tool_calls" },
  { type: "usage", usage: { prompt: 120, completion: 40, cacheRead: 20, cacheWrite: 0, reasoning: 10 } },
];

const CHAT_LIKE_SSE: Ev[] = [
  messageStart("chatcmpl-9", "gpt-5", { input_tokens: 0, output_tokens: 0 }),
  blockStart(0, { type: "thinking", thinking: "", signature: "" }),
  blockDelta(0, { type: "thinking_delta", thinking: "Two lookups." }),
  blockStop(0),
  blockStart(1, { type: "tool_use", id: "call_a", name: "get_weather", input: {} }),
  blockDelta(1, { type: "input_json_delta", partial_json: '{"ci' }),
  blockStop(1),
  blockStart(2, { type: "tool_use", id: "call_b", name: "get_time", input: {} }),
  blockDelta(2, { type: "input_json_delta", partial_json: '{"tz":"Asia/' }),
  // A late fragment of the first call goes to the first call's own block.
  blockDelta(1, { type: "input_json_delta", partial_json: 'ty":"Paris"}' }),
  blockDelta(2, { type: "input_json_delta", partial_json: 'Tokyo"}' }),
  blockStop(2),
  messageDelta("tool_use", { input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 20, output_tokens: 40, output_tokens_details: { thinking_tokens: 10 } }),
  MESSAGE_STOP,
];

describe("writing a stream for an Anthropic client", () => {
  test("events of another wire, event by event: one block at a time, late fragments on their own call's block, closing events at the end", () => {
    expect(decode(writeStream(CHAT_LIKE))).toEqual(CHAT_LIKE_SSE);
  });

  test("the model's events are written as they come: message_delta and message_stop wait for the end (usage may follow the finish)", () => {
    const writer = codec.streamWriter({});
    expect(decode(writer.write(CHAT_LIKE.slice(0, 2)))).toEqual(CHAT_LIKE_SSE.slice(0, 3));
    expect(writer.write([{ type: "usage", usage: { prompt: 1, completion: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 } }])).toBe("");
    expect(decode(writer.write([{ type: "finish", finish: "stop" }]))).toEqual([blockStop(0)]);
    expect(decode(writer.end()).map((e) => e.event)).toEqual(["message_delta", "message_stop"]);
    expect(writer.end()).toBe("");
    expect(writer.fail(new HttpError("upstream", "late"))).toBe("");
  });

  test("a stream with no events at all is still a whole (empty) message", () => {
    expect(decode(writeStream([]))).toEqual([
      messageStart("", "", { input_tokens: 0, output_tokens: 0 }),
      messageDelta("end_turn", { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 }),
      MESSAGE_STOP,
    ]);
  });

  test("an error in the stream is Anthropic's terminal error event, and nothing follows it", () => {
    const writer = codec.streamWriter({});
    const text = writer.write([{ type: "start", id: "i", model: "m" }, { type: "text", text: "Hi" }, { type: "error", error: new HttpError("unavailable", "Overloaded") }, { type: "text", text: "more" }]);
    expect(decode(text).slice(-1)).toEqual([{ event: "error", data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } }]);
    expect(decode(text)).toHaveLength(4);
    expect(writer.end()).toBe("");
    expect(writer.fail(new HttpError("upstream", "again"))).toBe("");
  });

  test("fail() midway writes the error event once", () => {
    const writer = codec.streamWriter({});
    writer.write(CHAT_LIKE.slice(0, 3));
    expect(decode(writer.fail(new HttpError("timeout", "Upstream timed out")))).toEqual([{ event: "error", data: { type: "error", error: { type: "timeout_error", message: "Upstream timed out" } } }]);
    expect(writer.end()).toBe("");
  });

  test("redacted thinking of another wire is left out; Anthropic's is a block of its own", () => {
    const text = writeStream([
      { type: "start", id: "i", model: "m" },
      { type: "redacted_thinking", signature: { wire: "openai-responses", value: "enc" } },
      { type: "redacted_thinking", signature: { wire: W, value: "ours" } },
      { type: "text", text: "ok" },
      { type: "finish", finish: "stop_sequence", stopSequence: "##" },
    ]);
    expect(decode(text).slice(1)).toEqual([
      blockStart(0, { type: "redacted_thinking", data: "ours" }),
      blockStop(0),
      blockStart(1, { type: "text", text: "" }),
      blockDelta(1, { type: "text_delta", text: "ok" }),
      blockStop(1),
      messageDelta("stop_sequence", { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 }, "##"),
      MESSAGE_STOP,
    ]);
  });

  test("metering parity: the router's Anthropic tap finds in the written stream the usage the model carried", () => {
    const tap = formatOf("anthropic").streamUsageTap();
    const decoder = createSseDecoder((e) => tap.onEvent(e));
    decoder.push(new TextEncoder().encode(writeStream(CHAT_LIKE)));
    decoder.end();
    expect(tap.result()).toEqual({ prompt: 120, completion: 40, cacheRead: 20, cacheWrite: 0, reasoning: 10 });
  });
});

describe("the official Anthropic SDK reads what the codec writes (a local server answering with it)", () => {
  let server: ReturnType<typeof Bun.serve>;
  /** What the server answers next: SSE text, or a JSON body with a status. */
  let next: { sse: string } | { status: number; body: unknown } = { sse: "" };

  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      fetch: () => ("sse" in next
        ? new Response(next.sse, { headers: { "content-type": "text/event-stream" } })
        : new Response(JSON.stringify(next.body), { status: next.status, headers: { "content-type": "application/json" } })),
    });
  });
  afterAll(() => server.stop(true));

  const clients = [
    { name: "@anthropic-ai/sdk 1.x", make: () => new Anthropic({ apiKey: "k", baseURL: `http://localhost:${server.port}`, maxRetries: 0 }) },
    { name: "@anthropic-ai/sdk 0.x", make: () => new AnthropicV0({ apiKey: "k", baseURL: `http://localhost:${server.port}`, maxRetries: 0 }) as unknown as Anthropic },
  ];
  const params = { model: "m", max_tokens: 100, messages: [{ role: "user" as const, content: "x" }] };
  const plain = (message: unknown) => {
    const m = JSON.parse(JSON.stringify(message)) as JsonObject;
    delete m.parsed_output;
    return m;
  };

  for (const client of clients) {
    test(`${client.name}: a stream read back from the model: finalMessage() is the answer itself`, async () => {
      next = { sse: writeStream(readStream(STREAM_AS_SENT)) };
      expect(plain(await client.make().messages.stream(params).finalMessage())).toEqual(ANSWER);
    });

    test(`${client.name}: interleaved parallel calls: the SDK assembles each call's input apart`, async () => {
      next = { sse: writeStream(CHAT_LIKE) };
      const final = await client.make().messages.stream(params).finalMessage();
      expect(plain(final)).toEqual({
        id: "chatcmpl-9", type: "message", role: "assistant", model: "gpt-5",
        content: [
          { type: "thinking", thinking: "Two lookups.", signature: "" },
          { type: "tool_use", id: "call_a", name: "get_weather", input: { city: "Paris" } },
          { type: "tool_use", id: "call_b", name: "get_time", input: { tz: "Asia/Tokyo" } },
        ],
        stop_reason: "tool_use", stop_sequence: null,
        usage: { input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 20, output_tokens: 40, output_tokens_details: { thinking_tokens: 10 } },
      });
    });

    test(`${client.name}: a JSON answer: messages.create() returns it as written`, async () => {
      next = { status: 200, body: codec.writeAnswer(codec.readAnswer(ANSWER), {}) };
      expect(plain(await client.make().messages.create(params))).toEqual(ANSWER);
    });

    test(`${client.name}: an error midway raises the SDK's error with the message`, async () => {
      const writer = codec.streamWriter({});
      next = { sse: writer.write(CHAT_LIKE.slice(0, 5)) + writer.fail(new HttpError("unavailable", "upstream overloaded")) + writer.end() };
      await expect(client.make().messages.stream(params).finalMessage()).rejects.toThrow("upstream overloaded");
    });

    test(`${client.name}: an error answer: the SDK raises the class its status means, with the message`, async () => {
      const written = codec.writeError(codec.readError(429, { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } }));
      next = { status: written.status, body: written.body };
      const error = await client.make().messages.create(params).then(() => undefined, (e: unknown) => e);
      expect((error as { constructor: { name: string } }).constructor.name).toBe("RateLimitError");
      expect({ status: (error as InstanceType<typeof Anthropic.RateLimitError>).status, message: (error as Error).message }).toEqual({ status: 429, message: expect.stringContaining("Rate limit reached") });
    });
  }
});

// ——— (f) errors ———

describe("errors both ways", () => {
  test("Anthropic's error answers read with their status, kind and message", () => {
    const readError = (status: number, body: unknown) => {
      const e = codec.readError(status, body);
      return { kind: e.kind, status: e.status, message: e.message };
    };
    expect(readError(529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } })).toEqual({ kind: "unavailable", status: 529, message: "Overloaded" });
    expect(readError(400, { type: "error", error: { type: "invalid_request_error", message: "max_tokens: too large" } })).toEqual({ kind: "invalid_request", status: 400, message: "max_tokens: too large" });
    expect(readError(401, { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } })).toEqual({ kind: "authentication", status: 401, message: "invalid x-api-key" });
    expect(readError(500, { type: "error", error: { type: "api_error", message: "Internal" } })).toEqual({ kind: "upstream", status: 500, message: "Internal" });
    expect(readError(502, "<html>Bad gateway</html>")).toEqual({ kind: "upstream", status: 502, message: "The upstream answered 502" });
  });

  test("errors written in Anthropic's envelope with the error's own status", () => {
    expect(codec.writeError(codec.readError(503, { error: { message: "Service unavailable", type: "server_error" } }))).toEqual({ status: 503, body: { type: "error", error: { type: "overloaded_error", message: "Service unavailable" } } });
    expect(codec.writeError(codec.readError(529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }))).toEqual({ status: 529, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } });
    expect(codec.writeError(codec.readError(429, { error: { message: "Slow down", type: "requests" } }))).toEqual({ status: 429, body: { type: "error", error: { type: "rate_limit_error", message: "Slow down" } } });
    expect(codec.writeError(codec.readError(404, { error: { code: 404, message: "model not found", status: "NOT_FOUND" } }))).toEqual({ status: 404, body: { type: "error", error: { type: "not_found_error", message: "model not found" } } });
    expect(codec.writeError(new HttpError("invalid_request", "bad", { param: "messages" }))).toEqual({ status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "bad" } } });
  });
});

describe("as both halves of a composed translator (the path every pair takes)", () => {
  const translator = compose(codec, codec);

  test("request, answer and error pass through unchanged", () => {
    expect(translator.upstreamTarget("m", true)).toEqual({ path: "/v1/messages", search: "" });
    expect(translator.request(structuredClone(CLIENT_REQUEST_NORMALISED), { maxTokens: 1 })).toEqual(CLIENT_REQUEST_NORMALISED);
    expect(translator.response(structuredClone(ANSWER))).toEqual(ANSWER);
    expect(translator.error(529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } })).toEqual({ status: 529, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } });
  });

  test("a stream fed event by event, then end(): the same events, and the same usage metered on both sides", () => {
    const stream = translator.stream();
    const parts: string[] = [];
    const text = new TextDecoder();
    const decoder = createSseDecoder((e) => parts.push(text.decode(stream.push(e))));
    decoder.push(new TextEncoder().encode(sseText(STREAM_AS_SENT)));
    decoder.end();
    parts.push(text.decode(stream.end()));
    expect(decode(parts.join(""))).toEqual(STREAM);
    const usage = (sse: string) => {
      const tap = formatOf("anthropic").streamUsageTap();
      const d = createSseDecoder((e) => tap.onEvent(e));
      d.push(new TextEncoder().encode(sse));
      d.end();
      return tap.result();
    };
    expect(usage(parts.join(""))).toEqual(usage(sseText(STREAM_AS_SENT))!);
  });
});

describe("purity", () => {
  test("reading and writing leave their inputs as they were", () => {
    const request = structuredClone(CLIENT_REQUEST);
    const model = structuredClone(MODEL_REQUEST);
    const answer = structuredClone(ANSWER);
    codec.readRequest(request, readContext);
    codec.writeRequest(model, requestContext);
    codec.readAnswer(answer);
    expect({ request, model, answer }).toEqual({ request: CLIENT_REQUEST, model: MODEL_REQUEST, answer: ANSWER });
  });
});

void PING;

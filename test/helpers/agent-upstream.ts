/**
 * A mock upstream that plays one agent turn in any of the four wire formats: asked with
 * no tool result in the conversation, it streams one tool call (its arguments in two
 * fragments); asked again with the tool's result, it streams a text answer quoting the
 * result. So a real agent CLI pointed at the router runs its tool and finishes, and the
 * test reads the CLI's final answer and what the upstream received.
 *
 * Written by hand from each provider's streaming documentation, independently of the
 * router's translators (which these tests check).
 */
import type { KeyFormat } from "../../src/wire/constants.ts";
import { json, sse, startMockUpstream, type MockUpstream, type RecordedRequest } from "./mock-upstream.ts";

export interface AgentScript {
  /** The tool the upstream asks for, and its arguments. */
  tool: string;
  args: Record<string, unknown>;
  /** The final answer, given the tool result's text. */
  answer(toolResult: string): string;
}

export interface AgentUpstream {
  readonly mock: MockUpstream;
  readonly url: string;
  /** The model calls received (token counts and other calls excluded; side calls without a stream included). */
  calls(): RecordedRequest[];
  /** The text of the tool result the last call carried, if any. */
  lastToolResult(): string | undefined;
  stop(): Promise<void>;
}

const USAGE = { input: 120, output: 12, cached: 40 };

/** The tool result text in a request of the given format, when its last turn carries one. */
export function toolResultOf(format: KeyFormat, body: any): string | undefined {
  switch (format) {
    case "openai": {
      const last = body.messages?.at(-1);
      if (last?.role !== "tool") return undefined;
      return typeof last.content === "string" ? last.content : (last.content ?? []).map((p: any) => p.text ?? "").join("");
    }
    case "responses": {
      const outputs = (body.input ?? []).filter((i: any) => i.type === "function_call_output");
      const last = outputs.at(-1);
      if (!last || body.input.at(-1) !== last) return undefined;
      return typeof last.output === "string" ? last.output : (last.output ?? []).map((p: any) => p.text ?? "").join("");
    }
    case "anthropic": {
      const last = body.messages?.at(-1);
      if (last?.role !== "user" || !Array.isArray(last.content)) return undefined;
      const result = last.content.find((b: any) => b.type === "tool_result");
      if (!result) return undefined;
      return typeof result.content === "string" ? result.content : (result.content ?? []).map((b: any) => b.text ?? "").join("");
    }
    case "gemini": {
      const last = body.contents?.at(-1);
      const part = last?.parts?.find((p: any) => p.functionResponse);
      return part ? JSON.stringify(part.functionResponse.response) : undefined;
    }
  }
}

function openaiStream(model: string, script: AgentScript, result: string | undefined): Response {
  const chunk = (delta: unknown, finish: string | null = null) => ({ id: "chatcmpl-agent", object: "chat.completion.chunk", created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }] });
  const usage = { id: "chatcmpl-agent", object: "chat.completion.chunk", created: 1, model, choices: [], usage: { prompt_tokens: USAGE.input, completion_tokens: USAGE.output, total_tokens: USAGE.input + USAGE.output, prompt_tokens_details: { cached_tokens: USAGE.cached } } };
  if (result !== undefined) {
    const text = script.answer(result);
    return sse([chunk({ role: "assistant", content: "" }), chunk({ content: text.slice(0, 5) }), chunk({ content: text.slice(5) }), chunk({}, "stop"), usage, "data: [DONE]\n\n"]);
  }
  const args = JSON.stringify(script.args);
  return sse([
    chunk({ role: "assistant", content: null }),
    chunk({ tool_calls: [{ index: 0, id: "call_agent_1", type: "function", function: { name: script.tool, arguments: "" } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, 6) } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(6) } }] }),
    chunk({}, "tool_calls"),
    usage,
    "data: [DONE]\n\n",
  ]);
}

function anthropicStream(model: string, script: AgentScript, result: string | undefined): Response {
  const ev = (data: Record<string, unknown>): [string, unknown] => [String(data.type), data];
  const start = ev({ type: "message_start", message: { id: "msg_agent", type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: USAGE.input - USAGE.cached, cache_read_input_tokens: USAGE.cached, cache_creation_input_tokens: 0, output_tokens: 1 } } });
  const end = (stop: string) => [ev({ type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: USAGE.output } }), ev({ type: "message_stop" })];
  if (result !== undefined) {
    const text = script.answer(result);
    return sse([
      start,
      ev({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
      ev({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: text.slice(0, 5) } }),
      ev({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: text.slice(5) } }),
      ev({ type: "content_block_stop", index: 0 }),
      ...end("end_turn"),
    ]);
  }
  const args = JSON.stringify(script.args);
  return sse([
    start,
    ev({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_agent_1", name: script.tool, input: {} } }),
    ev({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: args.slice(0, 6) } }),
    ev({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: args.slice(6) } }),
    ev({ type: "content_block_stop", index: 0 }),
    ...end("tool_use"),
  ]);
}

function responsesStream(model: string, script: AgentScript, result: string | undefined): Response {
  let seq = 0;
  const ev = (data: Record<string, unknown>): [string, unknown] => [String(data.type), { ...data, sequence_number: seq++ }];
  const usage = { input_tokens: USAGE.input, input_tokens_details: { cached_tokens: USAGE.cached }, output_tokens: USAGE.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: USAGE.input + USAGE.output };
  const response = (status: string, output: unknown[]) => ({ id: "resp_agent", object: "response", created_at: 1, status, model, output, usage: status === "completed" ? usage : null, error: null, incomplete_details: null });
  let item: Record<string, unknown>;
  const events: Array<[string, unknown]> = [ev({ type: "response.created", response: response("in_progress", []) }), ev({ type: "response.in_progress", response: response("in_progress", []) })];
  if (result !== undefined) {
    const text = script.answer(result);
    item = { type: "message", id: "msg_agent", role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [] }] };
    events.push(
      ev({ type: "response.output_item.added", output_index: 0, item: { ...item, status: "in_progress", content: [] } }),
      ev({ type: "response.content_part.added", output_index: 0, item_id: "msg_agent", content_index: 0, part: { type: "output_text", text: "", annotations: [] } }),
      ev({ type: "response.output_text.delta", output_index: 0, item_id: "msg_agent", content_index: 0, delta: text.slice(0, 5) }),
      ev({ type: "response.output_text.delta", output_index: 0, item_id: "msg_agent", content_index: 0, delta: text.slice(5) }),
      ev({ type: "response.output_text.done", output_index: 0, item_id: "msg_agent", content_index: 0, text }),
      ev({ type: "response.content_part.done", output_index: 0, item_id: "msg_agent", content_index: 0, part: { type: "output_text", text, annotations: [] } }),
    );
  } else {
    const args = JSON.stringify(script.args);
    item = { type: "function_call", id: "fc_agent", call_id: "call_agent_1", name: script.tool, arguments: args, status: "completed" };
    events.push(
      ev({ type: "response.output_item.added", output_index: 0, item: { ...item, arguments: "", status: "in_progress" } }),
      ev({ type: "response.function_call_arguments.delta", output_index: 0, item_id: "fc_agent", delta: args.slice(0, 6) }),
      ev({ type: "response.function_call_arguments.delta", output_index: 0, item_id: "fc_agent", delta: args.slice(6) }),
      ev({ type: "response.function_call_arguments.done", output_index: 0, item_id: "fc_agent", arguments: args }),
    );
  }
  events.push(ev({ type: "response.output_item.done", output_index: 0, item }), ev({ type: "response.completed", response: response("completed", [item]) }));
  return sse(events);
}

function geminiStream(model: string, script: AgentScript, result: string | undefined): Response {
  const usageMetadata = { promptTokenCount: USAGE.input, cachedContentTokenCount: USAGE.cached, candidatesTokenCount: USAGE.output, totalTokenCount: USAGE.input + USAGE.output };
  const chunk = (parts: unknown[], finish?: string) => ({ candidates: [{ content: { role: "model", parts }, ...(finish ? { finishReason: finish } : {}), index: 0 }], ...(finish ? { usageMetadata } : {}), modelVersion: model, responseId: "gem-agent" });
  if (result !== undefined) {
    const text = script.answer(result);
    return sse([chunk([{ text: text.slice(0, 5) }]), chunk([{ text: text.slice(5) }], "STOP")]);
  }
  return sse([chunk([{ functionCall: { name: script.tool, args: script.args } }], "STOP")]);
}

/** A complete (not streamed) text answer: agent CLIs make such side calls (titles, summaries). */
function jsonAnswer(format: KeyFormat, model: string, text: string): Response {
  switch (format) {
    case "openai":
      return json({ id: "chatcmpl-side", object: "chat.completion", created: 1, model, choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }], usage: { prompt_tokens: 20, completion_tokens: 2, total_tokens: 22 } });
    case "responses":
      return json({ id: "resp_side", object: "response", created_at: 1, status: "completed", model, output: [{ type: "message", id: "msg_side", role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [] }] }], usage: { input_tokens: 20, output_tokens: 2, total_tokens: 22 }, error: null, incomplete_details: null });
    case "anthropic":
      return json({ id: "msg_side", type: "message", role: "assistant", model, content: [{ type: "text", text }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 20, output_tokens: 2 } });
    case "gemini":
      return json({ candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 2, totalTokenCount: 22 }, modelVersion: model });
  }
}

const isStreamCall = (format: KeyFormat, request: RecordedRequest) => (format === "gemini" ? request.path.endsWith(":streamGenerateContent") : request.json?.stream === true);

const STREAMS: Record<KeyFormat, (model: string, script: AgentScript, result: string | undefined) => Response> = {
  openai: openaiStream,
  responses: responsesStream,
  anthropic: anthropicStream,
  gemini: geminiStream,
};

/** Whether a recorded request is a model call of the format (not a token count or model list). */
function isModelCall(format: KeyFormat, request: RecordedRequest): boolean {
  switch (format) {
    case "openai": return request.path === "/v1/chat/completions";
    case "responses": return request.path === "/v1/responses";
    case "anthropic": return request.path === "/v1/messages";
    case "gemini": return /:(stream)?[gG]enerateContent$/.test(request.path);
  }
}

export function startAgentUpstream(format: KeyFormat, script: AgentScript): AgentUpstream {
  const mock = startMockUpstream();
  let lastResult: string | undefined;
  mock.route("POST", /.*/, (request) => {
    if (format === "anthropic" && request.path === "/v1/messages/count_tokens") return json({ input_tokens: 100 });
    if (format === "gemini" && request.path.endsWith(":countTokens")) return json({ totalTokens: 100 });
    if (!isModelCall(format, request)) return json({ error: { message: `mock: no such path ${request.path}` } }, 404);
    const model = String(request.json?.model ?? /models\/([^:]+)/.exec(request.path)?.[1] ?? "model");
    if (!isStreamCall(format, request)) return jsonAnswer(format, model, "Side answer");
    const result = toolResultOf(format, request.json);
    lastResult = result;
    return STREAMS[format](model, script, result);
  });
  return {
    mock,
    url: mock.url,
    calls: () => mock.requests.filter((r) => isModelCall(format, r)),
    lastToolResult: () => lastResult,
    stop: () => mock.stop(),
  };
}

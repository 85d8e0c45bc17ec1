/**
 * Upstream answers in each of the four wire formats, written by hand from the providers'
 * documentation (independently of the router's translators, which tests check against
 * them): a complete answer, and streams of thinking, text and tool calls, with the same
 * token counts in each format's own words, and errors in each format's envelope.
 */
import type { KeyFormat } from "../../src/wire/constants.ts";
import { json, sse } from "./mock-upstream.ts";

/** Token counts every canned answer reports, each in its format's words. */
export interface CannedUsage {
  /** All input tokens, cached ones included. */
  input: number;
  cached: number;
  output: number;
}

export const CANNED_USAGE: CannedUsage = { input: 130, cached: 100, output: 20 };

export interface CannedCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/** What one streamed answer holds, in order: thinking, then text, then tool calls. */
export interface CannedStream {
  model: string;
  thinking?: string;
  text?: string;
  calls?: CannedCall[];
  usage?: CannedUsage;
}

/** Splits a string into two fragments, as upstreams stream text and arguments. */
const halves = (s: string): [string, string] => [s.slice(0, Math.ceil(s.length / 2)), s.slice(Math.ceil(s.length / 2))];

function chatStream(a: CannedStream): Response {
  const u = a.usage ?? CANNED_USAGE;
  const chunk = (delta: unknown, finish: string | null = null) => ({ id: "chatcmpl-canned", object: "chat.completion.chunk", created: 1, model: a.model, choices: [{ index: 0, delta, finish_reason: finish }] });
  const events: unknown[] = [chunk({ role: "assistant", content: a.text === undefined ? null : "" })];
  if (a.thinking) for (const piece of halves(a.thinking)) events.push(chunk({ reasoning_content: piece }));
  if (a.text) for (const piece of halves(a.text)) events.push(chunk({ content: piece }));
  const calls = a.calls ?? [];
  // Parallel calls interleaved, as some OpenAI-compatible servers send them: each call's
  // first fragment, then the rest of each, by index.
  const args = calls.map((call) => halves(JSON.stringify(call.args)));
  calls.forEach((call, index) => events.push(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: args[index]![0] } }] })));
  calls.forEach((_, index) => events.push(chunk({ tool_calls: [{ index, function: { arguments: args[index]![1] } }] })));
  events.push(chunk({}, calls.length > 0 ? "tool_calls" : "stop"));
  events.push({ id: "chatcmpl-canned", object: "chat.completion.chunk", created: 1, model: a.model, choices: [], usage: { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output, prompt_tokens_details: { cached_tokens: u.cached } } });
  events.push("data: [DONE]\n\n");
  return sse(events);
}

function anthropicStream(a: CannedStream): Response {
  const u = a.usage ?? CANNED_USAGE;
  const ev = (data: Record<string, unknown>): [string, unknown] => [String(data.type), data];
  const events: Array<[string, unknown]> = [
    ev({ type: "message_start", message: { id: "msg_canned", type: "message", role: "assistant", model: a.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: u.input - u.cached, cache_read_input_tokens: u.cached, cache_creation_input_tokens: 0, output_tokens: 1 } } }),
  ];
  let index = 0;
  if (a.thinking) {
    events.push(ev({ type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } }));
    for (const piece of halves(a.thinking)) events.push(ev({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: piece } }));
    events.push(ev({ type: "content_block_delta", index, delta: { type: "signature_delta", signature: "c2lnbmF0dXJl" } }), ev({ type: "content_block_stop", index }));
    index++;
  }
  if (a.text) {
    events.push(ev({ type: "content_block_start", index, content_block: { type: "text", text: "" } }));
    for (const piece of halves(a.text)) events.push(ev({ type: "content_block_delta", index, delta: { type: "text_delta", text: piece } }));
    events.push(ev({ type: "content_block_stop", index }));
    index++;
  }
  for (const call of a.calls ?? []) {
    events.push(ev({ type: "content_block_start", index, content_block: { type: "tool_use", id: call.id, name: call.name, input: {} } }));
    for (const piece of halves(JSON.stringify(call.args))) events.push(ev({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } }));
    events.push(ev({ type: "content_block_stop", index }));
    index++;
  }
  events.push(ev({ type: "message_delta", delta: { stop_reason: a.calls?.length ? "tool_use" : "end_turn", stop_sequence: null }, usage: { output_tokens: u.output } }), ev({ type: "message_stop" }));
  return sse(events);
}

function responsesStream(a: CannedStream): Response {
  const u = a.usage ?? CANNED_USAGE;
  let seq = 0;
  const ev = (data: Record<string, unknown>): [string, unknown] => [String(data.type), { ...data, sequence_number: seq++ }];
  const usage = { input_tokens: u.input, input_tokens_details: { cached_tokens: u.cached }, output_tokens: u.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: u.input + u.output };
  const response = (status: string, output: unknown[]) => ({ id: "resp_canned", object: "response", created_at: 1, status, model: a.model, output, usage: status === "completed" ? usage : null, error: null, incomplete_details: null });
  const events: Array<[string, unknown]> = [ev({ type: "response.created", response: response("in_progress", []) }), ev({ type: "response.in_progress", response: response("in_progress", []) })];
  const output: Array<Record<string, unknown>> = [];
  if (a.thinking) {
    const id = "rs_canned";
    const item = { type: "reasoning", id, summary: [{ type: "summary_text", text: a.thinking }] };
    const at = output.length;
    events.push(ev({ type: "response.output_item.added", output_index: at, item: { ...item, summary: [] } }));
    events.push(ev({ type: "response.reasoning_summary_part.added", output_index: at, item_id: id, summary_index: 0, part: { type: "summary_text", text: "" } }));
    for (const piece of halves(a.thinking)) events.push(ev({ type: "response.reasoning_summary_text.delta", output_index: at, item_id: id, summary_index: 0, delta: piece }));
    events.push(ev({ type: "response.reasoning_summary_text.done", output_index: at, item_id: id, summary_index: 0, text: a.thinking }));
    events.push(ev({ type: "response.reasoning_summary_part.done", output_index: at, item_id: id, summary_index: 0, part: { type: "summary_text", text: a.thinking } }));
    events.push(ev({ type: "response.output_item.done", output_index: at, item }));
    output.push(item);
  }
  if (a.text) {
    const id = "msg_canned";
    const item = { type: "message", id, role: "assistant", status: "completed", content: [{ type: "output_text", text: a.text, annotations: [] }] };
    const at = output.length;
    events.push(ev({ type: "response.output_item.added", output_index: at, item: { ...item, status: "in_progress", content: [] } }));
    events.push(ev({ type: "response.content_part.added", output_index: at, item_id: id, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }));
    for (const piece of halves(a.text)) events.push(ev({ type: "response.output_text.delta", output_index: at, item_id: id, content_index: 0, delta: piece }));
    events.push(ev({ type: "response.output_text.done", output_index: at, item_id: id, content_index: 0, text: a.text }));
    events.push(ev({ type: "response.content_part.done", output_index: at, item_id: id, content_index: 0, part: { type: "output_text", text: a.text, annotations: [] } }));
    events.push(ev({ type: "response.output_item.done", output_index: at, item }));
    output.push(item);
  }
  for (const call of a.calls ?? []) {
    const id = `fc_${call.id}`;
    const args = JSON.stringify(call.args);
    const item = { type: "function_call", id, call_id: call.id, name: call.name, arguments: args, status: "completed" };
    const at = output.length;
    events.push(ev({ type: "response.output_item.added", output_index: at, item: { ...item, arguments: "", status: "in_progress" } }));
    for (const piece of halves(args)) events.push(ev({ type: "response.function_call_arguments.delta", output_index: at, item_id: id, delta: piece }));
    events.push(ev({ type: "response.function_call_arguments.done", output_index: at, item_id: id, arguments: args }));
    events.push(ev({ type: "response.output_item.done", output_index: at, item }));
    output.push(item);
  }
  events.push(ev({ type: "response.completed", response: response("completed", output) }));
  return sse(events);
}

function geminiStream(a: CannedStream): Response {
  const u = a.usage ?? CANNED_USAGE;
  const usageMetadata = { promptTokenCount: u.input, cachedContentTokenCount: u.cached, candidatesTokenCount: u.output, totalTokenCount: u.input + u.output };
  const chunk = (parts: unknown[], finish?: string) => ({ candidates: [{ content: { role: "model", parts }, ...(finish ? { finishReason: finish } : {}), index: 0 }], ...(finish ? { usageMetadata } : {}), modelVersion: a.model, responseId: "gem-canned" });
  const events: unknown[] = [];
  if (a.thinking) for (const piece of halves(a.thinking)) events.push(chunk([{ text: piece, thought: true }]));
  if (a.text) for (const piece of halves(a.text)) events.push(chunk([{ text: piece }]));
  // Gemini sends each function call whole, never in fragments.
  if (a.calls?.length) events.push(chunk(a.calls.map((call) => ({ functionCall: { name: call.name, args: call.args } }))));
  events.push(chunk([], "STOP"));
  return sse(events);
}

/** A stream in the format's own events (Chat ends with `[DONE]`; Gemini streams with `alt=sse`). */
export function cannedStream(format: KeyFormat, answer: CannedStream): Response {
  switch (format) {
    case "openai": return chatStream(answer);
    case "responses": return responsesStream(answer);
    case "anthropic": return anthropicStream(answer);
    case "gemini": return geminiStream(answer);
  }
}

/** A complete text answer with the canned usage. */
export function cannedAnswer(format: KeyFormat, model: string, text: string, u: CannedUsage = CANNED_USAGE): Response {
  switch (format) {
    case "openai":
      return json({ id: "chatcmpl-canned", object: "chat.completion", created: 1, model, choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }], usage: { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output, prompt_tokens_details: { cached_tokens: u.cached } } });
    case "responses":
      return json({ id: "resp_canned", object: "response", created_at: 1, status: "completed", model, output: [{ type: "message", id: "msg_canned", role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [] }] }], usage: { input_tokens: u.input, input_tokens_details: { cached_tokens: u.cached }, output_tokens: u.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: u.input + u.output }, error: null, incomplete_details: null });
    case "anthropic":
      return json({ id: "msg_canned", type: "message", role: "assistant", model, content: [{ type: "text", text }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: u.input - u.cached, cache_read_input_tokens: u.cached, cache_creation_input_tokens: 0, output_tokens: u.output } });
    case "gemini":
      return json({ candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: u.input, cachedContentTokenCount: u.cached, candidatesTokenCount: u.output, totalTokenCount: u.input + u.output }, modelVersion: model, responseId: "gem-canned" });
  }
}

/** An error answer in the format's envelope. */
export function cannedError(format: KeyFormat, status: number, message: string): Response {
  switch (format) {
    case "openai":
    case "responses":
      return json({ error: { message, type: status === 429 ? "rate_limit_error" : "invalid_request_error", param: null, code: null } }, status);
    case "anthropic":
      return json({ type: "error", error: { type: status === 429 ? "rate_limit_error" : "invalid_request_error", message } }, status);
    case "gemini":
      return json({ error: { code: status, message, status: status === 429 ? "RESOURCE_EXHAUSTED" : "INVALID_ARGUMENT" } }, status);
  }
}

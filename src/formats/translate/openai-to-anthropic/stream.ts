/**
 * An Anthropic Messages stream as an OpenAI Chat Completions stream: a first chunk with
 * the assistant role, one chunk per content delta (text as `content`, thinking as
 * `reasoning_content`, each tool use as its own `tool_calls` index, numbered in the order
 * the calls start), a chunk with `finish_reason`, the usage chunk, and `[DONE]`.
 */
import type { HttpError } from "../../../core/errors.ts";
import { anthropicUsage, mergeAnthropicCounts, type AnthropicCounts } from "../../anthropic/usage.ts";
import { isObject, parseObject, type JsonObject } from "../../json.ts";
import { openai } from "../../openai/index.ts";
import type { SseEvent } from "../../sse.ts";
import { streamedError } from "../errors.ts";
import { dataEvent, DONE, EMPTY, encodeAll } from "../sse-write.ts";
import { openaiFinishReason } from "../stop-reasons.ts";
import type { AnswerContext, StreamTranslator } from "../translator.ts";
import { openaiUsageObject } from "../usage.ts";
import { nowSeconds } from "./response.ts";

export function openaiStreamFromAnthropic(context: AnswerContext = {}): StreamTranslator {
  const created = context.created ?? nowSeconds();
  const usageChunk = context.usageChunk ?? true;
  let id: unknown;
  let model: unknown;
  let done = false;
  let finish: string | undefined;
  const counts: AnthropicCounts = {};
  /** Anthropic block index → Chat tool-call index: each tool use keeps its own. */
  const toolOf = new Map<number, number>();

  const chunk = (delta: JsonObject, finishReason: string | null = null) =>
    dataEvent({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });

  function close(out: string[]): Uint8Array {
    done = true;
    out.push(chunk({}, finish ?? "stop"));
    if (usageChunk) out.push(dataEvent({ id, object: "chat.completion.chunk", created, model, choices: [], usage: openaiUsageObject(anthropicUsage(counts)) }));
    out.push(DONE);
    return encodeAll(out);
  }

  function onBlockStart(e: JsonObject, out: string[]): void {
    const block = isObject(e.content_block) ? e.content_block : {};
    const index = typeof e.index === "number" ? e.index : 0;
    if (block.type === "tool_use") {
      const call = toolOf.size;
      toolOf.set(index, call);
      out.push(chunk({ tool_calls: [{ index: call, id: block.id, type: "function", function: { name: block.name, arguments: "" } }] }));
    } else if (block.type === "text" && typeof block.text === "string" && block.text !== "") out.push(chunk({ content: block.text }));
    else if (block.type === "thinking" && typeof block.thinking === "string" && block.thinking !== "") out.push(chunk({ reasoning_content: block.thinking }));
  }

  function onBlockDelta(e: JsonObject, out: string[]): void {
    const delta = isObject(e.delta) ? e.delta : {};
    switch (delta.type) {
      case "text_delta":
        out.push(chunk({ content: delta.text }));
        return;
      case "thinking_delta":
        out.push(chunk({ reasoning_content: delta.thinking }));
        return;
      case "input_json_delta": {
        const call = toolOf.get(typeof e.index === "number" ? e.index : 0);
        if (call !== undefined && typeof delta.partial_json === "string" && delta.partial_json !== "") {
          out.push(chunk({ tool_calls: [{ index: call, function: { arguments: delta.partial_json } }] }));
        }
        return;
      }
    }
    // signature_delta and citations_delta have no Chat counterpart.
  }

  function fail(error: HttpError): Uint8Array {
    if (done) return EMPTY;
    done = true;
    return openai.streamErrorEvent(error);
  }

  return {
    push(e: SseEvent): Uint8Array {
      if (done) return EMPTY;
      const data = parseObject(e.data);
      if (data === undefined) return EMPTY;
      const out: string[] = [];
      switch (data.type) {
        case "message_start": {
          const message = isObject(data.message) ? data.message : {};
          id = message.id;
          model = message.model;
          if (isObject(message.usage)) mergeAnthropicCounts(counts, message.usage);
          out.push(chunk({ role: "assistant", content: "" }));
          break;
        }
        case "content_block_start":
          onBlockStart(data, out);
          break;
        case "content_block_delta":
          onBlockDelta(data, out);
          break;
        case "message_delta":
          if (isObject(data.delta) && typeof data.delta.stop_reason === "string") finish = openaiFinishReason(data.delta.stop_reason);
          if (isObject(data.usage)) mergeAnthropicCounts(counts, data.usage);
          break;
        case "message_stop":
          return close(out);
        case "error":
          return fail(streamedError(data));
      }
      return encodeAll(out);
    },
    end: () => (done ? EMPTY : close([])),
    fail,
  };
}

/**
 * An Anthropic Messages stream read into the model's events, one upstream event at a
 * time: `message_start` (ids, input usage), each content block's start and deltas,
 * `message_delta` (stop reason, cumulative usage), `error`. `ping`, `content_block_stop`,
 * `message_stop`, citations and blocks of Anthropic's server tools make nothing.
 */
import { anthropicUsage, mergeAnthropicCounts, type AnthropicCounts } from "../../../anthropic/usage.ts";
import { isObject, parseObject, type JsonObject } from "../../../json.ts";
import type { SseEvent } from "../../../sse.ts";
import type { StreamReader } from "../../codec.ts";
import { streamedError } from "../../errors.ts";
import type { IrEvent } from "../../ir.ts";
import { finishOf } from "./answer.ts";
import { anthropicSignature } from "./blocks.ts";

export function anthropicStreamReader(): StreamReader {
  /** Counts so far: `message_delta` restates cumulative counts over `message_start`'s, field by field, as the router's tap does. */
  const counts: AnthropicCounts = {};
  /** Anthropic block index → the model's call ordinal, so each block's argument deltas reach only its own call. */
  const callOf = new Map<number, number>();
  let calls = 0;
  /** A stop reason was read (a later one is not repeated). */
  let finished = false;
  /** An error event was read: nothing follows it. */
  let failed = false;

  const indexOf = (e: JsonObject) => (typeof e.index === "number" ? e.index : 0);

  function messageStart(e: JsonObject): IrEvent[] {
    const message = isObject(e.message) ? e.message : {};
    const start: IrEvent = { type: "start", id: typeof message.id === "string" ? message.id : "", model: typeof message.model === "string" ? message.model : "" };
    if (isObject(message.usage)) {
      mergeAnthropicCounts(counts, message.usage);
      start.usage = anthropicUsage(counts);
    }
    return [start];
  }

  /**
   * A block opens: a thinking block always opens a thinking part (its text may be all
   * omitted, leaving only a signature); a text block only when it starts with text.
   */
  function blockStart(e: JsonObject): IrEvent[] {
    const block = isObject(e.content_block) ? e.content_block : {};
    switch (block.type) {
      case "text": return typeof block.text === "string" && block.text !== "" ? [{ type: "text", text: block.text }] : [];
      case "thinking": return [{ type: "thinking", text: typeof block.thinking === "string" ? block.thinking : "" }];
      case "redacted_thinking": return typeof block.data === "string" ? [{ type: "redacted_thinking", signature: anthropicSignature(block.data) }] : [];
      case "tool_use": {
        if (typeof block.id !== "string" || typeof block.name !== "string") return [];
        const call = calls++;
        callOf.set(indexOf(e), call);
        const out: IrEvent[] = [{ type: "tool_call_start", call, id: block.id, name: block.name }];
        // Anthropic starts a tool use with an empty input and streams it; an input given whole is passed on whole.
        if (isObject(block.input) && Object.keys(block.input).length > 0) out.push({ type: "tool_call_arguments", call, delta: JSON.stringify(block.input) });
        return out;
      }
    }
    return [];
  }

  function blockDelta(e: JsonObject): IrEvent[] {
    const delta = isObject(e.delta) ? e.delta : {};
    switch (delta.type) {
      case "text_delta": return typeof delta.text === "string" && delta.text !== "" ? [{ type: "text", text: delta.text }] : [];
      case "thinking_delta": return typeof delta.thinking === "string" && delta.thinking !== "" ? [{ type: "thinking", text: delta.thinking }] : [];
      case "signature_delta": return typeof delta.signature === "string" && delta.signature !== "" ? [{ type: "thinking_signature", signature: anthropicSignature(delta.signature) }] : [];
      case "input_json_delta": {
        const call = callOf.get(indexOf(e));
        return call !== undefined && typeof delta.partial_json === "string" && delta.partial_json !== "" ? [{ type: "tool_call_arguments", call, delta: delta.partial_json }] : [];
      }
    }
    return [];
  }

  function messageDelta(e: JsonObject): IrEvent[] {
    const out: IrEvent[] = [];
    if (isObject(e.usage)) {
      mergeAnthropicCounts(counts, e.usage);
      out.push({ type: "usage", usage: anthropicUsage(counts) });
    }
    const delta = isObject(e.delta) ? e.delta : {};
    if (typeof delta.stop_reason === "string" && !finished) {
      finished = true;
      const finish: IrEvent = { type: "finish", finish: finishOf(delta.stop_reason) };
      if (typeof delta.stop_sequence === "string") finish.stopSequence = delta.stop_sequence;
      out.push(finish);
    }
    return out;
  }

  return {
    push(event: SseEvent): IrEvent[] {
      if (failed) return [];
      const data = parseObject(event.data);
      if (data === undefined) return [];
      switch (data.type) {
        case "message_start": return messageStart(data);
        case "content_block_start": return blockStart(data);
        case "content_block_delta": return blockDelta(data);
        case "message_delta": return messageDelta(data);
        case "error":
          failed = true;
          return [{ type: "error", error: streamedError(data) }];
      }
      return [];
    },
    /** A stream that ended without its stop reason (cut short) still finishes, as a plain stop. */
    end(): IrEvent[] {
      if (finished || failed) return [];
      finished = true;
      return [{ type: "finish", finish: "stop" }];
    },
  };
}

/** Complete Anthropic Messages answers: read from an Anthropic upstream, written for an Anthropic client. */
import { anthropicUsage, mergeAnthropicCounts, type AnthropicCounts } from "../../../anthropic/usage.ts";
import { isObject, type JsonObject } from "../../../json.ts";
import { ZERO_USAGE, type Usage } from "../../../usage.ts";
import type { IrAnswer, IrFinish, IrPart } from "../../ir.ts";
import { anthropicUsageObject } from "../../usage.ts";
import { anthropicSignature, argumentsObject, ownSignature, thinkingBlock } from "./blocks.ts";

/** Anthropic `stop_reason` → the model's finish; a turn the context window ended is a length stop. */
export function finishOf(stopReason: unknown): IrFinish {
  switch (stopReason) {
    case "stop_sequence": return "stop_sequence";
    case "max_tokens": case "model_context_window_exceeded": return "length";
    case "tool_use": return "tool_calls";
    case "refusal": return "content_filter";
    case "pause_turn": return "pause";
  }
  return "stop";
}

/** The model's finish → Anthropic `stop_reason`. */
export function stopReasonOf(finish: IrFinish): string {
  switch (finish) {
    case "stop": return "end_turn";
    case "stop_sequence": return "stop_sequence";
    case "length": return "max_tokens";
    case "tool_calls": return "tool_use";
    case "content_filter": return "refusal";
    case "pause": return "pause_turn";
  }
}

/** Usage read as metering reads it (src/formats/anthropic/usage.ts). */
export function usageOf(usage: JsonObject): Usage {
  const counts: AnthropicCounts = {};
  mergeAnthropicCounts(counts, usage);
  return anthropicUsage(counts);
}

/**
 * An upstream content block as a part; undefined for blocks of Anthropic's own server
 * tools (refused in requests, so they cannot occur) and malformed ones. Citations are dropped.
 */
function partOf(block: JsonObject): IrPart | undefined {
  switch (block.type) {
    case "text": return typeof block.text === "string" ? { type: "text", text: block.text } : undefined;
    case "thinking": {
      if (typeof block.thinking !== "string") return undefined;
      const signed = typeof block.signature === "string" && block.signature !== "";
      return signed ? { type: "thinking", text: block.thinking, signature: anthropicSignature(block.signature as string) } : { type: "thinking", text: block.thinking };
    }
    case "redacted_thinking": return typeof block.data === "string" ? { type: "redacted_thinking", signature: anthropicSignature(block.data) } : undefined;
    case "tool_use":
      if (typeof block.id !== "string" || typeof block.name !== "string") return undefined;
      return { type: "tool_call", id: block.id, name: block.name, arguments: JSON.stringify(isObject(block.input) ? block.input : {}) };
  }
  return undefined;
}

export function readAnthropicAnswer(body: unknown): IrAnswer {
  const message = isObject(body) ? body : {};
  const parts: IrPart[] = [];
  for (const block of Array.isArray(message.content) ? message.content : []) {
    const part = isObject(block) ? partOf(block) : undefined;
    if (part !== undefined) parts.push(part);
  }
  const answer: IrAnswer = {
    id: typeof message.id === "string" ? message.id : "",
    model: typeof message.model === "string" ? message.model : "",
    parts,
    finish: finishOf(message.stop_reason),
  };
  if (typeof message.stop_sequence === "string") answer.stopSequence = message.stop_sequence;
  if (isObject(message.usage)) answer.usage = usageOf(message.usage);
  return answer;
}

/**
 * A part as an answer's content block; undefined for what an Anthropic answer cannot
 * hold: another wire's redacted reasoning (opaque to Anthropic and to the client),
 * images and documents (an Anthropic answer is text, thinking and tool uses), results.
 * Thinking keeps its signature when Anthropic's, else an empty one (a client sending
 * it back gets it dropped by the reader of whatever upstream serves the next turn).
 */
function blockOf(part: IrPart): JsonObject | undefined {
  switch (part.type) {
    case "text": return { type: "text", text: part.text };
    case "thinking": return thinkingBlock(part.text, part.signature);
    case "redacted_thinking": {
      const data = ownSignature(part.signature);
      return data === undefined ? undefined : { type: "redacted_thinking", data };
    }
    // Arguments that are not a JSON object (a model's malformed output) become an empty input rather than a failed answer.
    case "tool_call": return { type: "tool_use", id: part.id, name: part.name, input: argumentsObject(part.arguments) ?? {} };
  }
  return undefined;
}

export function writeAnthropicAnswer(answer: IrAnswer): JsonObject {
  const content: JsonObject[] = [];
  for (const part of answer.parts) {
    const block = blockOf(part);
    if (block !== undefined) content.push(block);
  }
  return {
    id: answer.id,
    type: "message",
    role: "assistant",
    model: answer.model,
    content,
    stop_reason: stopReasonOf(answer.finish),
    stop_sequence: answer.finish === "stop_sequence" ? (answer.stopSequence ?? null) : null,
    usage: anthropicUsageObject(answer.usage ?? ZERO_USAGE),
  };
}

/** A complete OpenAI Chat Completions answer as an Anthropic Messages answer. */
import { isObject, type JsonObject } from "../../json.ts";
import { openaiUsage } from "../../openai/usage.ts";
import { ZERO_USAGE } from "../../usage.ts";
import { textOf } from "../content.ts";
import { anthropicStopReason } from "../stop-reasons.ts";
import { anthropicUsageObject } from "../usage.ts";

/** Reasoning text, as OpenAI-compatible servers return it (`reasoning_content`, or `reasoning`). */
export function reasoningOf(o: JsonObject): string | undefined {
  const r = o.reasoning_content ?? o.reasoning;
  return typeof r === "string" && r !== "" ? r : undefined;
}

/**
 * A tool call's JSON arguments as an Anthropic `input` object; arguments that are not a
 * JSON object (a model's malformed output) become an empty input rather than a failed answer.
 */
export function inputOf(args: unknown): JsonObject {
  if (typeof args !== "string" || args === "") return {};
  try {
    const value: unknown = JSON.parse(args);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

export function toAnthropicMessage(body: unknown): JsonObject {
  const answer = isObject(body) ? body : {};
  const choice = Array.isArray(answer.choices) && isObject(answer.choices[0]) ? answer.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const content: JsonObject[] = [];
  const reasoning = reasoningOf(message);
  // There is no signature to give: a client sending this block back gets it dropped (request.ts).
  if (reasoning !== undefined) content.push({ type: "thinking", thinking: reasoning, signature: "" });
  const text = textOf(message.content);
  if (text !== "") content.push({ type: "text", text });
  if (typeof message.refusal === "string" && message.refusal !== "") content.push({ type: "text", text: message.refusal });
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isObject(call) || !isObject(call.function)) continue;
      content.push({ type: "tool_use", id: call.id, name: call.function.name, input: inputOf(call.function.arguments) });
    }
  }
  const usage = isObject(answer.usage) ? (openaiUsage(answer.usage) ?? ZERO_USAGE) : ZERO_USAGE;
  return {
    id: answer.id,
    type: "message",
    role: "assistant",
    model: answer.model,
    content,
    stop_reason: anthropicStopReason(choice.finish_reason),
    stop_sequence: null,
    usage: anthropicUsageObject(usage),
  };
}

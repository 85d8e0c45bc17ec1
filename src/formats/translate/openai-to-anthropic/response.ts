/** A complete Anthropic Messages answer as an OpenAI Chat Completions answer. */
import { anthropicUsage, mergeAnthropicCounts, type AnthropicCounts } from "../../anthropic/usage.ts";
import { isObject, type JsonObject } from "../../json.ts";
import { openaiFinishReason } from "../stop-reasons.ts";
import type { AnswerContext } from "../translator.ts";
import { openaiUsageObject } from "../usage.ts";

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export function toOpenaiChatCompletion(body: unknown, context: AnswerContext = {}): JsonObject {
  const answer = isObject(body) ? body : {};
  let text = "";
  let reasoning = "";
  const calls: JsonObject[] = [];
  for (const block of Array.isArray(answer.content) ? answer.content : []) {
    if (!isObject(block)) continue;
    if (block.type === "text") text += String(block.text ?? "");
    else if (block.type === "thinking") reasoning += String(block.thinking ?? "");
    else if (block.type === "tool_use") calls.push({ id: block.id, type: "function", function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    // Redacted thinking is opaque and server-tool blocks cannot occur (those tools are refused).
  }
  const message: JsonObject = { role: "assistant", content: text === "" && calls.length > 0 ? null : text, refusal: null };
  // `reasoning_content` is where OpenAI-compatible servers put reasoning text, and what clients of them read.
  if (reasoning !== "") message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  const counts: AnthropicCounts = {};
  if (isObject(answer.usage)) mergeAnthropicCounts(counts, answer.usage);
  return {
    id: answer.id,
    object: "chat.completion",
    created: context.created ?? nowSeconds(),
    model: answer.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: openaiFinishReason(answer.stop_reason) }],
    usage: openaiUsageObject(anthropicUsage(counts)),
  };
}

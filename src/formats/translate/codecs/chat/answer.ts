/** Complete Chat Completions answers: read from an upstream, written for a client. */
import { isObject, type JsonObject } from "../../../json.ts";
import { openaiUsageFromJson } from "../../../openai/usage.ts";
import { ZERO_USAGE } from "../../../usage.ts";
import { textOf } from "../../content.ts";
import type { IrAnswer, IrPart } from "../../ir.ts";
import type { AnswerContext } from "../../translator.ts";
import { openaiUsageObject } from "../../usage.ts";
import { chatFinishReason, irFinish } from "./finish.ts";
import { createdSeconds } from "../../sse-write.ts";


/** Reasoning text as OpenAI-compatible servers send it (`reasoning_content`, or `reasoning`). */
export function reasoningText(o: JsonObject): string | undefined {
  const r = o.reasoning_content ?? o.reasoning;
  return typeof r === "string" && r !== "" ? r : undefined;
}

/**
 * The first choice of an upstream answer: reasoning first (with no signature: Chat has
 * none), then the text, a refusal's text, and the tool calls. Never throws.
 */
export function readChatAnswer(body: unknown): IrAnswer {
  const answer = isObject(body) ? body : {};
  const choice = Array.isArray(answer.choices) && isObject(answer.choices[0]) ? answer.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const parts = messageParts(message);
  const out: IrAnswer = { id: stringOr(answer.id), model: stringOr(answer.model), parts, finish: irFinish(choice.finish_reason, parts.some((p) => p.type === "tool_call")) };
  const usage = openaiUsageFromJson(answer);
  if (usage !== undefined) out.usage = usage;
  return out;
}

const stringOr = (v: unknown) => (typeof v === "string" ? v : "");

/**
 * An id for a call the upstream gave none (some OpenAI-compatible servers omit it). A
 * client answers a call by its id, so it must be unique in the whole conversation, not
 * only in this answer; it stays within Chat's 40 characters and Anthropic's id alphabet.
 */
export const madeCallId = (): string => `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;

function messageParts(message: JsonObject): IrPart[] {
  const parts: IrPart[] = [];
  const reasoning = reasoningText(message);
  if (reasoning !== undefined) parts.push({ type: "thinking", text: reasoning });
  for (const text of [textOf(message.content), message.refusal]) if (typeof text === "string" && text !== "") parts.push({ type: "text", text });
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (!isObject(call) || !isObject(call.function)) continue;
    const args = call.function.arguments;
    parts.push({ type: "tool_call", id: typeof call.id === "string" && call.id !== "" ? call.id : madeCallId(), name: stringOr(call.function.name), arguments: typeof args === "string" && args !== "" ? args : "{}" });
  }
  return parts;
}

/**
 * The model's answer as a Chat completion: texts joined as `content` (null when the
 * answer is only tool calls), thinking as `reasoning_content` (the field
 * OpenAI-compatible reasoning servers use), usage in Chat's shape. Signatures, redacted
 * thinking and the matched stop sequence have no Chat counterpart.
 */
export function writeChatAnswer(answer: IrAnswer, context: AnswerContext): JsonObject {
  let text = "";
  let reasoning = "";
  const calls: JsonObject[] = [];
  for (const part of answer.parts) {
    if (part.type === "text") text += part.text;
    else if (part.type === "thinking") reasoning += part.text;
    else if (part.type === "tool_call") calls.push({ id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } });
  }
  const message: JsonObject = { role: "assistant", content: text === "" && calls.length > 0 ? null : text, refusal: null };
  if (reasoning !== "") message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  return {
    id: answer.id,
    object: "chat.completion",
    created: createdSeconds(context),
    model: answer.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: chatFinishReason(answer.finish) }],
    usage: openaiUsageObject(answer.usage ?? ZERO_USAGE),
  };
}

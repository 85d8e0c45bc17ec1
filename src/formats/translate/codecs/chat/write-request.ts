/**
 * The shared model written as a Chat Completions request (the upstream's side). Tool
 * results leave their user turn as `tool` messages (text only), sent first; images from
 * results and the turn's other parts follow as one user message. Thinking in the history
 * is dropped (Chat takes no reasoning back); `top_k` has no counterpart and is dropped,
 * and so is the end-user id (see docs/translation.md).
 */
import type { JsonObject } from "../../../json.ts";
import { refusal } from "../../codec.ts";
import { dataUrl } from "../../content.ts";
import type { IrMessage, IrOutputFormat, IrPart, IrReasoning, IrRequest, IrTool, IrToolChoice, IrToolResult, Param } from "../../ir.ts";
import { systemWithJsonMode } from "../../json-mode.ts";
import { strictFor } from "../../openai-strict.ts";
import { effortOfBudget } from "../../reasoning.ts";
import type { RequestContext } from "../../translator.ts";
import { CHAT } from "./name.ts";

export function writeChatRequest(request: IrRequest, context: RequestContext): JsonObject {
  refuseUncarried(request);
  const out: JsonObject = {
    model: request.model ?? context.model,
    messages: [...systemMessages(systemWithJsonMode(request)), ...request.messages.flatMap(messagesOfTurn)],
    max_completion_tokens: request.maxTokens ?? context.maxTokens,
    ...samplingFields(request),
  };
  if (request.tools.length > 0) Object.assign(out, toolFields(request));
  const effort = request.reasoning && reasoningEffort(request.reasoning);
  if (effort !== undefined) out.reasoning_effort = effort;
  const format = request.output && responseFormat(request.output);
  if (format !== undefined) out.response_format = format;
  if (request.stream) {
    out.stream = true;
    // Chat streams report usage only when asked, and metering needs it.
    out.stream_options = { include_usage: true };
  }
  return out;
}

/** Sampling numbers as they are, and stop sequences as a list; `top_k` has no Chat counterpart. */
function samplingFields(request: IrRequest): JsonObject {
  const out: JsonObject = {};
  if (request.temperature !== undefined) out.temperature = request.temperature;
  if (request.topP !== undefined) out.top_p = request.topP;
  if (request.seed !== undefined) out.seed = request.seed;
  if (request.presencePenalty !== undefined) out.presence_penalty = request.presencePenalty;
  if (request.frequencyPenalty !== undefined) out.frequency_penalty = request.frequencyPenalty;
  if (request.stop !== undefined && request.stop.sequences.length > 0) out.stop = request.stop.sequences;
  return out;
}

/**
 * The shared answer model holds one candidate and no log probabilities, so asking a Chat
 * upstream for them would bring back what cannot reach the client.
 */
function refuseUncarried(request: IrRequest): void {
  if (request.candidates !== undefined && request.candidates.count > 1) throw refusal(request.candidates.param, "More than one candidate answer", CHAT);
  if (request.logprobs !== undefined) throw refusal(request.logprobs.param, "Log probabilities", CHAT);
}

/** One system message: a string when there is one text, text parts when there are several. */
function systemMessages(system: string[]): JsonObject[] {
  if (system.length === 0) return [];
  return [{ role: "system", content: system.length === 1 ? system[0] : system.map((text) => ({ type: "text", text })) }];
}

/** Tools are sent with their choice; Chat refuses a tool choice or parallel flag without tools. */
function toolFields(request: IrRequest): JsonObject {
  const out: JsonObject = { tools: request.tools.map(tool) };
  if (request.toolChoice !== undefined) out.tool_choice = toolChoice(request.toolChoice);
  // True is Chat's default: only the request for one call at a time is said.
  if (request.parallelToolCalls === false) out.parallel_tool_calls = false;
  return out;
}

function tool(t: IrTool): JsonObject {
  const fn: JsonObject = { name: t.name };
  if (t.description !== undefined) fn.description = t.description;
  fn.parameters = t.parameters;
  // Strict only where OpenAI can enforce the schema (openai-strict.ts); absent is Chat's loose default.
  if (t.strict !== undefined) fn.strict = strictFor(t.strict, t.parameters);
  return { type: "function", function: fn };
}

function toolChoice(choice: IrToolChoice): unknown {
  return choice.type === "tool" ? { type: "function", function: { name: choice.name } } : choice.type;
}

/**
 * The effort itself when the client spoke in efforts (Chat has every word the model
 * has), else its budget's effort. A budget of 0 or -1 sends none: Chat models
 * disagree on the word for "no reasoning" (`minimal`, `none`, or no reasoning_effort at
 * all), so the model's own default is kept.
 */
function reasoningEffort(reasoning: IrReasoning): string | undefined {
  if (reasoning.effort !== undefined) return reasoning.effort;
  if (reasoning.budget !== undefined && reasoning.budget > 0) return effortOfBudget(reasoning.budget);
  return undefined;
}

/**
 * Chat's schema format needs a name and is loose unless strict. Other formats enforce
 * their schemas, so one is sent strict where OpenAI can enforce it too (openai-strict.ts),
 * else loose rather than refused by the upstream.
 */
function responseFormat(output: IrOutputFormat): JsonObject | undefined {
  switch (output.type) {
    case "text": return undefined;
    case "json": return { type: "json_object" };
    case "json_schema": {
      const spec: JsonObject = { name: output.name ?? "output" };
      if (output.description !== undefined) spec.description = output.description;
      spec.schema = output.schema;
      spec.strict = strictFor(output.strict, output.schema);
      return { type: "json_schema", json_schema: spec };
    }
  }
}

function messagesOfTurn(turn: IrMessage): JsonObject[] {
  return turn.role === "assistant" ? [assistantMessage(turn)] : userMessages(turn);
}

/**
 * A user turn: its tool results first, as `tool` messages (Chat wants them right after
 * the assistant's calls), then one user message of the images from the results and the
 * turn's other parts. A lone text is sent as a string.
 */
function userMessages(turn: IrMessage): JsonObject[] {
  const out: JsonObject[] = [];
  const parts: JsonObject[] = [];
  for (const part of turn.parts) {
    if (part.type === "tool_result") {
      const result = toolResult(part, turn.param);
      out.push({ role: "tool", tool_call_id: part.callId, content: result.text });
      parts.push(...result.images);
    } else parts.push(userPart(part, turn.param));
  }
  if (parts.length === 1 && parts[0]!.type === "text") out.push({ role: "user", content: parts[0]!.text });
  else if (parts.length > 0) out.push({ role: "user", content: parts });
  return out;
}

/** A tool message carries text only: texts joined by newlines, images kept for the user message after. */
function toolResult(result: IrToolResult, param: Param): { text: string; images: JsonObject[] } {
  const texts: string[] = [];
  const images: JsonObject[] = [];
  for (const part of result.content) {
    const text = part.type === "text" ? part.text : part.type === "document" ? documentText(part) : undefined;
    if (text !== undefined) texts.push(text);
    else if (part.type === "image") images.push(imagePart(part));
    else throw refusal(part.type === "document" ? part.param : param, `A tool result holding a ${part.type} part`, CHAT);
  }
  return { text: texts.join("\n"), images };
}

function userPart(part: IrPart, param: Param): JsonObject {
  switch (part.type) {
    case "text": return { type: "text", text: part.text };
    case "image": return imagePart(part);
    case "document": return documentPart(part);
  }
  throw refusal(param, `A user part of type ${part.type}`, CHAT);
}

function imagePart(part: Extract<IrPart, { type: "image" }>): JsonObject {
  const source = part.source;
  if (source.kind === "base64") return { type: "image_url", image_url: { url: dataUrl(source.mediaType, source.data) } };
  if (source.kind === "url") return { type: "image_url", image_url: { url: source.url } };
  throw refusal(part.param, "An image given as text", CHAT);
}

type IrDocument = Extract<IrPart, { type: "document" }>;

/** A text document's text (a text source, or `text/plain` data, which the model holds as plain text). */
function documentText(part: IrDocument): string | undefined {
  const source = part.source;
  if (source.kind === "text") return source.text;
  return source.kind === "base64" && source.mediaType === "text/plain" ? source.data : undefined;
}

/** An inline PDF travels as a `file` part; a text document as text; Chat cannot fetch a document by URL. */
function documentPart(part: IrDocument): JsonObject {
  const text = documentText(part);
  if (text !== undefined) return { type: "text", text };
  const source = part.source;
  if (source.kind === "base64" && source.mediaType === "application/pdf") {
    return { type: "file", file: { filename: part.title ?? "document.pdf", file_data: dataUrl(source.mediaType, source.data) } };
  }
  throw refusal(part.param, source.kind === "base64" ? `A document of type ${source.mediaType}` : "A document given by URL", CHAT);
}

/**
 * An assistant turn: texts joined as `content` (null when the turn is only tool calls),
 * tool calls as `tool_calls`. Thinking is dropped: its signature means nothing to a Chat
 * upstream, and OpenAI-compatible servers refuse reasoning sent back.
 */
function assistantMessage(turn: IrMessage): JsonObject {
  let text = "";
  const calls: JsonObject[] = [];
  for (const part of turn.parts) {
    if (part.type === "text") text += part.text;
    else if (part.type === "tool_call") calls.push({ id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } });
    else if (part.type !== "thinking" && part.type !== "redacted_thinking") throw refusal(turn.param, `An assistant part of type ${part.type}`, CHAT);
  }
  const message: JsonObject = { role: "assistant", content: text === "" && calls.length > 0 ? null : text };
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

/**
 * The shared model written as a Gemini generateContent request (the upstream's). The
 * model and the stream flag go in the path (`target()`), never in the body.
 *
 * Function calls need Gemini's `thoughtSignature` back (Gemini 3 answers 400 without
 * one on the first call of each step of the current turn). It comes from the call's own
 * signature when Gemini made it (a Gemini client's history), else from the call id the
 * answer reader encoded it in (call-ids.ts) for a client of another format. A step whose
 * calls have none (history made by another provider, or by hand) gets Google's
 * documented placeholder on its first call, "skip_thought_signature_validator", which
 * the thought-signatures guide (https://ai.google.dev/gemini-api/docs/thought-signatures,
 * FAQ on transferring a conversation from another model) gives for exactly this case.
 */
import { badRequest } from "../../../../core/errors.ts";
import { isObject, type JsonObject } from "../../../json.ts";
import { refusal } from "../../codec.ts";
import { parseDataUrl } from "../../content.ts";
import type { IrMessage, IrPart, IrRequest, IrSource, IrToolCall, IrToolResult } from "../../ir.ts";
import { emptyConversation } from "../../empty-conversation.ts";
import { budgetOfEffort } from "../../reasoning.ts";
import type { RequestContext } from "../../translator.ts";
import { originOfCallId } from "./call-ids.ts";
import { NAME } from "./names.ts";
import { geminiSignature } from "./parts-write.ts";

/** Gemini's bound on stop sequences ("up to 5"; more is a 400). */
const MAX_STOP_SEQUENCES = 5;

/**
 * Gemini could be asked for several candidates and log probabilities, but the shared
 * answer brings back one candidate and no log probabilities: the client would pay for
 * what it never sees. Refused, like every other format's writer does. More stop
 * sequences than Gemini takes (an Anthropic client's list has no bound) are refused
 * too: leaving one out would let the answer run past where the client asked it to end.
 */
function refuseUnanswerable(request: IrRequest): void {
  if (request.candidates !== undefined && request.candidates.count > 1) throw refusal(request.candidates.param, "More than one candidate answer", NAME);
  if (request.logprobs !== undefined) throw refusal(request.logprobs.param, "Log probabilities", NAME);
  if (request.stop !== undefined && request.stop.sequences.length > MAX_STOP_SEQUENCES) throw refusal(request.stop.param, `More than ${MAX_STOP_SEQUENCES} stop sequences`, NAME);
}

export const PLACEHOLDER_SIGNATURE = "skip_thought_signature_validator";


export function writeGeminiRequest(request: IrRequest, _context: RequestContext): JsonObject {
  refuseUnanswerable(request);
  const out: JsonObject = { contents: contents(request.messages) };
  if ((out.contents as JsonObject[]).length === 0) throw emptyConversation(request, NAME);
  if (request.system.length > 0) out.systemInstruction = { parts: request.system.map((text) => ({ text })) };
  if (request.tools.length > 0) {
    out.tools = [{ functionDeclarations: request.tools.map((t) => ({ name: t.name, ...(t.description !== undefined && { description: t.description }), parametersJsonSchema: t.parameters })) }];
    // A calling mode means something only where functions are declared.
    const choice = toolConfig(request);
    if (choice !== undefined) out.toolConfig = choice;
  }
  const config = generationConfig(request);
  if (Object.keys(config).length > 0) out.generationConfig = config;
  return out;
}

function toolConfig(request: IrRequest): JsonObject | undefined {
  const choice = request.toolChoice;
  if (choice === undefined) return undefined;
  switch (choice.type) {
    case "auto": return { functionCallingConfig: { mode: "AUTO" } };
    case "required": return { functionCallingConfig: { mode: "ANY" } };
    case "none": return { functionCallingConfig: { mode: "NONE" } };
    case "tool": return { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [choice.name] } };
  }
}

function generationConfig(request: IrRequest): JsonObject {
  const config: JsonObject = {};
  const put = (key: string, value: unknown) => {
    if (value !== undefined) config[key] = value;
  };
  put("maxOutputTokens", request.maxTokens);
  put("temperature", request.temperature);
  put("topP", request.topP);
  put("topK", request.topK);
  put("stopSequences", request.stop?.sequences);
  put("seed", request.seed);
  // Presence and frequency penalties are dropped: Gemini 2.5 and later answer 400
  // ("Penalty is not enabled for models/…"), and they are hints, as other writers drop them.
  if (request.output?.type === "json") config.responseMimeType = "application/json";
  if (request.output?.type === "json_schema") {
    config.responseMimeType = "application/json";
    config.responseJsonSchema = request.output.schema;
  }
  put("thinkingConfig", thinkingConfig(request));
  return config;
}

/**
 * The largest thinking budget every Gemini 2.5 model takes (Flash: 0 to 24576; Pro: 128
 * to 32768); above a model's bound Gemini answers 400 ("thinking_budget is out of range").
 */
const MAX_THINKING_BUDGET = 24576;

/**
 * A budget as given (0 off, -1 dynamic), capped at MAX_THINKING_BUDGET (a budget is a
 * ceiling the model may not reach, so capping it is harmless where refusing it is not);
 * an effort through the shared table, `none` and `minimal` as 0 (no thinking).
 * `thinkingBudget` is understood by Gemini 2.5 and 3 alike.
 */
function thinkingConfig(request: IrRequest): JsonObject | undefined {
  const reasoning = request.reasoning;
  if (reasoning === undefined) return undefined;
  const out: JsonObject = {};
  const budget = reasoning.budget ?? (reasoning.effort === undefined ? undefined : (budgetOfEffort(reasoning.effort) ?? 0));
  if (budget !== undefined) out.thinkingBudget = Math.min(budget, MAX_THINKING_BUDGET);
  if (reasoning.visible === true) out.includeThoughts = true;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Turns in Gemini's roles, consecutive turns of one role joined (tool results and a user's text arrive as two IR turns). */
function contents(messages: IrMessage[]): JsonObject[] {
  const names = callNames(messages);
  const out: { role: string; parts: JsonObject[] }[] = [];
  for (const message of messages) {
    const role = message.role === "assistant" ? "model" : "user";
    const parts = message.role === "assistant" ? modelParts(message) : userParts(message, names);
    if (parts.length === 0) continue;
    const last = out.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else out.push({ role, parts });
  }
  return out;
}

/** Each call's function name by id, for results whose format does not name the function (Chat's tool messages). */
function callNames(messages: IrMessage[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const m of messages) for (const p of m.parts) if (p.type === "tool_call") names.set(p.id, p.name);
  return names;
}

function modelParts(message: IrMessage): JsonObject[] {
  const parts: JsonObject[] = [];
  let firstCall: JsonObject | undefined;
  let signed = false;
  message.parts.forEach((part, k) => {
    if (part.type === "tool_call") {
      const written = functionCall(part, `${message.param}.parts[${k}]`);
      firstCall ??= written;
      signed ||= written.thoughtSignature !== undefined;
      parts.push(written);
    } else {
      const written = modelPart(part, message.param);
      if (written !== undefined) parts.push(written);
    }
  });
  if (firstCall !== undefined && !signed) firstCall.thoughtSignature = PLACEHOLDER_SIGNATURE;
  return parts;
}

/**
 * Text, and thoughts Gemini made (with their signatures). Thinking from another provider
 * is dropped: its signature means nothing to Gemini, which takes no unsigned thoughts back.
 */
function modelPart(part: IrPart, param: string): JsonObject | undefined {
  switch (part.type) {
    case "text": return part.text === "" ? undefined : { text: part.text };
    case "thinking": {
      const signature = geminiSignature(part.signature);
      return signature === undefined ? undefined : { text: part.text, thought: true, thoughtSignature: signature };
    }
    case "redacted_thinking": return undefined;
  }
  return userPart(part, param);
}

function functionCall(call: IrToolCall, param: string): JsonObject {
  const origin = originOfCallId(call.id);
  const fn: JsonObject = { name: call.name, args: argumentsOf(call, param) };
  if (origin?.id !== undefined) fn.id = origin.id;
  const part: JsonObject = { functionCall: fn };
  const signature = geminiSignature(call.signature) ?? origin?.signature;
  if (signature !== undefined) part.thoughtSignature = signature;
  return part;
}

function argumentsOf(call: IrToolCall, param: string): JsonObject {
  if (call.arguments.trim() === "") return {};
  try {
    const args: unknown = JSON.parse(call.arguments);
    if (isObject(args)) return args;
  } catch {
    // Reported below.
  }
  throw badRequest(`the arguments of call "${call.id}" are not a JSON object`, param);
}

/** A user turn: function responses first where the turn has them, then media that tool results carried, then the rest. */
function userParts(message: IrMessage, names: Map<string, string>): JsonObject[] {
  const responses: JsonObject[] = [];
  const rest: JsonObject[] = [];
  message.parts.forEach((part, k) => {
    const param = `${message.param}.parts[${k}]`;
    if (part.type === "tool_result") {
      responses.push(functionResponse(part, names, param));
      // Media in a result follow as user parts: not every Gemini model takes them inside a response.
      for (const media of part.content) if (media.type !== "text") rest.push(userPart(media, param));
    } else if (part.type === "text" && part.text === "") {
      // Empty text is left out, as in model turns: Gemini (Vertex) refuses "an empty text parameter".
    } else if (part.type !== "thinking" && part.type !== "redacted_thinking") rest.push(userPart(part, param));
  });
  return [...responses, ...rest];
}

/**
 * A result as `functionResponse.response`: its text when that is a JSON object, else
 * `{result: text}` (or `{error: text}` for a failure, the keys Gemini's docs give).
 */
function functionResponse(result: IrToolResult, names: Map<string, string>, param: string): JsonObject {
  const name = result.name ?? names.get(result.callId);
  if (name === undefined) throw badRequest(`the result of call "${result.callId}" answers no call in the conversation, and Gemini answers calls by name`, param);
  const text = result.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
  const fn: JsonObject = { name, response: responseObject(text, result.isError === true) };
  const id = originOfCallId(result.callId)?.id;
  if (id !== undefined) fn.id = id;
  return { functionResponse: fn };
}

function responseObject(text: string, isError: boolean): JsonObject {
  try {
    const value: unknown = JSON.parse(text);
    if (isObject(value)) return value;
  } catch {
    // Not JSON: wrapped below.
  }
  return isError ? { error: text } : { result: text };
}

/** Text, images and documents of a user turn. */
function userPart(part: IrPart, param: string): JsonObject {
  switch (part.type) {
    case "text": return { text: part.text };
    case "image": return media(part.source, part.param, "An image");
    case "document":
      if (part.source.kind === "text") return { text: part.source.text };
      // Gemini reads PDFs as documents; a Word file or a spreadsheet (OpenAI reads them) it refuses.
      if (part.source.kind === "base64" && part.source.mediaType !== "application/pdf" && !part.source.mediaType.startsWith("text/")) {
        throw refusal(part.param, `A document of type ${part.source.mediaType}`, NAME);
      }
      return media(part.source, part.param, "A document");
  }
  throw badRequest(`a ${part.type} part cannot be in a user turn`, param);
}

/** Base64 (and data URLs) as `inlineData`; other URLs as `fileData`, whose media type Gemini requires. */
function media(source: IrSource, param: string, what: string): JsonObject {
  if (source.kind === "base64") return { inlineData: { mimeType: source.mediaType, data: source.data } };
  if (source.kind === "text") return { text: source.text };
  const data = parseDataUrl(source.url);
  if (data !== undefined) return { inlineData: { mimeType: data.mediaType, data: data.data } };
  const mimeType = source.mediaType ?? mediaTypeOfUrl(source.url);
  if (mimeType === undefined) throw refusal(param, `${what} at a URL whose media type cannot be told from its name`, NAME);
  return { fileData: { mimeType, fileUri: source.url } };
}

const MEDIA_TYPE_OF_EXTENSION: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  heic: "image/heic",
  heif: "image/heif",
  pdf: "application/pdf",
};

function mediaTypeOfUrl(url: string): string | undefined {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return undefined;
  }
  const extension = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase();
  return extension === undefined ? undefined : MEDIA_TYPE_OF_EXTENSION[extension];
}

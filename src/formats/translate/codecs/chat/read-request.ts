/**
 * A Chat Completions request read into the shared model (the client's side). System and
 * developer messages are hoisted into `system`; `tool` messages become `tool_result`
 * parts of a user turn; consecutive turns of one role merge. What the model cannot hold
 * (OpenAI-hosted tools, audio, legacy functions, files stored at OpenAI) is refused;
 * malformed input is a plain 400 naming the parameter.
 */
import { badRequest } from "../../../../core/errors.ts";
import { isObject, type JsonObject } from "../../../json.ts";
import { refusal, type ReadContext } from "../../codec.ts";
import { parseDataUrl } from "../../content.ts";
import type { Effort, IrMessage, IrOutputFormat, IrPart, IrReasoning, IrRequest, IrTool, IrToolChoice, Param } from "../../ir.ts";

/** Chat's reasoning efforts (openai-node's `ReasoningEffort`): the model's own words. */
const EFFORTS: readonly Effort[] = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];

/** Present and not null: Chat clients send `null` for "not set". */
const given = (v: unknown) => v !== undefined && v !== null;

export function readChatRequest(body: JsonObject, context: ReadContext): IrRequest {
  refuseUnheld(body, context.upstream);
  return {
    model: context.model,
    stream: context.stream,
    ...conversation(body.messages, context.upstream),
    tools: tools(body.tools, context.upstream),
    ...sampling(body),
    ...toolOptions(body, context.upstream),
    ...answerOptions(body),
  };
}

/** The output bound (`max_completion_tokens`, or the older `max_tokens`), sampling numbers and stop sequences. */
function sampling(body: JsonObject): Partial<IrRequest> {
  const out: Partial<IrRequest> = {};
  const maxTokens = optionalNumber(body, given(body.max_completion_tokens) ? "max_completion_tokens" : "max_tokens");
  if (maxTokens !== undefined) out.maxTokens = maxTokens;
  for (const [key, param] of SAMPLING) {
    const value = optionalNumber(body, param);
    if (value !== undefined) out[key] = value;
  }
  const stop = stopSequences(body.stop);
  if (stop !== undefined) out.stop = stop;
  return out;
}

function toolOptions(body: JsonObject, upstream: string): Partial<IrRequest> {
  const out: Partial<IrRequest> = {};
  if (given(body.tool_choice)) out.toolChoice = toolChoice(body.tool_choice, upstream);
  if (typeof body.parallel_tool_calls === "boolean") out.parallelToolCalls = body.parallel_tool_calls;
  return out;
}

/** What kind of answer is asked for: reasoning, format, candidates, log probabilities, and whose it is. */
function answerOptions(body: JsonObject): Partial<IrRequest> {
  const out: Partial<IrRequest> = {};
  const reasoning = reasoningOf(body.reasoning_effort);
  if (reasoning !== undefined) out.reasoning = reasoning;
  const output = outputFormat(body.response_format);
  if (output !== undefined) out.output = output;
  const user = body.safety_identifier ?? body.user;
  if (typeof user === "string" && user !== "") out.user = user;
  const candidates = optionalCount(body, "n");
  if (candidates !== undefined && candidates > 1) out.candidates = { count: candidates, param: "n" };
  const top = optionalCount(body, "top_logprobs");
  if (body.logprobs === true) out.logprobs = { top: top ?? 0, param: "logprobs" };
  return out;
}

/** Sampling numbers the model holds as they are. */
const SAMPLING: ReadonlyArray<["temperature" | "topP" | "seed" | "presencePenalty" | "frequencyPenalty", string]> = [
  ["temperature", "temperature"],
  ["topP", "top_p"],
  ["seed", "seed"],
  ["presencePenalty", "presence_penalty"],
  ["frequencyPenalty", "frequency_penalty"],
];

function optionalNumber(body: JsonObject, param: string): number | undefined {
  const value = body[param];
  if (!given(value)) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) throw badRequest(`${param} must be a number`, param);
  return value;
}

function optionalCount(body: JsonObject, param: string): number | undefined {
  const value = optionalNumber(body, param);
  if (value !== undefined && (!Number.isInteger(value) || value < 0)) throw badRequest(`${param} must be a whole number`, param);
  return value;
}

/** Features of OpenAI's own that the shared model has no place for, whatever the upstream. */
function refuseUnheld(body: JsonObject, upstream: string): void {
  if (isObject(body.logit_bias) && Object.keys(body.logit_bias).length > 0) throw refusal("logit_bias", "A logit bias", upstream);
  if (given(body.audio)) throw refusal("audio", "Audio output", upstream);
  if (Array.isArray(body.modalities) && body.modalities.some((m) => m !== "text")) throw refusal("modalities", "Output modalities other than text", upstream);
  if (given(body.web_search_options)) throw refusal("web_search_options", "OpenAI's hosted web search", upstream);
  if (given(body.functions)) throw refusal("functions", "Legacy functions (use tools)", upstream);
  if (given(body.function_call)) throw refusal("function_call", "Legacy function_call (use tool_choice)", upstream);
}

function stopSequences(stop: unknown): IrRequest["stop"] {
  if (!given(stop)) return undefined;
  if (typeof stop === "string") return { sequences: [stop], param: "stop" };
  if (!Array.isArray(stop) || stop.some((s) => typeof s !== "string")) throw badRequest("stop must be a string or an array of strings", "stop");
  return stop.length > 0 ? { sequences: stop as string[], param: "stop" } : undefined;
}

function reasoningOf(effort: unknown): IrReasoning | undefined {
  if (!given(effort)) return undefined;
  if (typeof effort !== "string" || !EFFORTS.includes(effort as Effort)) throw badRequest(`reasoning_effort must be one of ${EFFORTS.join(", ")}`, "reasoning_effort");
  return { effort: effort as Effort };
}

function outputFormat(format: unknown): IrOutputFormat | undefined {
  if (!given(format)) return undefined;
  if (!isObject(format)) throw badRequest("response_format must be an object", "response_format");
  switch (format.type) {
    case "text": return { type: "text" };
    case "json_object": return { type: "json", param: "response_format" };
    case "json_schema": return jsonSchema(format.json_schema);
  }
  throw badRequest(`unknown response_format type ${JSON.stringify(format.type)}`, "response_format.type");
}

/** Chat's `strict` defaults to false: an absent one is written down as false. */
function jsonSchema(spec: unknown): IrOutputFormat {
  if (!isObject(spec) || typeof spec.name !== "string") throw badRequest("response_format.json_schema must be an object with a name", "response_format.json_schema");
  if (given(spec.schema) && !isObject(spec.schema)) throw badRequest("response_format.json_schema.schema must be an object", "response_format.json_schema.schema");
  const out: IrOutputFormat = { type: "json_schema", name: spec.name, schema: isObject(spec.schema) ? spec.schema : {}, strict: spec.strict === true, param: "response_format" };
  if (typeof spec.description === "string") out.description = spec.description;
  return out;
}

function tools(list: unknown, upstream: string): IrTool[] {
  if (!given(list)) return [];
  if (!Array.isArray(list)) throw badRequest("tools must be an array", "tools");
  return list.map((t, i) => tool(t, `tools[${i}]`, upstream));
}

function tool(t: unknown, param: Param, upstream: string): IrTool {
  if (!isObject(t)) throw badRequest("each tool must be an object", param);
  // Hosted tools (file_search, web_search, code_interpreter…) and custom grammar tools are OpenAI's own.
  if (t.type !== "function") throw refusal(`${param}.type`, `The OpenAI tool type ${JSON.stringify(t.type)}`, upstream);
  const fn = t.function;
  if (!isObject(fn) || typeof fn.name !== "string") throw badRequest("a function tool needs function.name", `${param}.function`);
  const out: IrTool = { name: fn.name, parameters: isObject(fn.parameters) ? fn.parameters : { type: "object", properties: {} }, param };
  if (typeof fn.description === "string") out.description = fn.description;
  if (typeof fn.strict === "boolean") out.strict = fn.strict;
  return out;
}

function toolChoice(choice: unknown, upstream: string): IrToolChoice {
  switch (choice) {
    case "auto": return { type: "auto" };
    case "required": return { type: "required" };
    case "none": return { type: "none" };
  }
  if (isObject(choice) && choice.type === "function") {
    const name = isObject(choice.function) ? choice.function.name : undefined;
    if (typeof name !== "string") throw badRequest("tool_choice.function.name must be a string", "tool_choice.function.name");
    return { type: "tool", name, param: "tool_choice" };
  }
  // `allowed_tools` and `custom` choices name OpenAI's own mechanisms.
  if (isObject(choice) && typeof choice.type === "string") throw refusal("tool_choice", `The tool choice ${JSON.stringify(choice.type)}`, upstream);
  throw badRequest("tool_choice must be auto, required, none or a function", "tool_choice");
}

/** The conversation: system text hoisted, then user and assistant turns (tool results in user turns). */
function conversation(messages: unknown, upstream: string): { system: string[]; messages: IrMessage[] } {
  if (!Array.isArray(messages)) throw badRequest("messages must be an array", "messages");
  const system: string[] = [];
  const turns: IrMessage[] = [];
  /** Call id → function name, so a tool message's result can name its function (Gemini answers by name). */
  const callNames = new Map<string, string>();
  const add = (role: IrMessage["role"], parts: IrPart[], param: Param) => {
    if (parts.length === 0) return;
    const last = turns.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else turns.push({ role, parts, param });
  };
  messages.forEach((m, i) => {
    const param = `messages[${i}]`;
    if (!isObject(m)) throw badRequest("each message must be an object", param);
    switch (m.role) {
      case "system":
      case "developer":
        system.push(...systemTexts(m.content, `${param}.content`));
        return;
      case "user":
        add("user", userParts(m.content, `${param}.content`, upstream), param);
        return;
      case "assistant": {
        const parts = assistantParts(m, param, upstream);
        for (const part of parts) if (part.type === "tool_call") callNames.set(part.id, part.name);
        add("assistant", parts, param);
        return;
      }
      case "tool":
        add("user", [toolResult(m, param, callNames)], param);
        return;
      case "function":
        throw refusal(`${param}.role`, "A legacy function message (use tool messages)", upstream);
    }
    throw badRequest(`unknown message role ${JSON.stringify(m.role)}`, `${param}.role`);
  });
  return { system, messages: turns };
}

/** Text parts only: each part stays its own system entry; an empty string adds none. */
function systemTexts(content: unknown, param: Param): string[] {
  if (typeof content === "string") return content === "" ? [] : [content];
  return textParts(content, param).map((p) => p.text);
}

function textParts(content: unknown, param: Param): Array<{ type: "text"; text: string }> {
  if (!Array.isArray(content)) throw badRequest("content must be a string or an array", param);
  return content.map((part, j) => {
    if (!isObject(part) || part.type !== "text" || typeof part.text !== "string") throw badRequest("only text parts are allowed here", `${param}[${j}]`);
    return { type: "text", text: part.text };
  });
}

function userParts(content: unknown, param: Param, upstream: string): IrPart[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw badRequest("content must be a string or an array", param);
  return content.map((part, j) => userPart(part, `${param}[${j}]`, upstream));
}

function userPart(part: unknown, param: Param, upstream: string): IrPart {
  if (!isObject(part)) throw badRequest("each content part must be an object", param);
  switch (part.type) {
    case "text":
      if (typeof part.text !== "string") throw badRequest("text must be a string", `${param}.text`);
      return { type: "text", text: part.text };
    case "image_url": return image(part, param, upstream);
    case "file": return file(part, param, upstream);
  }
  // `input_audio` and anything newer.
  throw refusal(`${param}.type`, `A content part of type ${JSON.stringify(part.type)}`, upstream);
}

/** A data URL becomes inline base64, any other URL a URL source; `detail` has no counterpart and is dropped. */
function image(part: JsonObject, param: Param, upstream: string): IrPart {
  const url = isObject(part.image_url) ? part.image_url.url : undefined;
  if (typeof url !== "string") throw badRequest("image_url.url must be a string", `${param}.image_url.url`);
  const inline = parseDataUrl(url);
  if (inline) return { type: "image", source: { kind: "base64", mediaType: inline.mediaType, data: inline.data }, param };
  if (url.startsWith("data:")) throw refusal(`${param}.image_url.url`, "A data URL that is not base64", upstream);
  return { type: "image", source: { kind: "url", url }, param };
}

/** An inline PDF becomes a document; a `file_id` names a file stored at OpenAI, which cannot travel. */
function file(part: JsonObject, param: Param, upstream: string): IrPart {
  const f = isObject(part.file) ? part.file : {};
  const inline = typeof f.file_data === "string" ? parseDataUrl(f.file_data) : undefined;
  if (inline?.mediaType !== "application/pdf") throw refusal(`${param}.file`, "A file other than an inline PDF", upstream);
  const document: IrPart = { type: "document", source: { kind: "base64", mediaType: inline.mediaType, data: inline.data }, param };
  if (typeof f.filename === "string" && f.filename !== "") document.title = f.filename;
  return document;
}

/**
 * An assistant message: its text (and refusal text), then its tool calls. Reasoning sent
 * back (`reasoning_content`, `reasoning`) is dropped: it carries no signature, and
 * OpenAI-compatible servers do not take it back either.
 */
function assistantParts(m: JsonObject, param: Param, upstream: string): IrPart[] {
  if (given(m.function_call)) throw refusal(`${param}.function_call`, "A legacy function call", upstream);
  if (given(m.audio)) throw refusal(`${param}.audio`, "An earlier audio answer", upstream);
  const parts: IrPart[] = assistantTexts(m.content, `${param}.content`);
  if (given(m.tool_calls)) {
    if (!Array.isArray(m.tool_calls)) throw badRequest("tool_calls must be an array", `${param}.tool_calls`);
    m.tool_calls.forEach((call, j) => parts.push(toolCall(call, `${param}.tool_calls[${j}]`, upstream)));
  }
  return parts;
}

/** Empty text is left out: an assistant turn of tool calls only sends content "" or null. */
function assistantTexts(content: unknown, param: Param): IrPart[] {
  if (!given(content)) return [];
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw badRequest("content must be a string or an array", param);
  const parts: IrPart[] = [];
  content.forEach((part, j) => {
    const text = isObject(part) ? (part.type === "text" ? part.text : part.type === "refusal" ? part.refusal : undefined) : undefined;
    if (typeof text !== "string") throw badRequest("assistant content parts must be text or refusal", `${param}[${j}]`);
    if (text !== "") parts.push({ type: "text", text });
  });
  return parts;
}

function toolCall(call: unknown, param: Param, upstream: string): IrPart {
  if (!isObject(call)) throw badRequest("each tool call must be an object", param);
  if (call.type !== "function") throw refusal(`${param}.type`, "A tool call that is not a function call", upstream);
  const fn = isObject(call.function) ? call.function : {};
  if (typeof call.id !== "string" || typeof fn.name !== "string") throw badRequest("a tool call needs an id and function.name", param);
  return { type: "tool_call", id: call.id, name: fn.name, arguments: argumentsOf(fn.arguments, `${param}.function.arguments`) };
}

/** Arguments must be a JSON object (other formats carry them parsed); none at all reads as `{}`. */
function argumentsOf(args: unknown, param: Param): string {
  if (!given(args) || args === "") return "{}";
  if (typeof args === "string") {
    try {
      if (isObject(JSON.parse(args))) return args;
    } catch {
      // reported below
    }
  }
  throw badRequest("tool call arguments must be a JSON object", param);
}

function toolResult(m: JsonObject, param: Param, callNames: Map<string, string>): IrPart {
  if (typeof m.tool_call_id !== "string") throw badRequest("a tool message needs a tool_call_id", `${param}.tool_call_id`);
  const content = typeof m.content === "string" ? [{ type: "text" as const, text: m.content }] : textParts(m.content, `${param}.content`);
  const result: IrPart = { type: "tool_result", callId: m.tool_call_id, content };
  const name = callNames.get(m.tool_call_id);
  if (name !== undefined) result.name = name;
  return result;
}

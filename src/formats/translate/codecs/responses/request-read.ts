/**
 * A Responses client's request (POST /v1/responses) read into the shared model. What
 * needs server-side state the upstream does not have (a previous response, a stored
 * conversation or prompt) and OpenAI's hosted tools are refused (a background run is refused
 * for every upstream: read-call.ts); hints
 * with no counterpart are dropped (docs/translation.md has the table).
 */
import { badRequest } from "../../../../core/errors.ts";
import { isObject, type JsonObject } from "../../../json.ts";
import { refusal, type ReadContext } from "../../codec.ts";
import { parseDataUrl } from "../../content.ts";
import type { Effort, IrMessage, IrOutputFormat, IrPart, IrReasoning, IrRequest, IrSource, IrTool, IrToolChoice, IrToolResult, Param } from "../../ir.ts";
import { RESPONSES_EFFORTS } from "./names.ts";
import { reasoningPart } from "./reasoning-item.ts";
import { flatName } from "./namespaces.ts";

export function readResponsesRequest(body: JsonObject, context: ReadContext): IrRequest {
  refuseServerState(body, context.upstream);
  const request: IrRequest = { model: context.model, stream: context.stream, system: [], messages: [], tools: [] };
  if (body.instructions !== undefined && body.instructions !== null) {
    if (typeof body.instructions !== "string") throw badRequest("instructions must be a string", "instructions");
    if (body.instructions !== "") request.system.push(body.instructions);
  }
  readInput(body.input, request, context.upstream);
  readSampling(body, request);
  readTools(body, request, context.upstream);
  const output = outputFormat(body.text);
  if (output) request.output = output;
  const reasoning = reasoningOf(body.reasoning);
  if (reasoning) request.reasoning = reasoning;
  const user = body.safety_identifier ?? body.user;
  if (typeof user === "string" && user !== "") request.user = user;
  const logprobs = logprobsOf(body);
  if (logprobs) request.logprobs = logprobs;
  return request;
}

/** Parameters that point at state kept by OpenAI's servers, which another upstream cannot see. */
function refuseServerState(body: JsonObject, upstream: string): void {
  if (typeof body.previous_response_id === "string") throw refusal("previous_response_id", "A previous response (previous_response_id)", upstream);
  if (body.conversation !== undefined && body.conversation !== null) throw refusal("conversation", "A stored conversation", upstream);
  if (body.prompt !== undefined && body.prompt !== null) throw refusal("prompt", "A stored prompt template", upstream);
}

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

function readSampling(body: JsonObject, request: IrRequest): void {
  const numbers: Array<[string, "maxTokens" | "temperature" | "topP"]> = [["max_output_tokens", "maxTokens"], ["temperature", "temperature"], ["top_p", "topP"]];
  for (const [param, key] of numbers) {
    const value = body[param];
    if (value === undefined || value === null) continue;
    if (!isNumber(value)) throw badRequest(`${param} must be a number`, param);
    request[key] = value;
  }
}

// ——— input ———

function readInput(input: unknown, request: IrRequest, upstream: string): void {
  if (typeof input === "string") {
    request.messages.push({ role: "user", parts: [{ type: "text", text: input }], param: "input" });
    return;
  }
  if (!Array.isArray(input)) throw badRequest("input must be a string or an array of items", "input");
  const conversation = new Conversation(request);
  input.forEach((item: unknown, i) => readItem(item, `input[${i}]`, conversation, upstream));
}

/**
 * The turns being built: the assistant's reasoning, text and function calls of one turn
 * arrive as separate items and join one assistant turn; consecutive function call
 * outputs join one user turn.
 */
class Conversation {
  /** Function names by call id, for the results (Responses names only the call). */
  readonly names = new Map<string, string>();
  constructor(private readonly request: IrRequest) {}

  system(text: string): void {
    if (text !== "") this.request.system.push(text);
  }

  /** A turn of its own (a user message). */
  add(message: IrMessage): void {
    this.request.messages.push(message);
  }

  /** A part of the assistant's turn open now, or of a new one. */
  assistant(part: IrPart, param: Param): void {
    const last = this.request.messages.at(-1);
    if (last?.role === "assistant") last.parts.push(part);
    else this.request.messages.push({ role: "assistant", parts: [part], param });
  }

  /** A tool result joining the user turn of results open now, or a new one. */
  result(result: IrToolResult, param: Param): void {
    const last = this.request.messages.at(-1);
    if (last?.role === "user" && last.parts.every((p) => p.type === "tool_result")) last.parts.push(result);
    else this.request.messages.push({ role: "user", parts: [result], param });
  }
}

const ROLES = new Set(["user", "assistant", "system", "developer"]);

function readItem(item: unknown, param: Param, conversation: Conversation, upstream: string): void {
  if (!isObject(item)) throw badRequest(`${param} must be an object`, param);
  const type = item.type ?? (item.role !== undefined ? "message" : undefined);
  switch (type) {
    case "message":
      return readMessage(item, param, conversation, upstream);
    case "function_call":
      return readFunctionCall(item, param, conversation);
    case "function_call_output":
      return readFunctionCallOutput(item, param, conversation, upstream);
    case "reasoning": {
      const part = readReasoning(item, param);
      if (part) conversation.assistant(part, param);
      return;
    }
    case "item_reference":
      throw refusal(param, "A reference to a stored item (item_reference)", upstream);
  }
  if (typeof type !== "string") throw badRequest(`${param}.type is required`, `${param}.type`);
  // Hosted tools' calls and outputs (web_search_call, computer_call_output, mcp_call…) belong to tools only OpenAI runs.
  throw refusal(`${param}.type`, `The Responses input item type ${JSON.stringify(type)}`, upstream);
}

function readMessage(item: JsonObject, param: Param, conversation: Conversation, upstream: string): void {
  const role = item.role;
  if (typeof role !== "string" || !ROLES.has(role)) throw badRequest(`${param}.role must be user, assistant, system or developer`, `${param}.role`);
  const parts = contentParts(item.content, `${param}.content`, upstream);
  if (role === "system" || role === "developer") {
    conversation.system(systemText(parts, `${param}.content`));
    return;
  }
  if (role === "assistant") {
    for (const part of parts) conversation.assistant(part, param);
    return;
  }
  conversation.add({ role: "user", parts, param });
}

/** Instructions are text only. */
function systemText(parts: IrPart[], param: Param): string {
  return parts
    .map((part) => {
      if (part.type !== "text") throw badRequest(`${param} of a system or developer message must be text`, param);
      return part.text;
    })
    .join("\n\n");
}

function contentParts(content: unknown, param: Param, upstream: string): IrPart[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw badRequest(`${param} must be a string or an array of parts`, param);
  return content.map((part: unknown, j) => contentPart(part, `${param}[${j}]`, upstream));
}

function contentPart(part: unknown, param: Param, upstream: string): IrPart {
  if (!isObject(part)) throw badRequest(`${param} must be an object`, param);
  switch (part.type) {
    case "input_text":
    case "output_text":
      return { type: "text", text: stringField(part, "text", param) };
    case "refusal":
      return { type: "text", text: stringField(part, "refusal", param) };
    case "input_image":
      return imagePart(part, param, upstream);
    case "input_file":
      return filePart(part, param, upstream);
  }
  throw badRequest(`${param}.type must be input_text, input_image, input_file, output_text or refusal`, `${param}.type`);
}

function stringField(o: JsonObject, key: string, param: Param): string {
  const value = o[key];
  if (typeof value !== "string") throw badRequest(`${param}.${key} must be a string`, `${param}.${key}`);
  return value;
}

function imagePart(part: JsonObject, param: Param, upstream: string): IrPart {
  if (typeof part.file_id === "string") throw refusal(`${param}.file_id`, "An image uploaded to OpenAI (file_id)", upstream);
  const url = stringField(part, "image_url", param);
  const data = parseDataUrl(url);
  return { type: "image", source: data ? { kind: "base64", ...data } : { kind: "url", url }, param };
}

/** A file given inline (`file_data`, a data URL or bare base64 of a PDF) as a document; a plain-text file as a text document. */
function filePart(part: JsonObject, param: Param, upstream: string): IrPart {
  if (typeof part.file_id === "string") throw refusal(`${param}.file_id`, "A file uploaded to OpenAI (file_id)", upstream);
  if (typeof part.file_url === "string") throw refusal(`${param}.file_url`, "A file by URL (file_url)", upstream);
  const fileData = stringField(part, "file_data", param);
  const file = parseDataUrl(fileData) ?? { mediaType: "application/pdf", data: fileData };
  const source: IrSource = file.mediaType === "text/plain" ? { kind: "text", text: Buffer.from(file.data, "base64").toString("utf8") } : { kind: "base64", ...file };
  const document: IrPart = { type: "document", source, param };
  if (typeof part.filename === "string" && part.filename !== "") document.title = part.filename;
  return document;
}

function readFunctionCall(item: JsonObject, param: Param, conversation: Conversation): void {
  const id = stringField(item, "call_id", param);
  const fn = stringField(item, "name", param);
  const name = typeof item.namespace === "string" && item.namespace !== "" ? flatName(item.namespace, fn) : fn;
  const args = item.arguments === undefined ? "{}" : stringField(item, "arguments", param);
  conversation.names.set(id, name);
  conversation.assistant({ type: "tool_call", id, name, arguments: args }, param);
}

function readFunctionCallOutput(item: JsonObject, param: Param, conversation: Conversation, upstream: string): void {
  const callId = stringField(item, "call_id", param);
  const output = item.output;
  let content: IrPart[];
  if (typeof output === "string") content = output === "" ? [] : [{ type: "text", text: output }];
  else if (Array.isArray(output)) content = contentParts(output, `${param}.output`, upstream);
  else throw badRequest(`${param}.output must be a string or an array of parts`, `${param}.output`);
  const result: IrToolResult = { type: "tool_result", callId, content };
  const name = conversation.names.get(callId);
  if (name !== undefined) result.name = name;
  conversation.result(result, param);
}

/** A reasoning item sent back (its encrypted content must be text). */
function readReasoning(item: JsonObject, param: Param): IrPart | undefined {
  const encrypted = item.encrypted_content;
  if (encrypted !== undefined && encrypted !== null && typeof encrypted !== "string") throw badRequest(`${param}.encrypted_content must be a string`, `${param}.encrypted_content`);
  return reasoningPart(item);
}

// ——— tools ———

function readTools(body: JsonObject, request: IrRequest, upstream: string): void {
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) throw badRequest("tools must be an array", "tools");
    request.tools = body.tools.flatMap((t: unknown, i) => (isObject(t) && t.type === "namespace" ? namespaceTools(t, `tools[${i}]`, upstream) : [functionTool(t, `tools[${i}]`, upstream)]));
  }
  if (body.tool_choice !== undefined && body.tool_choice !== null) request.toolChoice = toolChoice(body.tool_choice, upstream);
  if (typeof body.parallel_tool_calls === "boolean") request.parallelToolCalls = body.parallel_tool_calls;
}

/** A namespace's functions, flat (namespaces.ts says why and how). */
function namespaceTools(t: JsonObject, param: Param, upstream: string): IrTool[] {
  const namespace = stringField(t, "name", param);
  if (!Array.isArray(t.tools)) throw badRequest(`${param}.tools must be an array`, `${param}.tools`);
  return t.tools.map((inner: unknown, j) => {
    const tool = functionTool(inner, `${param}.tools[${j}]`, upstream);
    return { ...tool, name: flatName(namespace, tool.name) };
  });
}

function functionTool(t: unknown, param: Param, upstream: string): IrTool {
  if (!isObject(t)) throw badRequest(`${param} must be an object`, param);
  // file_search, web_search*, code_interpreter, computer_use*, image_generation, mcp, local_shell, custom…: OpenAI runs them, or they are not JSON functions.
  if (t.type !== "function") throw refusal(`${param}.type`, `The Responses tool type ${JSON.stringify(t.type)}`, upstream);
  const tool: IrTool = { name: stringField(t, "name", param), parameters: { type: "object", properties: {} }, param };
  if (typeof t.description === "string") tool.description = t.description;
  if (isObject(t.parameters)) tool.parameters = t.parameters;
  else if (t.parameters !== undefined && t.parameters !== null) throw badRequest(`${param}.parameters must be an object`, `${param}.parameters`);
  if (typeof t.strict === "boolean") tool.strict = t.strict;
  return tool;
}

function toolChoice(choice: unknown, upstream: string): IrToolChoice {
  if (choice === "auto" || choice === "required" || choice === "none") return { type: choice };
  if (isObject(choice) && choice.type === "function") return { type: "tool", name: stringField(choice, "name", "tool_choice"), param: "tool_choice" };
  if (isObject(choice) && typeof choice.type === "string") throw refusal("tool_choice", `The tool choice ${JSON.stringify(choice.type)}`, upstream);
  throw badRequest("tool_choice must be auto, required, none or a function", "tool_choice");
}

// ——— output and reasoning ———

function outputFormat(text: unknown): IrOutputFormat | undefined {
  // `text.verbosity` is a hint: dropped.
  const format = isObject(text) ? text.format : undefined;
  if (format === undefined || format === null) return undefined;
  const param = "text.format";
  if (!isObject(format)) throw badRequest("text.format must be an object", param);
  switch (format.type) {
    case "text":
      return { type: "text" };
    case "json_object":
      return { type: "json", param };
    case "json_schema": {
      if (!isObject(format.schema)) throw badRequest("text.format.schema must be an object", "text.format.schema");
      const out: IrOutputFormat = { type: "json_schema", schema: format.schema, param };
      if (typeof format.name === "string") out.name = format.name;
      if (typeof format.description === "string") out.description = format.description;
      if (typeof format.strict === "boolean") out.strict = format.strict;
      return out;
    }
  }
  throw badRequest("text.format.type must be text, json_object or json_schema", "text.format.type");
}

function reasoningOf(reasoning: unknown): IrReasoning | undefined {
  if (reasoning === undefined || reasoning === null) return undefined;
  if (!isObject(reasoning)) throw badRequest("reasoning must be an object", "reasoning");
  const out: IrReasoning = {};
  const effort = reasoning.effort;
  if (effort !== undefined && effort !== null) {
    if (!RESPONSES_EFFORTS.includes(effort as Effort)) throw badRequest(`reasoning.effort must be one of ${RESPONSES_EFFORTS.join(", ")}`, "reasoning.effort");
    out.effort = effort as Effort;
  }
  // `generate_summary` is the deprecated spelling of `summary`.
  const summary = reasoning.summary ?? reasoning.generate_summary;
  if (typeof summary === "string") out.visible = true;
  return out.effort === undefined && out.visible === undefined ? undefined : out;
}

/** `top_logprobs`, or `include: ["message.output_text.logprobs"]` alone (the chosen tokens' probabilities, no alternatives). */
function logprobsOf(body: JsonObject): IrRequest["logprobs"] {
  const top = body.top_logprobs;
  if (top !== undefined && top !== null && !(isNumber(top) && Number.isInteger(top) && top >= 0)) throw badRequest("top_logprobs must be a non-negative integer", "top_logprobs");
  if (isNumber(top) && top > 0) return { top, param: "top_logprobs" };
  if (Array.isArray(body.include) && body.include.includes("message.output_text.logprobs")) return { top: 0, param: "include" };
  return undefined;
}

/**
 * An Anthropic Messages request (an Anthropic client's) read into the shared model.
 * Malformed input is a 400 naming the parameter; what the model cannot hold and that
 * changes the answer (Anthropic's server tools, MCP servers, containers, files held at
 * Anthropic) is refused; hints with no counterpart (`cache_control`, `service_tier`,
 * citations settings) are dropped. docs/translation.md has the table.
 */
import { badRequest } from "../../../../core/errors.ts";
import { isObject, type JsonObject } from "../../../json.ts";
import { refusal, type ReadContext } from "../../codec.ts";
import type { Effort, IrMessage, IrOutputFormat, IrPart, IrReasoning, IrRequest, IrSource, IrTool, IrToolChoice, IrToolResult } from "../../ir.ts";
import { anthropicSignature, EFFORTS } from "./blocks.ts";

/** Top-level fields that would change the answer and that no other format can carry. */
const REFUSED: Record<string, string> = {
  container: "A code-execution container",
  mcp_servers: "Remote MCP servers",
};
// `context_management` (clearing old tool results or thinking past a threshold) is dropped,
// not refused: it saves context, and the upstream then reads the whole conversation, which
// is what it would have read below the threshold. Claude Code sends it on every call.


export function readAnthropicRequest(body: JsonObject, context: ReadContext): IrRequest {
  const refuse = (param: string, what: string) => refusal(param, what, context.upstream);
  for (const [param, what] of Object.entries(REFUSED)) if (body[param] !== undefined && body[param] !== null) throw refuse(param, what);

  const request: IrRequest = { model: context.model, stream: context.stream, system: systemOf(body.system), messages: [], tools: toolsOf(body.tools, refuse) };
  readMessages(body.messages, request, refuse);

  const maxTokens = numberAt(body, "max_tokens");
  if (maxTokens !== undefined) request.maxTokens = maxTokens;
  const temperature = numberAt(body, "temperature");
  if (temperature !== undefined) request.temperature = temperature;
  const topP = numberAt(body, "top_p");
  if (topP !== undefined) request.topP = topP;
  const topK = numberAt(body, "top_k");
  if (topK !== undefined) request.topK = topK;
  const stop = stopSequences(body.stop_sequences);
  if (stop.length > 0) request.stop = { sequences: stop, param: "stop_sequences" };

  readToolChoice(body.tool_choice, request);
  const reasoning = reasoningOf(body);
  if (reasoning !== undefined) request.reasoning = reasoning;
  const output = outputOf(body);
  if (output !== undefined) request.output = output;
  const user = isObject(body.metadata) ? body.metadata.user_id : undefined;
  if (typeof user === "string" && user !== "") request.user = user;
  return request;
}

type Refuse = (param: string, what: string) => Error;

/** A number field, undefined when absent or null; any other type is malformed. */
function numberAt(body: JsonObject, key: string): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) throw badRequest(`${key} must be a number`, key);
  return value;
}

function stopSequences(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((s) => typeof s !== "string")) throw badRequest("stop_sequences must be an array of strings", "stop_sequences");
  return value as string[];
}

/** `system` as a string or text blocks (one instruction each); `cache_control` marks are dropped. */
function systemOf(system: unknown, param = "system"): string[] {
  if (system === undefined || system === null) return [];
  if (typeof system === "string") return system === "" ? [] : [system];
  if (!Array.isArray(system)) throw badRequest("system must be a string or an array of text blocks", param);
  return system.map((block, j) => {
    if (!isObject(block) || block.type !== "text" || typeof block.text !== "string") throw badRequest("system blocks must be text blocks", `${param}[${j}]`);
    return block.text;
  });
}

function readMessages(messages: unknown, request: IrRequest, refuse: Refuse): void {
  if (!Array.isArray(messages)) throw badRequest("messages must be an array", "messages");
  /** Tool names by call id, for the results that answer them (Gemini answers a call by name). */
  const names = new Map<string, string>();
  messages.forEach((m, i) => {
    const param = `messages[${i}]`;
    if (!isObject(m)) throw badRequest("each message must be an object", param);
    switch (m.role) {
      case "user":
      case "assistant":
        request.messages.push({ role: m.role, parts: partsOf(m.role, m.content, `${param}.content`, names, refuse), param });
        return;
      case "system":
        // Newer API versions accept system messages in the list; the model holds instructions apart.
        request.system.push(...systemOf(m.content, `${param}.content`));
        return;
    }
    throw badRequest(`unknown message role ${JSON.stringify(m.role)}`, `${param}.role`);
  });
}

function partsOf(role: IrMessage["role"], content: unknown, param: string, names: Map<string, string>, refuse: Refuse): IrPart[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw badRequest("content must be a string or an array of content blocks", param);
  return content.map((block, j) => {
    const where = `${param}[${j}]`;
    if (!isObject(block)) throw badRequest("each content block must be an object", where);
    return role === "user" ? userPart(block, where, names, refuse) : assistantPart(block, where, names, refuse);
  });
}

function textOf(block: JsonObject, param: string): string {
  if (typeof block.text !== "string") throw badRequest("text must be a string", `${param}.text`);
  return block.text;
}

function userPart(block: JsonObject, param: string, names: Map<string, string>, refuse: Refuse): IrPart {
  switch (block.type) {
    case "text": return { type: "text", text: textOf(block, param) };
    case "image": return { type: "image", source: imageSource(block.source, param, refuse), param };
    case "document": return documentPart(block, param, refuse);
    case "tool_result": return toolResult(block, param, names, refuse);
  }
  // search_result, container_upload, server tools' results…: Anthropic's own.
  throw refuse(`${param}.type`, `A user content block of type ${JSON.stringify(block.type)}`);
}

function assistantPart(block: JsonObject, param: string, names: Map<string, string>, refuse: Refuse): IrPart {
  switch (block.type) {
    case "text": return { type: "text", text: textOf(block, param) };
    case "tool_use": {
      if (typeof block.id !== "string" || typeof block.name !== "string") throw badRequest("tool_use needs a string id and name", param);
      const input = block.input ?? {};
      if (!isObject(input)) throw badRequest("tool_use input must be an object", `${param}.input`);
      names.set(block.id, block.name);
      return { type: "tool_call", id: block.id, name: block.name, arguments: JSON.stringify(input) };
    }
    case "thinking": {
      if (typeof block.thinking !== "string") throw badRequest("thinking must be a string", `${param}.thinking`);
      // An empty signature is a thinking block Anthropic did not make (a translated answer's).
      const signed = typeof block.signature === "string" && block.signature !== "";
      return signed ? { type: "thinking", text: block.thinking, signature: anthropicSignature(block.signature as string) } : { type: "thinking", text: block.thinking };
    }
    case "redacted_thinking":
      if (typeof block.data !== "string") throw badRequest("redacted_thinking data must be a string", `${param}.data`);
      return { type: "redacted_thinking", signature: anthropicSignature(block.data) };
  }
  // server_tool_use, web_search_tool_result…: blocks of tools Anthropic runs.
  throw refuse(`${param}.type`, `An assistant content block of type ${JSON.stringify(block.type)}`);
}

/** Image sources: inline base64 and URLs; files held at Anthropic (`file`) cannot travel. */
function imageSource(source: unknown, param: string, refuse: Refuse): IrSource {
  if (!isObject(source)) throw badRequest("an image needs a source", `${param}.source`);
  if (source.type === "base64" && typeof source.media_type === "string" && typeof source.data === "string") return { kind: "base64", mediaType: source.media_type, data: source.data };
  if (source.type === "url" && typeof source.url === "string") return { kind: "url", url: source.url };
  if (source.type === "base64" || source.type === "url") throw badRequest("malformed image source", `${param}.source`);
  throw refuse(`${param}.source.type`, `An image source of type ${JSON.stringify(source.type)}`);
}

/**
 * Documents: base64 PDFs and plain-text sources. A PDF by URL is fetched by Anthropic
 * and a file by id is held there; content-block sources carry Anthropic's citations
 * model: all three refused. `context` and `citations` settings are dropped.
 */
function documentPart(block: JsonObject, param: string, refuse: Refuse): IrPart {
  const source = block.source;
  if (!isObject(source)) throw badRequest("a document needs a source", `${param}.source`);
  let ir: IrSource;
  if (source.type === "base64" && typeof source.media_type === "string" && typeof source.data === "string") ir = { kind: "base64", mediaType: source.media_type, data: source.data };
  else if (source.type === "text" && typeof source.data === "string") ir = { kind: "text", text: source.data };
  else if (source.type === "base64" || source.type === "text") throw badRequest("malformed document source", `${param}.source`);
  else throw refuse(`${param}.source.type`, `A document source of type ${JSON.stringify(source.type)}`);
  const part: Extract<IrPart, { type: "document" }> = { type: "document", source: ir, param };
  if (typeof block.title === "string" && block.title !== "") part.title = block.title;
  return part;
}

function toolResult(block: JsonObject, param: string, names: Map<string, string>, refuse: Refuse): IrToolResult {
  if (typeof block.tool_use_id !== "string") throw badRequest("tool_result needs a string tool_use_id", `${param}.tool_use_id`);
  const result: IrToolResult = { type: "tool_result", callId: block.tool_use_id, content: toolResultContent(block.content, `${param}.content`, refuse) };
  const name = names.get(block.tool_use_id);
  if (name !== undefined) result.name = name;
  if (typeof block.is_error === "boolean") result.isError = block.is_error;
  return result;
}

/** A result's content: a string, or text and image blocks (search results and documents are Anthropic's citation model: refused). */
function toolResultContent(content: unknown, param: string, refuse: Refuse): IrPart[] {
  if (content === undefined || content === null) return [];
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw badRequest("tool_result content must be a string or an array", param);
  return content.map((part, k) => {
    const where = `${param}[${k}]`;
    if (!isObject(part)) throw badRequest("each content block must be an object", where);
    if (part.type === "text") return { type: "text", text: textOf(part, where) };
    if (part.type === "image") return { type: "image", source: imageSource(part.source, where, refuse), param: where };
    throw refuse(`${where}.type`, `A tool result block of type ${JSON.stringify(part.type)}`);
  });
}

function toolsOf(tools: unknown, refuse: Refuse): IrTool[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw badRequest("tools must be an array", "tools");
  return tools.map((t, i) => {
    const param = `tools[${i}]`;
    if (!isObject(t)) throw badRequest("each tool must be an object", param);
    // Anthropic's own tools (web search, bash, text editor, code execution, computer use…) run at Anthropic or follow its schemas.
    if (t.type !== undefined && t.type !== null && t.type !== "custom") throw refuse(`${param}.type`, `The Anthropic tool type ${JSON.stringify(t.type)}`);
    if (typeof t.name !== "string") throw badRequest("a tool needs a string name", `${param}.name`);
    if (t.input_schema !== undefined && !isObject(t.input_schema)) throw badRequest("input_schema must be an object", `${param}.input_schema`);
    const tool: IrTool = { name: t.name, parameters: isObject(t.input_schema) ? t.input_schema : { type: "object", properties: {} }, param };
    if (typeof t.description === "string") tool.description = t.description;
    if (typeof t.strict === "boolean") tool.strict = t.strict;
    return tool;
  });
}

function readToolChoice(choice: unknown, request: IrRequest): void {
  if (choice === undefined || choice === null) return;
  if (!isObject(choice)) throw badRequest("tool_choice must be an object", "tool_choice");
  request.toolChoice = toolChoiceOf(choice);
  if (choice.disable_parallel_tool_use === true) request.parallelToolCalls = false;
}

function toolChoiceOf(choice: JsonObject): IrToolChoice {
  switch (choice.type) {
    case "auto": return { type: "auto" };
    case "any": return { type: "required" };
    case "none": return { type: "none" };
    case "tool":
      if (typeof choice.name !== "string") throw badRequest("tool_choice.name must be a string", "tool_choice.name");
      return { type: "tool", name: choice.name, param: "tool_choice" };
  }
  throw badRequest(`unknown tool_choice type ${JSON.stringify(choice.type)}`, "tool_choice.type");
}

/**
 * `thinking` and `output_config.effort`: an enabled budget is a budget, adaptive thinking
 * lets the model decide (-1), disabled is 0; the effort is an effort. Other thinking
 * modes (`between_tools`) are hints with no counterpart, dropped. `display` says
 * whether the thinking text comes back.
 */
function reasoningOf(body: JsonObject): IrReasoning | undefined {
  const reasoning: IrReasoning = {};
  const thinking = body.thinking;
  if (thinking !== undefined && thinking !== null) {
    if (!isObject(thinking)) throw badRequest("thinking must be an object", "thinking");
    if (thinking.type === "enabled") {
      if (typeof thinking.budget_tokens !== "number") throw badRequest("thinking.budget_tokens must be a number", "thinking.budget_tokens");
      reasoning.budget = thinking.budget_tokens;
    } else if (thinking.type === "adaptive") reasoning.budget = -1;
    else if (thinking.type === "disabled") reasoning.budget = 0;
    if (thinking.display === "omitted") reasoning.visible = false;
    else if (thinking.display === "summarized") reasoning.visible = true;
  }
  const effort = isObject(body.output_config) ? body.output_config.effort : undefined;
  if (effort !== undefined && effort !== null) {
    if (typeof effort !== "string" || !EFFORTS.has(effort)) throw badRequest(`unknown effort ${JSON.stringify(effort)}`, "output_config.effort");
    reasoning.effort = effort as Effort;
  }
  return Object.keys(reasoning).length > 0 ? reasoning : undefined;
}

/** `output_config.format`, or the beta's top-level `output_format`: a JSON schema the answer must follow. */
function outputOf(body: JsonObject): IrOutputFormat | undefined {
  const [format, param] = isObject(body.output_config) && body.output_config.format !== undefined && body.output_config.format !== null
    ? [body.output_config.format, "output_config.format"]
    : [body.output_format, "output_format"];
  if (format === undefined || format === null) return undefined;
  if (!isObject(format) || format.type !== "json_schema" || !isObject(format.schema)) throw badRequest("the output format must be a json_schema with a schema object", param);
  return { type: "json_schema", schema: format.schema, param };
}

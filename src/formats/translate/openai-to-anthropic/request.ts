/**
 * An OpenAI Chat Completions request as an Anthropic Messages request (an OpenAI client
 * served by an Anthropic-format key). What has no counterpart and changes the answer's
 * meaning is refused with a 400 naming the parameter; hints are dropped
 * (docs/translation.md has the table).
 */
import { badRequest } from "../../../core/errors.ts";
import { isObject, type JsonObject } from "../../json.ts";
import { parseDataUrl } from "../content.ts";
import type { RequestContext } from "../translator.ts";

const UPSTREAM = "Anthropic Messages";

const refuse = (param: string, what: string) =>
  badRequest(`${what} cannot be carried to this model's upstream, which speaks ${UPSTREAM}`, param, "unsupported_parameter");

/**
 * Thinking budgets for OpenAI reasoning efforts (`none` and `minimal` mean no thinking).
 * Anthropic's smallest budget is 1024 tokens and the budget must stay below `max_tokens`.
 */
const BUDGET_OF_EFFORT: Record<string, number> = { low: 2048, medium: 8192, high: 16384, xhigh: 32768, max: 32768 };
const MIN_BUDGET = 1024;

/** Refused when present with a value that asks for something (not false, null or empty). */
function refuseMeaningful(body: JsonObject): void {
  if (typeof body.n === "number" && body.n > 1) throw refuse("n", "More than one choice (n > 1)");
  if (body.logprobs === true) throw refuse("logprobs", "Log probabilities");
  if (typeof body.top_logprobs === "number" && body.top_logprobs > 0) throw refuse("top_logprobs", "Log probabilities");
  if (isObject(body.logit_bias) && Object.keys(body.logit_bias).length > 0) throw refuse("logit_bias", "A logit bias");
  if (isObject(body.audio)) throw refuse("audio", "Audio output");
  if (Array.isArray(body.modalities) && body.modalities.some((m) => m !== "text")) throw refuse("modalities", "Output modalities other than text");
  if (isObject(body.web_search_options)) throw refuse("web_search_options", "OpenAI's hosted web search");
  if (Array.isArray(body.functions)) throw refuse("functions", "Legacy functions (use tools)");
  if (body.function_call !== undefined) throw refuse("function_call", "Legacy function_call (use tool_choice)");
}

export function toAnthropicRequest(body: JsonObject, context: RequestContext): JsonObject {
  refuseMeaningful(body);
  const { system, messages } = conversation(body.messages);
  const out: JsonObject = { model: body.model };
  if (system.length > 0) out.system = system;
  out.messages = messages;
  const bound = body.max_completion_tokens ?? body.max_tokens;
  const maxTokens = typeof bound === "number" ? bound : context.maxTokens;
  out.max_tokens = maxTokens;
  // Anthropic's range is 0 to 1; OpenAI's hotter settings are as hot as it goes.
  if (typeof body.temperature === "number") out.temperature = Math.min(1, Math.max(0, body.temperature));
  if (body.top_p !== undefined && body.top_p !== null) out.top_p = body.top_p;
  if (typeof body.stop === "string") out.stop_sequences = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.length > 0) out.stop_sequences = body.stop;

  const tools = Array.isArray(body.tools) ? body.tools.map(tool) : [];
  if (tools.length > 0) {
    out.tools = tools;
    const choice = toolChoice(body.tool_choice);
    // Anthropic says "no parallel calls" on the tool choice, which then must be explicit.
    if (body.parallel_tool_calls === false && choice.type !== "none") choice.disable_parallel_tool_use = true;
    if (body.tool_choice !== undefined || choice.disable_parallel_tool_use === true) out.tool_choice = choice;
  }

  const budget = typeof body.reasoning_effort === "string" ? BUDGET_OF_EFFORT[body.reasoning_effort] : undefined;
  if (budget !== undefined && maxTokens > MIN_BUDGET) out.thinking = { type: "enabled", budget_tokens: Math.min(budget, maxTokens - 1) };

  const format = body.response_format;
  if (isObject(format) && format.type === "json_schema") {
    const schema = isObject(format.json_schema) ? format.json_schema.schema : undefined;
    out.output_config = { format: { type: "json_schema", schema } };
  }

  const user = body.safety_identifier ?? body.user;
  if (typeof user === "string" && user !== "") out.metadata = { user_id: user };
  if (body.stream === true) out.stream = true;
  return out;
}

function tool(t: unknown, i: number): JsonObject {
  if (!isObject(t)) throw badRequest(`tools[${i}] must be an object`, `tools[${i}]`);
  // Hosted tools (file_search, web_search, code_interpreter, …) and custom grammar tools are OpenAI's own.
  if (t.type !== "function" || !isObject(t.function)) throw refuse(`tools[${i}].type`, `The OpenAI tool type ${JSON.stringify(t.type)}`);
  const fn = t.function;
  const out: JsonObject = { name: fn.name };
  if (typeof fn.description === "string") out.description = fn.description;
  out.input_schema = isObject(fn.parameters) ? fn.parameters : { type: "object", properties: {} };
  if (typeof fn.strict === "boolean") out.strict = fn.strict;
  return out;
}

function toolChoice(choice: unknown): JsonObject {
  if (choice === undefined || choice === null || choice === "auto") return { type: "auto" };
  if (choice === "required") return { type: "any" };
  if (choice === "none") return { type: "none" };
  if (isObject(choice) && choice.type === "function" && isObject(choice.function)) return { type: "tool", name: choice.function.name };
  throw refuse("tool_choice", `The tool choice ${JSON.stringify(isObject(choice) ? choice.type : choice)}`);
}

/**
 * Chat messages as Anthropic's system prompt and alternating turns. System and developer
 * messages are hoisted into `system` (Anthropic has no system turn); `tool` messages become
 * `tool_result` blocks of a user turn, merged with the tool results and user message that
 * follow, since Anthropic wants every result of a turn in the one next user message.
 */
function conversation(messages: unknown): { system: JsonObject[]; messages: JsonObject[] } {
  if (!Array.isArray(messages)) throw badRequest("messages must be an array", "messages");
  const system: JsonObject[] = [];
  const turns: Array<{ role: string; content: JsonObject[] }> = [];
  const add = (role: string, blocks: JsonObject[]) => {
    if (blocks.length === 0) return;
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  messages.forEach((m, i) => {
    if (!isObject(m)) throw badRequest("each message must be an object", `messages[${i}]`);
    const param = `messages[${i}]`;
    switch (m.role) {
      case "system":
      case "developer":
        for (const block of textBlocks(m.content, `${param}.content`)) system.push(block);
        return;
      case "user":
        add("user", userBlocks(m.content, `${param}.content`));
        return;
      case "assistant":
        add("assistant", assistantBlocks(m, param));
        return;
      case "tool":
        add("user", [{ type: "tool_result", tool_use_id: m.tool_call_id, content: toolResultContent(m.content, `${param}.content`) }]);
        return;
    }
    throw refuse(`${param}.role`, `A message with role ${JSON.stringify(m.role)}`);
  });
  return { system, messages: turns };
}

function textBlocks(content: unknown, param: string): JsonObject[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw badRequest("content must be a string or an array", param);
  return content.map((part, j) => {
    if (!isObject(part) || part.type !== "text") throw badRequest("only text parts are allowed here", `${param}[${j}]`);
    return { type: "text", text: part.text };
  });
}

/** A tool message's content: a string stays one; text parts become text blocks. */
function toolResultContent(content: unknown, param: string): unknown {
  return typeof content === "string" ? content : textBlocks(content, param);
}

function userBlocks(content: unknown, param: string): JsonObject[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw badRequest("content must be a string or an array", param);
  return content.map((part, j) => {
    const where = `${param}[${j}]`;
    if (!isObject(part)) throw badRequest("each content part must be an object", where);
    switch (part.type) {
      case "text": return { type: "text", text: part.text };
      case "image_url": return image(part, where);
      case "file": return file(part, where);
    }
    throw refuse(`${where}.type`, `A content part of type ${JSON.stringify(part.type)}`);
  });
}

/** Data URLs travel as base64 sources and other URLs as URL sources; `detail` has no counterpart and is dropped. */
function image(part: JsonObject, param: string): JsonObject {
  const url = isObject(part.image_url) ? part.image_url.url : undefined;
  if (typeof url !== "string") throw badRequest("image_url.url must be a string", `${param}.image_url.url`);
  const inline = parseDataUrl(url);
  if (inline) return { type: "image", source: { type: "base64", media_type: inline.mediaType, data: inline.data } };
  if (url.startsWith("data:")) throw refuse(`${param}.image_url.url`, "A data URL that is not base64");
  return { type: "image", source: { type: "url", url } };
}

/** Inline PDFs become base64 document blocks; uploaded files (`file_id`) live at OpenAI and cannot travel. */
function file(part: JsonObject, param: string): JsonObject {
  const f = isObject(part.file) ? part.file : {};
  const inline = typeof f.file_data === "string" ? parseDataUrl(f.file_data) : undefined;
  if (inline?.mediaType === "application/pdf") {
    const block: JsonObject = { type: "document", source: { type: "base64", media_type: "application/pdf", data: inline.data } };
    if (typeof f.filename === "string" && f.filename !== "") block.title = f.filename;
    return block;
  }
  throw refuse(`${param}.file`, "A file other than an inline PDF");
}

/** An assistant turn: text, then its tool calls as tool uses; reasoning sent back is dropped (it carries no signature). */
function assistantBlocks(m: JsonObject, param: string): JsonObject[] {
  const blocks: JsonObject[] = [];
  if (typeof m.content === "string") {
    // Anthropic refuses empty text blocks; an assistant turn with only tool calls sends content "" or null.
    if (m.content !== "") blocks.push({ type: "text", text: m.content });
  } else if (Array.isArray(m.content)) {
    m.content.forEach((part, j) => {
      if (!isObject(part) || (part.type !== "text" && part.type !== "refusal")) throw refuse(`${param}.content[${j}].type`, "An assistant content part other than text");
      const text = part.type === "text" ? part.text : part.refusal;
      if (typeof text === "string" && text !== "") blocks.push({ type: "text", text });
    });
  }
  if (Array.isArray(m.tool_calls)) {
    m.tool_calls.forEach((call, j) => {
      const where = `${param}.tool_calls[${j}]`;
      if (!isObject(call) || call.type !== "function" || !isObject(call.function)) throw refuse(`${where}.type`, "A tool call that is not a function call");
      blocks.push({ type: "tool_use", id: call.id, name: call.function.name, input: argumentsOf(call.function.arguments, `${where}.function.arguments`) });
    });
  }
  if (m.function_call !== undefined && m.function_call !== null) throw refuse(`${param}.function_call`, "A legacy function call");
  return blocks;
}

function argumentsOf(args: unknown, param: string): JsonObject {
  if (args === undefined || args === null || args === "") return {};
  try {
    const value: unknown = JSON.parse(String(args));
    if (isObject(value)) return value;
  } catch {
    // reported below
  }
  throw badRequest("tool call arguments must be a JSON object", param);
}

/**
 * An Anthropic Messages request as an OpenAI Chat Completions request (an Anthropic
 * client served by an OpenAI-format key). What has no counterpart and changes the
 * answer's meaning is refused with a 400 naming the parameter; hints are dropped
 * (docs/translation.md has the table).
 */
import { badRequest } from "../../../core/errors.ts";
import { isObject, type JsonObject } from "../../json.ts";
import { dataUrl } from "../content.ts";
import type { RequestContext } from "../translator.ts";

const UPSTREAM = "OpenAI Chat Completions";

const refuse = (param: string, what: string) =>
  badRequest(`${what} cannot be carried to this model's upstream, which speaks ${UPSTREAM}`, param, "unsupported_parameter");

/** Request fields that would change the answer and that Chat Completions cannot express. */
const REFUSED: Record<string, string> = {
  container: "A code-execution container",
  mcp_servers: "Remote MCP servers",
};

/**
 * Anthropic thinking budgets as OpenAI reasoning efforts: the boundaries sit between the
 * budgets Anthropic's own documentation suggests for light, moderate and deep thinking.
 */
function effortOfBudget(budget: unknown): string {
  const tokens = typeof budget === "number" ? budget : 0;
  if (tokens < 4096) return "low";
  if (tokens < 16384) return "medium";
  return "high";
}

export function toOpenaiChatRequest(body: JsonObject, context: RequestContext): JsonObject {
  for (const [param, what] of Object.entries(REFUSED)) if (body[param] !== undefined && body[param] !== null) throw refuse(param, what);

  const out: JsonObject = { model: body.model, messages: messages(body) };
  out.max_completion_tokens = typeof body.max_tokens === "number" ? body.max_tokens : context.maxTokens;
  if (body.temperature !== undefined) out.temperature = body.temperature;
  if (body.top_p !== undefined) out.top_p = body.top_p;
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) out.stop = body.stop_sequences;

  const tools = Array.isArray(body.tools) ? body.tools.map(tool) : [];
  if (tools.length > 0) {
    out.tools = tools;
    if (isObject(body.tool_choice)) {
      const choice = toolChoice(body.tool_choice);
      if (choice !== undefined) out.tool_choice = choice;
      // Parallel calls are a Chat Completions option only where tools are sent.
      if (body.tool_choice.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
    }
  }

  const effort = reasoningEffort(body);
  if (effort !== undefined) out.reasoning_effort = effort;

  const format = isObject(body.output_config) ? body.output_config.format : body.output_format;
  if (isObject(format) && format.type === "json_schema") {
    out.response_format = { type: "json_schema", json_schema: { name: "output", schema: format.schema, strict: true } };
  }

  if (body.stream === true) {
    out.stream = true;
    // Chat Completions streams report usage only when asked; metering needs it.
    out.stream_options = { include_usage: true };
  }
  return out;
}

/** `output_config.effort` when given (both sides share the words), else the thinking budget's. */
function reasoningEffort(body: JsonObject): string | undefined {
  const effort = isObject(body.output_config) ? body.output_config.effort : undefined;
  if (typeof effort === "string") return effort;
  if (isObject(body.thinking) && body.thinking.type === "enabled") return effortOfBudget(body.thinking.budget_tokens);
  return undefined;
}

function tool(t: unknown, i: number): JsonObject {
  if (!isObject(t)) throw badRequest(`tools[${i}] must be an object`, `tools[${i}]`);
  // Anthropic's own tools (web search, bash, text editor, …) are run or defined by Anthropic.
  if (t.type !== undefined && t.type !== null && t.type !== "custom") throw refuse(`tools[${i}].type`, `The Anthropic tool type "${String(t.type)}"`);
  const fn: JsonObject = { name: t.name };
  if (typeof t.description === "string") fn.description = t.description;
  fn.parameters = t.input_schema;
  if (typeof t.strict === "boolean") fn.strict = t.strict;
  return { type: "function", function: fn };
}

function toolChoice(choice: JsonObject): unknown {
  switch (choice.type) {
    case "auto": return "auto";
    case "any": return "required";
    case "none": return "none";
    case "tool": return { type: "function", function: { name: choice.name } };
  }
  return undefined;
}

function messages(body: JsonObject): JsonObject[] {
  const out: JsonObject[] = [];
  const system = body.system;
  if (typeof system === "string" && system !== "") out.push({ role: "system", content: system });
  else if (Array.isArray(system) && system.length > 0) {
    // Block boundaries are kept as text parts; cache_control marks have no counterpart.
    const parts = system.map((b, j) => {
      if (!isObject(b) || b.type !== "text") throw badRequest("system blocks must be text", `system[${j}]`);
      return { type: "text", text: b.text };
    });
    out.push({ role: "system", content: parts.length === 1 ? parts[0]!.text : parts });
  }
  if (!Array.isArray(body.messages)) throw badRequest("messages must be an array", "messages");
  body.messages.forEach((m, i) => {
    if (!isObject(m)) throw badRequest("each message must be an object", `messages[${i}]`);
    if (m.role === "assistant") out.push(assistantMessage(m.content, i));
    else if (m.role === "user") out.push(...userMessages(m.content, i));
    // A system message mid-conversation (Claude Code sends them): Chat has them too, in place.
    else if (m.role === "system") out.push({ role: "system", content: systemText(m.content, i) });
    else throw badRequest(`unknown message role ${JSON.stringify(m.role)}`, `messages[${i}].role`);
  });
  return out;
}

function systemText(content: unknown, i: number): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw badRequest("content must be a string or an array", `messages[${i}].content`);
  return content
    .map((b, j) => {
      if (!isObject(b) || b.type !== "text" || typeof b.text !== "string") throw badRequest("system message blocks must be text", `messages[${i}].content[${j}]`);
      return b.text;
    })
    .join("\n\n");
}

/**
 * An Anthropic user turn: its tool results become `tool` messages, sent first because
 * Chat Completions wants them right after the assistant's calls; the rest is one user
 * message. Images inside a tool result (a `tool` message carries text only) follow in it.
 */
function userMessages(content: unknown, i: number): JsonObject[] {
  if (typeof content === "string") return [{ role: "user", content }];
  if (!Array.isArray(content)) throw badRequest("content must be a string or an array", `messages[${i}].content`);
  const out: JsonObject[] = [];
  const parts: JsonObject[] = [];
  content.forEach((block, j) => {
    const param = `messages[${i}].content[${j}]`;
    if (isObject(block) && block.type === "tool_result") {
      const result = toolResult(block, param);
      out.push({ role: "tool", tool_call_id: block.tool_use_id, content: result.text });
      parts.push(...result.images);
    } else parts.push(userPart(block, param));
  });
  if (parts.length > 0) out.push({ role: "user", content: parts });
  return out;
}

function toolResult(block: JsonObject, param: string): { text: string; images: JsonObject[] } {
  const content = block.content;
  if (content === undefined || content === null) return { text: "", images: [] };
  if (typeof content === "string") return { text: content, images: [] };
  if (!Array.isArray(content)) throw badRequest("tool_result content must be a string or an array", `${param}.content`);
  let text = "";
  const images: JsonObject[] = [];
  content.forEach((part, k) => {
    if (isObject(part) && part.type === "text") text += (text === "" ? "" : "\n") + String(part.text ?? "");
    else if (isObject(part) && part.type === "image") images.push(image(part, `${param}.content[${k}]`));
    else throw refuse(`${param}.content[${k}].type`, `A tool result block of type ${JSON.stringify(typeOf(part))}`);
  });
  return { text, images };
}

const typeOf = (part: unknown) => (isObject(part) ? part.type : undefined);

function userPart(block: unknown, param: string): JsonObject {
  if (!isObject(block)) throw badRequest("each content block must be an object", param);
  switch (block.type) {
    case "text": return { type: "text", text: block.text };
    case "image": return image(block, param);
    case "document": return documentPart(block, param);
  }
  throw refuse(`${param}.type`, `A user content block of type ${JSON.stringify(block.type)}`);
}

function image(block: JsonObject, param: string): JsonObject {
  const source = isObject(block.source) ? block.source : {};
  if (source.type === "base64") return { type: "image_url", image_url: { url: dataUrl(String(source.media_type), String(source.data)) } };
  if (source.type === "url") return { type: "image_url", image_url: { url: source.url } };
  throw refuse(`${param}.source.type`, `An image source of type ${JSON.stringify(source.type)}`);
}

/** Base64 PDFs travel as Chat Completions `file` parts; plain-text documents as text. */
function documentPart(block: JsonObject, param: string): JsonObject {
  const source = isObject(block.source) ? block.source : {};
  if (source.type === "base64" && source.media_type === "application/pdf") {
    const name = typeof block.title === "string" && block.title !== "" ? block.title : "document.pdf";
    return { type: "file", file: { filename: name, file_data: dataUrl("application/pdf", String(source.data)) } };
  }
  if (source.type === "text") return { type: "text", text: source.data };
  throw refuse(`${param}.source.type`, `A document source of type ${JSON.stringify(source.type)}`);
}

/**
 * An Anthropic assistant turn: text joined, tool uses as tool calls. Thinking blocks are
 * dropped: their signatures mean nothing to another provider, and OpenAI-compatible
 * servers reject reasoning sent back in the history.
 */
function assistantMessage(content: unknown, i: number): JsonObject {
  if (typeof content === "string") return { role: "assistant", content };
  if (!Array.isArray(content)) throw badRequest("content must be a string or an array", `messages[${i}].content`);
  let text = "";
  const calls: JsonObject[] = [];
  content.forEach((block, j) => {
    const param = `messages[${i}].content[${j}]`;
    if (!isObject(block)) throw badRequest("each content block must be an object", param);
    switch (block.type) {
      case "text":
        text += String(block.text ?? "");
        return;
      case "tool_use":
        calls.push({ id: block.id, type: "function", function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
        return;
      case "thinking":
      case "redacted_thinking":
        return;
    }
    throw refuse(`${param}.type`, `An assistant content block of type ${JSON.stringify(block.type)}`);
  });
  const message: JsonObject = { role: "assistant", content: text === "" && calls.length > 0 ? null : text };
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

/**
 * The shared model written as a Responses request (an upstream key speaking POST
 * /v1/responses). Nothing is stored upstream (`store: false`): the whole conversation
 * travels each time, and reasoning comes back encrypted so a later turn can return it.
 */
import type { JsonObject } from "../../../json.ts";
import { refusal } from "../../codec.ts";
import { dataUrl } from "../../content.ts";
import type { Effort, IrMessage, IrOutputFormat, IrPart, IrReasoning, IrRequest, IrTool, IrToolChoice, IrToolResult } from "../../ir.ts";
import { systemWithJsonMode } from "../../json-mode.ts";
import { strictFor } from "../../openai-strict.ts";
import { effortOfBudget } from "../../reasoning.ts";
import type { RequestContext } from "../../translator.ts";
import { NAME } from "./names.ts";


export function writeResponsesRequest(request: IrRequest, context: RequestContext): JsonObject {
  refuseUncarried(request);
  const out: JsonObject = { model: request.model ?? context.model };
  const system = systemWithJsonMode(request);
  if (system.length > 0) out.instructions = system.join("\n\n");
  out.input = request.messages.flatMap(items);
  // Responses needs no output bound: only the client's own is sent.
  if (request.maxTokens !== undefined) out.max_output_tokens = request.maxTokens;
  if (request.temperature !== undefined) out.temperature = request.temperature;
  if (request.topP !== undefined) out.top_p = request.topP;
  // top_k, seed and the penalties have no Responses counterpart; they are hints, dropped.
  if (request.tools.length > 0) out.tools = request.tools.map(functionTool);
  // A choice means nothing without tools, and OpenAI refuses `required` without them.
  if (request.toolChoice && request.tools.length > 0) out.tool_choice = toolChoice(request.toolChoice);
  if (request.parallelToolCalls !== undefined) out.parallel_tool_calls = request.parallelToolCalls;
  if (request.output) out.text = { format: textFormat(request.output) };
  const include: string[] = [];
  const reasoning = request.reasoning ? reasoningOf(request.reasoning) : undefined;
  if (reasoning) {
    out.reasoning = reasoning;
    if (reasoning.effort !== "none") include.push("reasoning.encrypted_content");
  }
  if (include.length > 0) out.include = include;
  if (request.user !== undefined) out.safety_identifier = request.user;
  out.store = false;
  if (request.stream) out.stream = true;
  return out;
}

/** What Responses cannot carry and would change the answer. */
function refuseUncarried(request: IrRequest): void {
  if (request.candidates && request.candidates.count > 1) throw refusal(request.candidates.param, "More than one candidate answer", NAME);
  // The shared answer has no place for log probabilities: asked for, they would never reach the client.
  if (request.logprobs) throw refusal(request.logprobs.param, "Log probabilities", NAME);
  if (request.stop && request.stop.sequences.length > 0) throw refusal(request.stop.param, "Stop sequences", NAME);
}

// ——— input items ———

/** One turn as input items: messages, and the function calls and outputs Responses keeps as items of their own. */
function items(message: IrMessage): JsonObject[] {
  return message.role === "assistant" ? assistantItems(message.parts) : userItems(message.parts);
}

function assistantItems(parts: IrPart[]): JsonObject[] {
  const out: JsonObject[] = [];
  let text: JsonObject[] = [];
  const flush = () => {
    if (text.length > 0) out.push({ type: "message", role: "assistant", content: text });
    text = [];
  };
  for (const part of parts) {
    if (part.type === "text") {
      if (part.text !== "") text.push({ type: "output_text", text: part.text });
      continue;
    }
    const item = assistantItem(part);
    if (item) {
      flush();
      out.push(item);
    }
  }
  flush();
  return out;
}

/** Reasoning only Responses made comes back (as its encrypted content); other formats' reasoning and signatures are dropped. */
function assistantItem(part: IrPart): JsonObject | undefined {
  switch (part.type) {
    case "tool_call":
      return { type: "function_call", call_id: part.id, name: part.name, arguments: part.arguments };
    case "thinking":
      if (part.signature?.wire !== "openai-responses") return undefined;
      return { type: "reasoning", summary: part.text === "" ? [] : [{ type: "summary_text", text: part.text }], encrypted_content: part.signature.value };
    case "redacted_thinking":
      return part.signature.wire === "openai-responses" ? { type: "reasoning", summary: [], encrypted_content: part.signature.value } : undefined;
  }
  return undefined;
}

function userItems(parts: IrPart[]): JsonObject[] {
  const out: JsonObject[] = [];
  let content: JsonObject[] = [];
  /** Images the results of the run of results open now returned, sent after them. */
  let resultImages: JsonObject[] = [];
  const flush = () => {
    if (content.length > 0) out.push({ type: "message", role: "user", content });
    content = [];
  };
  const flushResultImages = () => {
    if (resultImages.length > 0) out.push({ type: "message", role: "user", content: resultImages });
    resultImages = [];
  };
  for (const part of parts) {
    if (part.type === "tool_result") {
      flush();
      out.push(functionCallOutput(part));
      resultImages.push(...part.content.map(userContent).filter((c): c is JsonObject => c !== undefined && c.type !== "input_text"));
      continue;
    }
    flushResultImages();
    const piece = userContent(part);
    if (piece) content.push(piece);
  }
  flushResultImages();
  flush();
  return out;
}

/** A tool result's text as the output (Responses has no error flag: the text says so itself). */
function functionCallOutput(result: IrToolResult): JsonObject {
  const text = result.content.map((p) => (p.type === "text" ? p.text : "")).join("");
  return { type: "function_call_output", call_id: result.callId, output: text };
}

function userContent(part: IrPart): JsonObject | undefined {
  switch (part.type) {
    case "text":
      return part.text === "" ? undefined : { type: "input_text", text: part.text };
    case "image": {
      const source = part.source;
      if (source.kind === "text") return { type: "input_text", text: source.text };
      return { type: "input_image", image_url: source.kind === "url" ? source.url : dataUrl(source.mediaType, source.data), detail: "auto" };
    }
    case "document": {
      const source = part.source;
      // A text document is text to the model.
      if (source.kind === "text") return { type: "input_text", text: source.text };
      if (source.kind === "url") return { type: "input_file", file_url: source.url };
      if (source.mediaType === "text/plain") return { type: "input_text", text: source.data };
      return { type: "input_file", filename: part.title ?? "document.pdf", file_data: dataUrl(source.mediaType, source.data) };
    }
  }
  // Reasoning and calls do not ride in a user turn.
  return undefined;
}

// ——— tools, formats, reasoning ———

/**
 * Responses makes a function strict unless told otherwise: a tool that did not ask for it
 * says `strict: false`, and so does one whose schema OpenAI cannot enforce (openai-strict.ts).
 */
function functionTool(tool: IrTool): JsonObject {
  const out: JsonObject = { type: "function", name: tool.name };
  if (tool.description !== undefined) out.description = tool.description;
  out.parameters = tool.parameters;
  out.strict = tool.strict === true && strictFor(true, tool.parameters);
  return out;
}

function toolChoice(choice: IrToolChoice): unknown {
  return choice.type === "tool" ? { type: "function", name: choice.name } : choice.type;
}

function textFormat(format: IrOutputFormat): JsonObject {
  if (format.type === "text") return { type: "text" };
  if (format.type === "json") return { type: "json_object" };
  // Responses requires a name.
  const out: JsonObject = { type: "json_schema", name: format.name ?? "response", schema: format.schema };
  if (format.description !== undefined) out.description = format.description;
  if (format.strict !== undefined) out.strict = format.strict;
  return out;
}

/** Efforts beyond Responses' highest ask for its highest. */
const responsesEffort = (effort: Effort): Effort => (effort === "max" ? "xhigh" : effort);

/** An effort (a budget read through the shared table), and a summary when the client wants the reasoning shown. */
function reasoningOf(reasoning: IrReasoning): { effort?: Effort; summary?: "auto" } | undefined {
  const out: { effort?: Effort; summary?: "auto" } = {};
  if (reasoning.effort !== undefined) out.effort = responsesEffort(reasoning.effort);
  else if (reasoning.budget !== undefined) out.effort = effortOfBudget(reasoning.budget);
  if (reasoning.visible === true && out.effort !== "none") out.summary = "auto";
  return out.effort === undefined && out.summary === undefined ? undefined : out;
}

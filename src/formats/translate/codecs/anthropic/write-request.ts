/**
 * The shared model written as an Anthropic Messages request (an Anthropic upstream's).
 * Anthropic's rules shape it: a `max_tokens` always, a temperature of at most 1, no
 * empty text blocks, every tool result of a turn first in the one next user message,
 * turns of one role merged, thinking sent back only with Anthropic's own signature.
 * docs/translation.md has the table.
 */
import { badRequest } from "../../../../core/errors.ts";
import type { JsonObject } from "../../../json.ts";
import { refusal } from "../../codec.ts";
import type { IrMessage, IrPart, IrReasoning, IrRequest, IrTool, IrToolChoice, IrToolResult } from "../../ir.ts";
import { emptyConversation } from "../../empty-conversation.ts";
import { systemWithJsonMode } from "../../json-mode.ts";
import { budgetOfEffort, MIN_BUDGET } from "../../reasoning.ts";
import type { RequestContext } from "../../translator.ts";
import { anthropicImageType, argumentsObject, EFFORTS, mediaBlock, NAME, ownSignature } from "./blocks.ts";
import { closedSchema } from "./output-schema.ts";

/** The efforts `output_config.effort` takes. */

export function writeAnthropicRequest(request: IrRequest, context: RequestContext): JsonObject {
  refuseUncarried(request);
  const out: JsonObject = { model: request.model ?? context.model };
  // Anthropic has no JSON mode: JSON without a schema is asked for in the instructions (json-mode.ts).
  const system = systemWithJsonMode(request, true).filter((text) => text !== "");
  // Each instruction stays its own text block, as the client separated them.
  if (system.length > 0) out.system = system.map((text) => ({ type: "text", text }));
  const turns = turnsOf(request.messages);
  if (turns.length === 0) throw emptyConversation(request, NAME);
  out.messages = turns;
  const maxTokens = request.maxTokens ?? context.maxTokens;
  out.max_tokens = maxTokens;
  // Anthropic's range is 0 to 1; hotter settings of other formats are as hot as it goes.
  if (request.temperature !== undefined) out.temperature = Math.min(1, Math.max(0, request.temperature));
  if (request.topP !== undefined) out.top_p = request.topP;
  if (request.topK !== undefined) out.top_k = request.topK;
  if (request.stop !== undefined && request.stop.sequences.length > 0) out.stop_sequences = request.stop.sequences;
  writeTools(request, out);
  writeReasoning(request.reasoning, maxTokens, out);
  fitThinking(out, turns);
  oneOfTemperatureAndTopP(out, request.temperature);
  if (request.output?.type === "json_schema") outputConfig(out).format = { type: "json_schema", schema: outputSchema(request.output) };
  if (request.user !== undefined && request.user !== "") out.metadata = { user_id: request.user };
  if (request.stream) out.stream = true;
  return out;
}

/**
 * Several answers and log probabilities change what the client gets back; Anthropic has
 * neither. A stop sequence of whitespace only ("\n", the commonest stop of completion-style
 * clients) or an empty one, Anthropic answers 400 ("each stop sequence must contain
 * non-whitespace"); dropped, it would let the answer run past where the client asked it
 * to end. Seed and penalties are hints, dropped.
 */
function refuseUncarried(request: IrRequest): void {
  if (request.candidates !== undefined && request.candidates.count > 1) throw refusal(request.candidates.param, "More than one candidate answer", NAME);
  if (request.logprobs !== undefined) throw refusal(request.logprobs.param, "Log probabilities", NAME);
  const blank = request.stop?.sequences.find((s) => s.trim() === "");
  if (blank !== undefined) throw refusal(request.stop!.param, `A stop sequence of whitespace only (${JSON.stringify(blank)})`, NAME);
}

const outputConfig = (out: JsonObject): JsonObject => (out.output_config ??= {}) as JsonObject;

/** The client's schema as Anthropic's grammar takes it (output-schema.ts); refused when an object is open. */
function outputSchema(output: Extract<IrRequest["output"], { type: "json_schema" }>): JsonObject {
  const schema = closedSchema(output.schema);
  if (schema === undefined) throw refusal(output.param, "A schema with an object open to other properties (additionalProperties)", NAME);
  return schema;
}

function strictSchema(tool: IrTool): JsonObject {
  const schema = closedSchema(tool.parameters);
  if (schema === undefined) throw refusal(tool.param, "A strict tool whose schema has an object open to other properties (additionalProperties)", NAME);
  return schema;
}

// ——— messages ———

interface Turn {
  role: "user" | "assistant";
  content: JsonObject[];
}

/**
 * The model's messages as Anthropic turns: each part goes to its role's turn (a tool
 * result always to a user turn), consecutive turns of one role merge, and a user turn's
 * tool results move to its front, so every result of an assistant turn sits first in
 * the one next user message. A message left with no blocks adds no turn.
 */
function turnsOf(messages: IrMessage[]): JsonObject[] {
  const turns: Turn[] = [];
  const add = (role: Turn["role"], block: JsonObject) => {
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(block);
    else turns.push({ role, content: [block] });
  };
  for (const message of messages) {
    for (const part of message.parts) {
      const block = message.role === "assistant" ? assistantBlock(part, message.param) : userBlock(part, message.param);
      if (block !== undefined) add(turnRole(part, message.role), block);
    }
  }
  trimPrefill(turns);
  return turns.map(({ role, content }) => ({ role, content: role === "user" ? toolResultsFirst(content) : content }));
}

/**
 * A last assistant turn is a prefill the model continues, and Anthropic refuses one whose
 * text ends in whitespace ("final assistant content cannot end with trailing whitespace"),
 * which other formats' clients often leave ("My answer is "). That whitespace is left
 * out (a text left empty, and a turn left empty, with it); earlier turns keep theirs.
 */
function trimPrefill(turns: Turn[]): void {
  const last = turns.at(-1);
  if (last?.role !== "assistant") return;
  const block = last.content.at(-1);
  if (block?.type !== "text" || typeof block.text !== "string") return;
  block.text = block.text.trimEnd();
  if (block.text !== "") return;
  last.content.pop();
  if (last.content.length === 0) turns.pop();
}

/** Results answer the assistant, so they ride in user turns; calls are the assistant's. */
function turnRole(part: IrPart, role: Turn["role"]): Turn["role"] {
  if (part.type === "tool_result") return "user";
  if (part.type === "tool_call") return "assistant";
  return role;
}

function toolResultsFirst(blocks: JsonObject[]): JsonObject[] {
  const results = blocks.filter((b) => b.type === "tool_result");
  return results.length === 0 ? blocks : [...results, ...blocks.filter((b) => b.type !== "tool_result")];
}

/**
 * A user part as an Anthropic block; undefined for what is left out: empty text
 * (Anthropic refuses empty text blocks) and reasoning (only assistant turns carry it).
 */
function userBlock(part: IrPart, param: string): JsonObject | undefined {
  switch (part.type) {
    case "text": return part.text === "" ? undefined : mediaBlock(part);
    case "image":
    case "document": return media(part, part.param);
    case "tool_result": return toolResultBlock(part);
    case "tool_call": return toolUseBlock(part.id, part.name, part.arguments, param);
  }
  return undefined;
}

/**
 * An assistant part as an Anthropic block. Thinking goes back only with the signature
 * Anthropic gave it (Anthropic refuses thinking it cannot verify; another wire's or an
 * unsigned one is left out), redacted thinking only when Anthropic's; empty text is left out.
 */
function assistantBlock(part: IrPart, param: string): JsonObject | undefined {
  switch (part.type) {
    case "text": return part.text === "" ? undefined : mediaBlock(part);
    case "thinking": {
      const signature = ownSignature(part.signature);
      return signature === undefined ? undefined : { type: "thinking", thinking: part.text, signature };
    }
    case "redacted_thinking": {
      const data = ownSignature(part.signature);
      return data === undefined ? undefined : { type: "redacted_thinking", data };
    }
    case "tool_call": return toolUseBlock(part.id, part.name, part.arguments, param);
    case "tool_result": return toolResultBlock(part);
    case "image":
    case "document":
      // An answer's image (Gemini draws) cannot be replayed: Anthropic's assistant turns hold text, thinking and tool uses.
      throw refusal(part.param, `${part.type === "image" ? "An image" : "A document"} in an assistant turn`, NAME);
  }
}

/** What Anthropic reads inline: these image types (the SDK's `Base64ImageSource`), and PDFs as documents (text is decoded). */
const IMAGE_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);
const DOCUMENT_TYPES = new Set(["application/pdf", "text/plain"]);

/**
 * An image or document as an Anthropic block. Inline data of a type Anthropic does not
 * read (a Gemini client's HEIC photo, a Responses client's Word file) is refused here,
 * naming the client's part, rather than by the upstream.
 */
function media(part: IrPart & { type: "image" | "document" }, param: string): JsonObject {
  const source = part.source;
  const type = source.kind === "base64" ? (part.type === "image" ? anthropicImageType(source.mediaType) : source.mediaType.toLowerCase()) : undefined;
  if (type !== undefined && !(part.type === "image" ? IMAGE_TYPES : DOCUMENT_TYPES).has(type)) {
    throw refusal(param, `${part.type === "image" ? "An image" : "A document"} of type ${type}`, NAME);
  }
  const block = mediaBlock(part);
  if (block === undefined) throw refusal(param, `${part.type === "image" ? "An image" : "A document"} given as plain text`, NAME);
  return block;
}

/** A past call: its arguments must be a JSON object (Anthropic's `input`), else the client's message is malformed. */
function toolUseBlock(id: string, name: string, args: string, param: string): JsonObject {
  const input = argumentsObject(args);
  if (input === undefined) throw badRequest("tool call arguments must be a JSON object", param);
  return { type: "tool_use", id, name, input };
}

/** A result whose content is one text is sent as a string; otherwise as text, image and document blocks (empty text left out). */
function toolResultBlock(result: IrToolResult): JsonObject {
  const block: JsonObject = { type: "tool_result", tool_use_id: result.callId };
  const only = result.content.length === 1 ? result.content[0] : undefined;
  if (only?.type === "text") block.content = only.text;
  else if (result.content.length > 0) {
    block.content = result.content.flatMap((part) => {
      if (part.type === "text") return part.text === "" ? [] : [{ type: "text", text: part.text }];
      if (part.type === "image" || part.type === "document") return [media(part, part.param)];
      // Reasoning or calls inside a result cannot occur in any format; nothing to send.
      return [];
    });
  }
  if (result.isError !== undefined) block.is_error = result.isError;
  return block;
}

// ——— tools ———

/** A tool; a strict one's schema as Anthropic's strict grammar takes it (output-schema.ts), as for structured output. */
function toolBlock(tool: IrTool): JsonObject {
  const out: JsonObject = { name: tool.name };
  if (tool.description !== undefined) out.description = tool.description;
  out.input_schema = tool.strict === true ? strictSchema(tool) : tool.parameters;
  if (tool.strict !== undefined) out.strict = tool.strict;
  return out;
}

function toolChoiceBlock(choice: IrToolChoice): JsonObject {
  switch (choice.type) {
    case "auto": return { type: "auto" };
    case "required": return { type: "any" };
    case "none": return { type: "none" };
    case "tool": return { type: "tool", name: choice.name };
  }
}

/**
 * Tools and the choice among them. "At most one call" is said on Anthropic's tool
 * choice, which then must be explicit (`auto` when the client named none); it means
 * nothing with `none`. Without tools a choice means nothing and is left out.
 */
function writeTools(request: IrRequest, out: JsonObject): void {
  if (request.tools.length === 0) return;
  out.tools = request.tools.map(toolBlock);
  let choice = request.toolChoice && toolChoiceBlock(request.toolChoice);
  if (request.parallelToolCalls === false && choice?.type !== "none") choice = { ...(choice ?? { type: "auto" }), disable_parallel_tool_use: true };
  if (choice !== undefined) out.tool_choice = choice;
}

// ——— reasoning ———

/**
 * A budget is written as Anthropic's thinking: 0 disables it, a negative one (the model
 * decides) is adaptive thinking, a positive one is raised to Anthropic's smallest (1024)
 * and kept below `max_tokens`. An effort alone becomes the budget of reasoning.ts's table
 * (none for `none` and `minimal`). Thinking that cannot fit under `max_tokens` (a bound of
 * 1024 or less) is not asked for rather than refused by the upstream. An effort given
 * with a budget (an Anthropic client's `output_config.effort`) is also sent as such.
 */
function writeReasoning(reasoning: IrReasoning | undefined, maxTokens: number, out: JsonObject): void {
  if (reasoning === undefined) return;
  const thinking = thinkingOf(reasoning, maxTokens);
  if (thinking !== undefined) {
    if (reasoning.visible !== undefined && thinking.type !== "disabled") thinking.display = reasoning.visible ? "summarized" : "omitted";
    out.thinking = thinking;
  }
  if (reasoning.budget !== undefined && reasoning.effort !== undefined && EFFORTS.has(reasoning.effort)) outputConfig(out).effort = reasoning.effort;
}

function thinkingOf(reasoning: IrReasoning, maxTokens: number): JsonObject | undefined {
  const budget = reasoning.budget ?? (reasoning.effort === undefined ? undefined : budgetOfEffort(reasoning.effort));
  if (budget === undefined) return undefined;
  if (budget === 0) return { type: "disabled" };
  if (budget < 0) return { type: "adaptive" };
  if (maxTokens <= MIN_BUDGET) return undefined;
  return { type: "enabled", budget_tokens: Math.min(Math.max(budget, MIN_BUDGET), maxTokens - 1) };
}

/**
 * What Anthropic refuses alongside thinking, settled before sending rather than failed
 * upstream. Thinking is left out where it cannot be had: with a forced tool call
 * (`tool_choice` `any` or `tool`, which changes the answer, while thinking is a hint),
 * and in a tool loop whose last assistant turn does not start with Anthropic's own
 * thinking (another format's client never has it to send back). Where thinking stays,
 * the sampling settings it refuses are dropped as the hints they are: a temperature
 * other than 1, `top_k`, a `top_p` under 0.95.
 */
function fitThinking(out: JsonObject, turns: JsonObject[]): void {
  const thinking = out.thinking as JsonObject | undefined;
  if (thinking === undefined || thinking.type === "disabled") return;
  const choice = (out.tool_choice as JsonObject | undefined)?.type;
  if (choice === "any" || choice === "tool" || toolLoopWithoutThinking(turns)) {
    delete out.thinking;
    return;
  }
  if (out.temperature !== undefined && out.temperature !== 1) delete out.temperature;
  delete out.top_k;
  if (typeof out.top_p === "number" && out.top_p < 0.95) delete out.top_p;
}

/**
 * Anthropic's current models refuse a temperature and a top_p together ("cannot both be
 * specified for this model"), and its reference says to alter one of them, not both.
 * OpenAI and Gemini clients often send both, one of them at its default of 1: when both
 * are left, the one the client left at its default is not sent, else top_p is not (both
 * are hints). The client's own temperature decides, not the one capped to Anthropic's 1.
 */
function oneOfTemperatureAndTopP(out: JsonObject, asked: number | undefined): void {
  if (out.temperature === undefined || out.top_p === undefined) return;
  if (asked === 1 && out.top_p !== 1) delete out.temperature;
  else delete out.top_p;
}

/** Whether the last assistant turn calls tools without starting with thinking (as Anthropic requires when thinking is on). */
function toolLoopWithoutThinking(turns: JsonObject[]): boolean {
  const last = turns.findLast((t) => t.role === "assistant");
  const content = (last?.content ?? []) as JsonObject[];
  const first = content[0]?.type;
  return content.some((b) => b.type === "tool_use") && first !== "thinking" && first !== "redacted_thinking";
}

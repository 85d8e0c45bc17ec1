/**
 * The shared middle of translation (issue 16): one model of a request, an answer and a
 * stream that every wire format reads into and writes out of. Each format's codec
 * (`codecs/<wire>/`) knows only its own wire and this model, so four formats make twelve
 * directed pairs from four codecs, and adding a format is adding a codec.
 *
 * The model is the union of what the four formats can mean, not the intersection: a
 * feature only some formats have (top_k, several candidates, log probabilities, a
 * thinking signature) is held here, and a writer that cannot carry it either drops it
 * (a harmless hint) or refuses it (it changes the answer's meaning), naming the
 * client's own parameter, which the reader records as `param`.
 */
import type { HttpError } from "../../core/errors.ts";
import type { JsonObject } from "../json.ts";
import type { Usage } from "../usage.ts";
import type { Wire } from "./translator.ts";

/** A client parameter's path as the client wrote it (`messages[2].content[0]`, `candidateCount`), for refusals. */
export type Param = string;

/**
 * An opaque token a provider attaches to reasoning or to a call so that it can be sent
 * back in a later turn (Anthropic's thinking `signature`, Gemini's `thoughtSignature`,
 * Responses' `encrypted_content`). Only the wire that made it can read it: writers of
 * other wires drop it.
 */
export interface Signature {
  wire: Wire;
  value: string;
}

export type IrPart =
  | { type: "text"; text: string }
  | { type: "image"; source: IrSource; param: Param }
  /** A document (PDF) or a text document (`mediaType: "text/plain"`, `data` plain text, not base64). */
  | { type: "document"; source: IrSource; title?: string; param: Param }
  /** Reasoning shown as text (or a summary of it), with the signature that lets it be sent back. */
  | { type: "thinking"; text: string; signature?: Signature }
  /** Reasoning the provider hides (Anthropic's `redacted_thinking`, an encrypted Responses reasoning item with no summary). */
  | { type: "redacted_thinking"; signature: Signature }
  | IrToolCall
  | IrToolResult;

export interface IrToolCall {
  type: "tool_call";
  /** The call's id; a reader of a format without ids (older Gemini) makes a stable one. */
  id: string;
  name: string;
  /** The arguments as JSON text (always an object when well formed), as Chat and Responses carry them. */
  arguments: string;
  /** Gemini's `thoughtSignature` on a function call part, which Gemini 3 requires back with the call. */
  signature?: Signature;
}

export interface IrToolResult {
  type: "tool_result";
  /** The id of the call this answers. */
  callId: string;
  /** The called function's name (Gemini answers a call by name); readers fill it from the call when their format lacks it. */
  name?: string;
  /** Text and images (formats whose results carry text only get the text, and the images as user parts after the results). */
  content: IrPart[];
  isError?: boolean;
}

export type IrSource =
  | { kind: "base64"; mediaType: string; data: string }
  | { kind: "url"; url: string; mediaType?: string }
  /** Plain text (a text document). */
  | { kind: "text"; text: string };

/**
 * One turn. Tool results ride in user turns (Anthropic's and Gemini's model); writers of
 * formats with a tool role (Chat) or tool items (Responses) split them out.
 */
export interface IrMessage {
  role: "user" | "assistant";
  parts: IrPart[];
  /** The index of the client's message this turn was read from, for refusals. */
  param: Param;
}

export type Effort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max";

export interface IrReasoning {
  /** An effort level (Chat, Responses, Gemini 3's `thinkingLevel`, Anthropic's `output_config.effort`). */
  effort?: Effort;
  /** A token budget (Anthropic's `budget_tokens`, Gemini's `thinkingBudget`); 0 turns thinking off, -1 lets the model decide. */
  budget?: number;
  /** Whether the client wants the reasoning's text (or summary) back: Responses `summary`, Gemini `includeThoughts`. */
  visible?: boolean;
}

export type IrOutputFormat =
  | { type: "text" }
  | { type: "json"; param: Param }
  | { type: "json_schema"; name?: string; description?: string; schema: JsonObject; strict?: boolean; param: Param };

export interface IrTool {
  name: string;
  description?: string;
  /** A JSON schema (an empty object schema when the client gave none). */
  parameters: JsonObject;
  strict?: boolean;
  param: Param;
}

export type IrToolChoice = { type: "auto" } | { type: "required" } | { type: "none" } | { type: "tool"; name: string; param: Param };

export interface IrRequest {
  model: string | undefined;
  stream: boolean;
  /** System instructions, in order (Chat's system and developer messages, Responses `instructions`…). */
  system: string[];
  messages: IrMessage[];
  /** The output bound the client gave; writers whose format needs one use `RequestContext.maxTokens` when absent. */
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  stop?: { sequences: string[]; param: Param };
  tools: IrTool[];
  toolChoice?: IrToolChoice;
  /** False when the client asked for at most one tool call per turn. */
  parallelToolCalls?: boolean;
  reasoning?: IrReasoning;
  output?: IrOutputFormat;
  /** An end-user id for the provider's abuse tracking. */
  user?: string;
  /** More than one candidate answer (Chat `n`, Gemini `candidateCount`): refused by formats with one answer. */
  candidates?: { count: number; param: Param };
  /** Log probabilities of the output tokens, `top` alternatives each. */
  logprobs?: { top: number; param: Param };
}

/** Why an answer ended. */
export type IrFinish = "stop" | "stop_sequence" | "length" | "tool_calls" | "content_filter" | "pause";

export interface IrAnswer {
  id: string;
  model: string;
  /** Thinking, text and tool calls, in the order the model produced them. */
  parts: IrPart[];
  finish: IrFinish;
  /** The stop sequence that matched, when the format says. */
  stopSequence?: string;
  /**
   * Usage as the upstream's own usage reader reads it (the same numbers metering
   * charges), so the client's usage restates what it is billed.
   */
  usage?: Usage;
}

/**
 * One step of a streamed answer. Readers emit them as upstream events arrive, never
 * holding one back for later; writers turn them into the client's events. Text and
 * thinking deltas extend the part open at the time (a new part of another kind closes
 * it); tool calls are addressed by `call`, the ordinal the reader gave the call, so the
 * argument deltas of parallel calls never mix even when an upstream interleaves them.
 */
export type IrEvent =
  /** First event of every stream: the ids the answer carries, and usage when the upstream tells it up front. */
  | { type: "start"; id: string; model: string; usage?: Usage }
  | { type: "text"; text: string }
  | { type: "thinking"; text: string }
  /** The signature of the thinking part open now (Anthropic sends it last, after the text). */
  | { type: "thinking_signature"; signature: Signature }
  | { type: "redacted_thinking"; signature: Signature }
  | { type: "tool_call_start"; call: number; id: string; name: string; signature?: Signature }
  | { type: "tool_call_arguments"; call: number; delta: string }
  /** Usage so far (cumulative: a later one replaces an earlier one). */
  | { type: "usage"; usage: Usage }
  | { type: "finish"; finish: IrFinish; stopSequence?: string }
  /** The upstream failed in the stream (an error event); nothing follows. */
  | { type: "error"; error: HttpError };

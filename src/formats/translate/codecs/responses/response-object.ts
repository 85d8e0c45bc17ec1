/**
 * The `response` object a Responses client receives, as a whole answer and inside the
 * stream's lifecycle events. The SDK's types require echoes of the request (tools,
 * tool_choice, temperature…); a translated answer does not know the request, so they
 * hold the API's defaults (docs/translation.md).
 */
import type { JsonObject } from "../../../json.ts";
import type { Usage } from "../../../usage.ts";
import { responsesUsageObject } from "../../usage.ts";
import { splitName } from "./namespaces.ts";

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

export interface ResponseState {
  id: string;
  createdAt: number;
  model: string;
  status: ResponseStatus;
  output: JsonObject[];
  incompleteReason?: string;
  error?: { code: string; message: string };
  usage?: Usage;
}

export function responseObject(state: ResponseState): JsonObject {
  return {
    id: state.id,
    object: "response",
    created_at: state.createdAt,
    status: state.status,
    background: false,
    error: state.error ?? null,
    incomplete_details: state.incompleteReason === undefined ? null : { reason: state.incompleteReason },
    instructions: null,
    max_output_tokens: null,
    model: state.model,
    output: state.output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: null,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: null,
    truncation: "disabled",
    usage: state.usage ? responsesUsageObject(state.usage) : null,
    metadata: {},
  };
}

export const outputText = (text: string): JsonObject => ({ type: "output_text", annotations: [], text });

export const messageItem = (id: string, status: string, content: JsonObject[]): JsonObject => ({ id, type: "message", status, content, role: "assistant" });

/** A function call item; a function of one of the request's namespaces is named apart from it, as the client declared it. */
export function functionCallItem(id: string, status: string, callId: string, name: string, args: string, namespaces: ReadonlySet<string>): JsonObject {
  const declared = splitName(name, namespaces);
  const item: JsonObject = { id, type: "function_call", status, arguments: args, call_id: callId, name: declared.name };
  if (declared.namespace !== undefined) item.namespace = declared.namespace;
  return item;
}

/** A reasoning item; `encrypted_content` only when the reasoning was Responses' own (only it can read it). */
export function reasoningItem(id: string, summary: string[], encrypted: string | undefined): JsonObject {
  const item: JsonObject = { id, type: "reasoning", summary: summary.map((text) => ({ type: "summary_text", text })) };
  if (encrypted !== undefined) item.encrypted_content = encrypted;
  return item;
}

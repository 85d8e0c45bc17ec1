/**
 * JSON mode without a schema (OpenAI's `json_object`, Gemini's `responseMimeType:
 * "application/json"` alone) across formats. Gemini's makes the answer JSON whatever the
 * prompt says; OpenAI's (Chat and Responses) refuses a conversation that does not contain
 * the word "json"; Anthropic has none. So the writers say it in the instructions: OpenAI's
 * when the conversation does not (a Gemini client's), Anthropic's always (the only way
 * it is asked for JSON only).
 */
import type { IrRequest } from "./ir.ts";

export const JSON_INSTRUCTION = "Answer in JSON only: one JSON value, with no Markdown code fence and no text around it.";

/** Whether the instructions or a text of the conversation contain the word "json", as OpenAI checks. */
function mentionsJson(request: IrRequest): boolean {
  const has = (text: string) => /json/i.test(text);
  return request.system.some(has) || request.messages.some((m) => m.parts.some((p) => p.type === "text" && has(p.text)));
}

/**
 * The system instructions to send: the request's, and the JSON instruction after them when
 * the request is in JSON mode and (unless `always`) does not already say "json".
 */
export function systemWithJsonMode(request: IrRequest, always = false): string[] {
  if (request.output?.type !== "json" || (!always && mentionsJson(request))) return request.system;
  return [...request.system, JSON_INSTRUCTION];
}

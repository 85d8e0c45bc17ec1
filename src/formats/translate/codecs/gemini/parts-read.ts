/** The parts of an upstream Gemini candidate, read the same way for answers and stream chunks. */
import { isObject, type JsonObject } from "../../../json.ts";
import type { Signature } from "../../ir.ts";
import { callIdOf } from "./call-ids.ts";

export type CandidatePart =
  | { type: "text"; text: string }
  | { type: "thinking"; text: string; signature?: Signature }
  | { type: "call"; name: string; args: string; gemini: { id?: string; signature?: string } };

const signatureOf = (part: JsonObject): string | undefined => (typeof part.thoughtSignature === "string" && part.thoughtSignature !== "" ? part.thoughtSignature : undefined);

/** The first candidate's parts; anything malformed or unknown is skipped. */
export function candidateParts(body: unknown): CandidatePart[] {
  const candidate = firstCandidate(body);
  const content = isObject(candidate?.content) ? candidate.content : undefined;
  if (!Array.isArray(content?.parts)) return [];
  const out: CandidatePart[] = [];
  for (const part of content.parts) {
    if (!isObject(part)) continue;
    const signature = signatureOf(part);
    if (isObject(part.functionCall) && typeof part.functionCall.name === "string") {
      const fn = part.functionCall;
      const id = typeof fn.id === "string" && fn.id !== "" ? fn.id : undefined;
      out.push({ type: "call", name: fn.name as string, args: JSON.stringify(isObject(fn.args) ? fn.args : {}), gemini: { ...(id && { id }), ...(signature && { signature }) } });
    } else if (part.thought === true) {
      out.push({ type: "thinking", text: typeof part.text === "string" ? part.text : "", ...(signature && { signature: { wire: "gemini-generate" as const, value: signature } }) });
    } else if (typeof part.text === "string") {
      // A signature on a text part (Gemini puts one on an answer's last part) is not
      // needed back and has no place on the model's text: it is dropped.
      out.push({ type: "text", text: part.text });
    }
  }
  return out;
}

export function firstCandidate(body: unknown): JsonObject | undefined {
  const candidates = isObject(body) && Array.isArray(body.candidates) ? body.candidates : [];
  return isObject(candidates[0]) ? candidates[0] : undefined;
}

/** A prompt Gemini refused to answer: `promptFeedback.blockReason` and no candidate. */
export const promptBlocked = (body: unknown): boolean =>
  isObject(body) && isObject(body.promptFeedback) && typeof body.promptFeedback.blockReason === "string" && firstCandidate(body) === undefined;

export const callId = (part: Extract<CandidatePart, { type: "call" }>, answerId: string, ordinal: number) => callIdOf(part.gemini, answerId, ordinal);

/** The answer's id: Gemini's `responseId`, else one made here. */
export const answerIdOf = (body: unknown): string =>
  isObject(body) && typeof body.responseId === "string" && body.responseId !== "" ? body.responseId : `gemini-${crypto.randomUUID()}`;

export const modelOf = (body: unknown): string => (isObject(body) && typeof body.modelVersion === "string" ? body.modelVersion : "");

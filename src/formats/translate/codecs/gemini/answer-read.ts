/** A complete Gemini answer (the upstream's) read into the shared model; never throws. */
import { geminiUsageFromJson } from "../../../gemini/usage.ts";
import type { IrAnswer, IrPart } from "../../ir.ts";
import { irFinishOf } from "./finish.ts";
import { answerIdOf, callId, candidateParts, firstCandidate, modelOf, promptBlocked } from "./parts-read.ts";

export function readGeminiAnswer(body: unknown): IrAnswer {
  const id = answerIdOf(body);
  let calls = 0;
  const parts: IrPart[] = candidateParts(body).map((part): IrPart => {
    if (part.type !== "call") return part;
    const call: IrPart = { type: "tool_call", id: callId(part, id, calls++), name: part.name, arguments: part.args };
    if (part.gemini.signature !== undefined) call.signature = { wire: "gemini-generate", value: part.gemini.signature };
    return call;
  });
  const finish = promptBlocked(body) ? "content_filter" : irFinishOf(firstCandidate(body)?.finishReason, calls > 0);
  const answer: IrAnswer = { id, model: modelOf(body), parts, finish };
  const usage = geminiUsageFromJson(body);
  if (usage !== undefined) answer.usage = usage;
  return answer;
}

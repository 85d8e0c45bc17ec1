/** The shared model's answer written as a Gemini GenerateContentResponse (the client's). */
import type { JsonObject } from "../../../json.ts";
import type { IrAnswer, IrPart } from "../../ir.ts";
import { geminiUsageObject } from "../../usage.ts";
import { geminiFinishOf } from "./finish.ts";
import { functionCallPart, textPart, thoughtPart } from "./parts-write.ts";

export function writeGeminiAnswer(answer: IrAnswer): JsonObject {
  const parts = answer.parts.flatMap(answerPart);
  const out: JsonObject = {
    candidates: [{ content: { role: "model", parts }, finishReason: geminiFinishOf(answer.finish), index: 0 }],
  };
  if (answer.usage !== undefined) out.usageMetadata = geminiUsageObject(answer.usage);
  out.modelVersion = answer.model;
  out.responseId = answer.id;
  return out;
}

/** Thinking, text and calls; hidden reasoning (another provider's) has no Gemini form and is left out. */
function answerPart(part: IrPart): JsonObject[] {
  switch (part.type) {
    case "text": return [textPart(part.text)];
    case "thinking": return [thoughtPart(part.text, part.signature)];
    case "tool_call": return [functionCallPart(part)];
  }
  return [];
}

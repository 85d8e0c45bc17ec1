/** Why an answer ended, between Gemini's `finishReason` and the shared model's. */
import type { IrFinish } from "../../ir.ts";

/** Reasons that say the output was withheld by a filter. */
const FILTERED = new Set(["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "LANGUAGE"]);

/**
 * Gemini's reason as the model's. STOP with function calls in the answer is `tool_calls`
 * (Gemini has no reason of its own for it). MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL
 * and the rest read as a plain stop: the answer ends with whatever text came, and no
 * call a client could run.
 */
export function irFinishOf(reason: unknown, hasCalls: boolean): IrFinish {
  if (reason === "MAX_TOKENS") return "length";
  if (typeof reason === "string" && FILTERED.has(reason)) return "content_filter";
  if (hasCalls && (reason === "STOP" || reason === undefined || reason === null)) return "tool_calls";
  return "stop";
}

/** The model's finish as Gemini's reason; a paused turn (Anthropic's) ends as a STOP. */
export function geminiFinishOf(finish: IrFinish): string {
  switch (finish) {
    case "length": return "MAX_TOKENS";
    case "content_filter": return "SAFETY";
  }
  return "STOP";
}

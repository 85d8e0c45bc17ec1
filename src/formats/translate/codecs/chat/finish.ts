/** Why an answer ended, in Chat's words (`finish_reason`). */
import type { IrFinish } from "../../ir.ts";

/**
 * A Chat `finish_reason` as the model's; the legacy `function_call` is a tool call, anything
 * unknown a stop. A stop in an answer that calls tools is a tool-call finish: not every
 * OpenAI-compatible server says `tool_calls`, and an Anthropic client's agent loop runs the
 * tools on `tool_use` (as the Gemini and Responses readers infer it from the calls too).
 */
export function irFinish(reason: unknown, hasCalls = false): IrFinish {
  switch (reason) {
    case "length": return "length";
    case "tool_calls": case "function_call": return "tool_calls";
    case "content_filter": return "content_filter";
  }
  return hasCalls ? "tool_calls" : "stop";
}

/** Chat does not say which stop sequence matched, nor that a turn paused: both are a stop. */
export function chatFinishReason(finish: IrFinish): string {
  switch (finish) {
    case "length": return "length";
    case "tool_calls": return "tool_calls";
    case "content_filter": return "content_filter";
  }
  return "stop";
}

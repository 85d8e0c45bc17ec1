/** Why an answer ended, in Chat's words (`finish_reason`). */
import type { IrFinish } from "../../ir.ts";

/** A Chat `finish_reason` as the model's; the legacy `function_call` is a tool call, anything unknown a stop. */
export function irFinish(reason: unknown): IrFinish {
  switch (reason) {
    case "length": return "length";
    case "tool_calls": case "function_call": return "tool_calls";
    case "content_filter": return "content_filter";
  }
  return "stop";
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

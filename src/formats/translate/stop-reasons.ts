/** Why an answer ended, in each format's words. */

/**
 * OpenAI `finish_reason` → Anthropic `stop_reason`. OpenAI does not say which stop
 * sequence matched, so a stop is always `end_turn` (with `stop_sequence: null`).
 */
export function anthropicStopReason(finish: unknown): string {
  switch (finish) {
    case "length": return "max_tokens";
    case "tool_calls": case "function_call": return "tool_use";
    case "content_filter": return "refusal";
  }
  return "end_turn";
}

/** Anthropic `stop_reason` → OpenAI `finish_reason`; a paused server-tool turn reads as a stop. */
export function openaiFinishReason(stop: unknown): string {
  switch (stop) {
    case "max_tokens": case "model_context_window_exceeded": return "length";
    case "tool_use": return "tool_calls";
    case "refusal": return "content_filter";
  }
  return "stop";
}

import { count, earliest, field, indexOfBytes, isObject, needle, parseObject, type JsonObject } from "../json.ts";
import type { StreamUsageTap } from "../format.ts";
import type { Usage } from "../usage.ts";

/** Raw Anthropic counts, kept apart so a stream can override them field by field. */
export interface AnthropicCounts {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  thinking?: number;
}

/**
 * Copies the counts present in an Anthropic `usage` object over `into`. Absent and
 * null fields leave the earlier value: `message_delta` sends nulls for what it does
 * not restate.
 */
export function mergeAnthropicCounts(into: AnthropicCounts, u: JsonObject): void {
  const input = count(u.input_tokens);
  const output = count(u.output_tokens);
  const cacheRead = count(u.cache_read_input_tokens);
  const cacheWrite = count(u.cache_creation_input_tokens);
  const thinking = count(field(u.output_tokens_details, "thinking_tokens"));
  if (input !== undefined) into.input = input;
  if (output !== undefined) into.output = output;
  if (cacheRead !== undefined) into.cacheRead = cacheRead;
  if (cacheWrite !== undefined) into.cacheWrite = cacheWrite;
  if (thinking !== undefined) into.thinking = thinking;
}

/**
 * Anthropic's `input_tokens` excludes cache reads and writes, so both are added back
 * into `prompt`. Thinking is already inside `output_tokens`; newer API versions also
 * break it out as `output_tokens_details.thinking_tokens`, which becomes `reasoning`.
 */
export function anthropicUsage(c: AnthropicCounts): Usage {
  const cacheRead = c.cacheRead ?? 0;
  const cacheWrite = c.cacheWrite ?? 0;
  return {
    prompt: (c.input ?? 0) + cacheRead + cacheWrite,
    completion: c.output ?? 0,
    cacheRead,
    cacheWrite,
    reasoning: c.thinking ?? 0,
  };
}

/** Messages, and `count_tokens` (which has only an input count). */
export function anthropicUsageFromJson(body: unknown): Usage | undefined {
  if (!isObject(body)) return undefined;
  if (isObject(body.usage)) {
    const counts: AnthropicCounts = {};
    mergeAnthropicCounts(counts, body.usage);
    return anthropicUsage(counts);
  }
  const countTokens = count(body.input_tokens);
  if (countTokens !== undefined) return { prompt: countTokens, completion: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
  return undefined;
}

const USAGE = needle('"usage"');
const MESSAGE_START = needle("message_start");

/**
 * `message_start` gives the input side and an initial output count; each
 * `message_delta` restates cumulative counts, so its fields replace, never add to,
 * what was known.
 */
export function anthropicTap(): StreamUsageTap {
  const counts: AnthropicCounts = {};
  let seen = false;
  return {
    onEvent(event) {
      const data = event.data;
      if (!data.includes('"usage"') && !data.includes("message_start")) return;
      const obj = parseObject(data);
      if (obj === undefined) return;
      if (obj.type === "message_start" && isObject(obj.message)) {
        const message = obj.message;
        if (isObject(message.usage)) {
          mergeAnthropicCounts(counts, message.usage);
          seen = true;
        }
      } else if (obj.type === "message_delta" && isObject(obj.usage)) {
        mergeAnthropicCounts(counts, obj.usage);
        seen = true;
      }
    },
    result: () => (seen ? anthropicUsage(counts) : undefined),
    firstNeeded: (bytes) => earliest(indexOfBytes(bytes, USAGE), indexOfBytes(bytes, MESSAGE_START)),
  };
}

import { count, isObject, type JsonObject } from "../../formats/json.ts";
import type { Usage } from "../../formats/usage.ts";

/** One upstream `response.done` event, as metering needs it. */
export interface ResponseDone {
  /** undefined when the event carried no usage object. */
  usage: Usage | undefined;
  /** `completed`, `cancelled`, `failed`, `incomplete`… */
  status: string | undefined;
}

const n = (v: unknown): number => count(v) ?? 0;
const field = (o: unknown, key: string): unknown => (isObject(o) ? o[key] : undefined);

/**
 * Realtime usage (`input_tokens`, `output_tokens`, `input_token_details`,
 * `output_token_details` — singular "token", unlike the Responses API) normalised to
 * {@link Usage}. Cached input is part of `prompt` and priced as `cacheRead`; the audio
 * counts are the uncached audio only, so a cached audio token is never charged twice
 * (cached audio is charged at the cached price).
 */
export function realtimeUsage(u: JsonObject): Usage {
  const prompt = n(u.input_tokens);
  const completion = n(u.output_tokens);
  const input = u.input_token_details;
  const output = u.output_token_details;
  const cacheRead = Math.min(prompt, n(field(input, "cached_tokens")));
  const cachedDetails = field(input, "cached_tokens_details");
  const cachedAudio = n(field(cachedDetails, "audio_tokens"));
  const cachedImage = n(field(cachedDetails, "image_tokens"));
  const uncached = prompt - cacheRead;
  const audioPrompt = Math.min(uncached, Math.max(0, n(field(input, "audio_tokens")) - cachedAudio));
  const imagePrompt = Math.min(uncached - audioPrompt, Math.max(0, n(field(input, "image_tokens")) - cachedImage));
  const audioCompletion = Math.min(completion, n(field(output, "audio_tokens")));
  const usage: Usage = { prompt, completion, cacheRead, cacheWrite: 0, reasoning: 0 };
  if (audioPrompt > 0) usage.audioPrompt = audioPrompt;
  if (imagePrompt > 0) usage.imagePrompt = imagePrompt;
  if (audioCompletion > 0) usage.audioCompletion = audioCompletion;
  return usage;
}

/**
 * Reads a `response.done` event out of an upstream text frame. Only frames whose text
 * mentions `"response.done"` are parsed; audio deltas and the rest pass untouched.
 */
export function responseDoneOf(text: string): ResponseDone | undefined {
  if (!text.includes('"response.done"')) return undefined;
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(event) || event.type !== "response.done") return undefined;
  const response = event.response;
  const usage = field(response, "usage");
  const status = field(response, "status");
  return { usage: isObject(usage) ? realtimeUsage(usage) : undefined, status: typeof status === "string" ? status : undefined };
}

/** True for the event that starts a response (cheap check, no parse). */
export function isResponseCreated(text: string): boolean {
  return text.includes('"response.created"');
}

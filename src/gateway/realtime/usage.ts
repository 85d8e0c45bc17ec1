import { count, isObject, parseObject, type JsonObject } from "../../formats/json.ts";
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
  const event = parseObject(text);
  if (event === undefined || event.type !== "response.done") return undefined;
  const response = event.response;
  const usage = field(response, "usage");
  const status = field(response, "status");
  return { usage: isObject(usage) ? realtimeUsage(usage) : undefined, status: typeof status === "string" ? status : undefined };
}

/**
 * True for the event that starts a response. Responses under way are counted on it (a
 * client leaving then is waited for), so a text that merely mentions the name is not one:
 * only frames that hold it are parsed, and they are small and rare.
 */
export function isResponseCreated(text: string): boolean {
  if (!text.includes('"response.created"')) return false;
  return parseObject(text)?.type === "response.created";
}

/**
 * The events whose `delta` is generated text: output text, the transcript of output audio,
 * tool-call arguments (GA names and the beta's). Audio deltas are not among them: their
 * base64 sound says nothing reliable of tokens (its size depends on the audio format), and
 * the transcript beside it stands for what was said.
 */
const TEXT_DELTAS = new Set([
  "response.output_text.delta",
  "response.text.delta",
  "response.output_audio_transcript.delta",
  "response.audio_transcript.delta",
  "response.function_call_arguments.delta",
  "response.mcp_call_arguments.delta",
]);

/**
 * Bytes of generated text in an upstream text frame (0 for any other frame), for
 * estimating a response the upstream never reported usage for. Audio deltas, the bulk of
 * a voice session's frames, are ruled out by a substring check before any parse.
 */
export function generatedTextBytes(text: string): number {
  if (!text.includes('delta"') || text.includes('audio.delta"')) return 0;
  const event = parseObject(text);
  if (event === undefined || typeof event.delta !== "string" || typeof event.type !== "string" || !TEXT_DELTAS.has(event.type)) return 0;
  return Buffer.byteLength(event.delta);
}

const isQuotaError = (error: unknown) => field(error, "type") === "insufficient_quota" || field(error, "code") === "insufficient_quota";

/**
 * True for an upstream frame saying the key's account has spent its quota: a
 * `response.done` that failed with `status_details.error` of type or code
 * `insufficient_quota` (as OpenAI ends a response then), or an `error` event of that kind.
 * Such a key is dead for every session, as its HTTP 429 `insufficient_quota` is
 * (routing/provider-errors.ts). Only frames naming it are parsed.
 */
export function saysQuotaSpent(text: string): boolean {
  if (!text.includes("insufficient_quota")) return false;
  const event = parseObject(text);
  if (event === undefined) return false;
  if (event.type === "error") return isQuotaError(event.error);
  const response = event.response;
  return event.type === "response.done" && field(response, "status") === "failed" && isQuotaError(field(field(response, "status_details"), "error"));
}

/**
 * Translation between wire formats (issue 16): what a call becomes when the key that
 * serves it does not speak the client's format. Each translator is pure: it takes the
 * client's body or the upstream's answer and returns the other side's, and it holds no
 * routing or pipeline knowledge (the caller decides when to translate).
 */
import type { HttpError } from "../../core/errors.ts";
import type { JsonObject } from "../json.ts";
import type { SseEvent } from "../sse.ts";

/** The wire formats a translator joins (a family may carry several; OpenAI carries Chat and Responses). */
export type Wire = "anthropic-messages" | "openai-chat" | "openai-responses" | "gemini-generate";

export interface RequestContext {
  /**
   * The output bound to send when the target format requires one and the client gave
   * none (Anthropic's `max_tokens`): the bound the router reserved for the call.
   */
  maxTokens: number;
  /**
   * The effective model. Formats that name it in the body find it there too; a Gemini
   * client names it only in its path, so a translator from Gemini reads it here.
   */
  model?: string;
  /** Whether the client asked for a stream (a Gemini client asks by its path, not its body). */
  stream?: boolean;
}

/** Where a translated request goes: the upstream's path and query (`?…` or empty). */
export interface UpstreamTarget {
  path: string;
  search: string;
}

export interface AnswerContext {
  /** Unix seconds for answers whose format stamps a creation time (OpenAI's `created`); now when absent. */
  created?: number;
  /**
   * Whether an OpenAI Chat stream ends with its usage chunk (the client asked for
   * `stream_options.include_usage`); true when absent. Ignored by formats whose
   * streams always carry usage.
   */
  usageChunk?: boolean;
  /**
   * The client's request body, for answers that name what the request declared (the
   * Responses namespaces a function call belongs to).
   */
  clientRequest?: JsonObject;
}

/** Turns one upstream stream into the client's, event by event. */
export interface StreamTranslator {
  /** Feeds one upstream event; returns the client's SSE bytes it makes (often none). */
  push(event: SseEvent): Uint8Array;
  /** The upstream ended normally: the client's closing events, if not already sent. */
  end(): Uint8Array;
  /** The stream failed: the client format's terminal error event (nothing after a finished stream). */
  fail(error: HttpError): Uint8Array;
}

export interface Translator {
  readonly client: Wire;
  readonly upstream: Wire;
  /**
   * Where the translated request goes. Most formats have one path; Gemini names the
   * model and the streaming method in it (`/v1beta/models/m:streamGenerateContent?alt=sse`).
   */
  upstreamTarget(model: string | undefined, stream: boolean): UpstreamTarget;
  /**
   * The client's request body in the upstream's format. Throws a 400 (`badRequest`)
   * naming the parameter and the upstream format when something cannot be carried.
   */
  request(body: JsonObject, context: RequestContext): JsonObject;
  /** A complete upstream answer in the client's format. */
  response(body: unknown, context?: AnswerContext): JsonObject;
  /** A translator for one stream. */
  stream(context?: AnswerContext): StreamTranslator;
  /** An upstream error answer as the client format's error, with the status to send. */
  error(status: number, body: unknown): { status: number; body: unknown };
}

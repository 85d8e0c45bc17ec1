/**
 * What a wire format knows of translation: how to read its own requests, answers and
 * streams into the shared model (`ir.ts`), and how to write them out of it. A client
 * format's codec reads the request and writes the answer; an upstream format's codec
 * writes the request and reads the answer. `compose` joins two into a Translator.
 */
import { badRequest, type HttpError } from "../../core/errors.ts";
import type { JsonObject } from "../json.ts";
import type { SseEvent } from "../sse.ts";
import type { IrAnswer, IrEvent, IrRequest } from "./ir.ts";
import type { AnswerContext, RequestContext, UpstreamTarget, Wire } from "./translator.ts";

/** What a request reader is told besides the body. */
export interface ReadContext {
  /** The effective model (a Gemini client names it in the path only). */
  model: string | undefined;
  /** Whether the client asked for a stream (a Gemini client asks by its path). */
  stream: boolean;
  /** The upstream format's name, for refusals of what the shared model cannot hold ("… which speaks Anthropic Messages"). */
  upstream: string;
}

/** An upstream stream read into the shared model, event by event. */
export interface StreamReader {
  /** The model's events one upstream event makes (often none, never held back for later). */
  push(event: SseEvent): IrEvent[];
  /** The upstream stream ended: anything still owed (a finish the upstream never sent). */
  end(): IrEvent[];
}

/** The shared model's events written as one client stream. */
export interface StreamWriter {
  /** The client's SSE text for these events ("" when they make none yet). */
  write(events: IrEvent[]): string;
  /** The stream ended normally: the client's closing events, if not already sent. */
  end(): string;
  /** The stream failed: the client format's terminal error event (nothing after a finished stream). */
  fail(error: HttpError): string;
}

export interface Codec {
  readonly wire: Wire;
  /** The format's name in messages: "OpenAI Chat Completions", "OpenAI Responses", "Anthropic Messages", "Gemini generateContent". */
  readonly name: string;

  // ——— as the client's format ———
  /**
   * A client's request as the shared model. Throws a 400 for a malformed request, and
   * a refusal (`refusal()` below) for a feature with meaning the model cannot hold
   * (a hosted tool of this format only).
   */
  readRequest(body: JsonObject, context: ReadContext): IrRequest;
  /** A complete answer in this format. */
  writeAnswer(answer: IrAnswer, context: AnswerContext): JsonObject;
  /** A writer of one stream in this format. */
  streamWriter(context: AnswerContext): StreamWriter;
  /** An error in this format's envelope, with the status its SDKs expect. */
  writeError(error: HttpError): { status: number; body: unknown };

  // ——— as the upstream's format ———
  /** Where requests go. */
  target(model: string | undefined, stream: boolean): UpstreamTarget;
  /**
   * The shared model as a request in this format. Drops hints it cannot carry and
   * refuses, naming the client's parameter (`refusal()`), what it cannot carry that
   * changes the answer's meaning.
   */
  writeRequest(request: IrRequest, context: RequestContext): JsonObject;
  /** A complete upstream answer (undefined or malformed bodies give an empty answer, never a throw). */
  readAnswer(body: unknown): IrAnswer;
  /** A reader of one upstream stream. */
  streamReader(): StreamReader;
  /** An upstream error answer (status and parsed body) as an HttpError. */
  readError(status: number, body: unknown): HttpError;
}

/**
 * The 400 for something the upstream's format cannot carry and that changes the
 * answer's meaning: names the client's parameter and the upstream format; nothing is sent.
 * The message leads with the parameter (Anthropic's own style, `stop_sequences: …`):
 * Anthropic's and Google's envelopes have no `param` field, so the message is the only
 * place their clients can read it.
 */
export function refusal(param: string, what: string, upstream: string): HttpError {
  return badRequest(`${param}: ${what} cannot be carried to this model's upstream, which speaks ${upstream}`, param, "unsupported_parameter");
}

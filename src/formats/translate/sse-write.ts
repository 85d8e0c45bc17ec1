/** Writing the client's SSE: events are built as text, and encoded once per upstream event by compose(). */
import type { HttpError } from "../../core/errors.ts";
import type { WireFormat } from "../format.ts";
import type { AnswerContext } from "./translator.ts";

export const EMPTY = new Uint8Array(0);

/** An event with a name (Anthropic names every event by its `type`). */
export const namedEvent = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

/** A data-only event (OpenAI chunks). */
export const dataEvent = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

export const DONE = "data: [DONE]\n\n";

const decoder = new TextDecoder();

/** A client format's terminal error event (its envelope's own bytes), as the text a stream writer returns. */
export const errorEventText = (format: WireFormat, error: HttpError): string => decoder.decode(format.streamErrorEvent(error));

/** The creation time an answer is stamped with (Unix seconds): the call's start when the caller gives it, else now. */
export const createdSeconds = (context: AnswerContext): number => context.created ?? Math.floor(Date.now() / 1000);

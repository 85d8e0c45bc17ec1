/** Reading and writing SSE transcripts in translation tests, with the router's own decoder. */
import { HttpError } from "../../src/core/errors.ts";
import { createSseDecoder } from "../../src/formats/sse.ts";
import type { Ev } from "../fixtures/translation/anthropic-openai.ts";

/** SSE text of events, written as each provider writes them (`event:` line when named). */
export const sseText = (events: Ev[]): string =>
  events.map((e) => `${e.event === undefined ? "" : `event: ${e.event}\n`}data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`).join("");

/** SSE text or bytes decoded into events, JSON data parsed (`[DONE]` kept as the string). */
export function decodeSse(input: string | Uint8Array): Ev[] {
  const events: Ev[] = [];
  const decoder = createSseDecoder((e) => {
    const data = e.data === "[DONE]" ? e.data : JSON.parse(e.data);
    events.push(e.event === undefined ? { data } : { event: e.event, data });
  });
  decoder.push(typeof input === "string" ? new TextEncoder().encode(input) : input);
  decoder.end();
  return events;
}

/** The HttpError a call throws; a test fails when it throws nothing or something else. */
export function thrownHttpError(run: () => unknown): HttpError {
  try {
    run();
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  throw new Error("expected an HttpError");
}

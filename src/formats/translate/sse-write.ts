/** Writing the client's SSE: events are built as text and encoded once per upstream event. */
const encoder = new TextEncoder();

export const EMPTY = new Uint8Array(0);

/** An event with a name (Anthropic names every event by its `type`). */
export const namedEvent = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

/** A data-only event (OpenAI chunks). */
export const dataEvent = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

export const DONE = "data: [DONE]\n\n";

/** The events made from one upstream event as bytes; EMPTY when there are none. */
export const encodeAll = (events: string[]): Uint8Array => (events.length === 0 ? EMPTY : encoder.encode(events.join("")));

/**
 * Tool-call ids for calls Gemini made, carrying what Gemini needs back with the call.
 *
 * Gemini 3 requires a function call's `thoughtSignature` back with the call in the next
 * turn's history, and it may give the call an `id` that the function's response should
 * repeat. A client of another format sends back only the call's id (Chat's
 * `tool_call_id`, Anthropic's `tool_use_id`, Responses' `call_id`), so both ride inside
 * the id the client sees: `gemini_` + base64url(id NUL signature). The alphabet keeps
 * the id valid for Anthropic (`^[a-zA-Z0-9_-]+$`). A call with neither gets a plain id
 * made from the answer's id and the call's ordinal, unique across turns.
 */
const PREFIX = "gemini_";
const SEPARATOR = "\u0000";

/** What Gemini said of one call, recovered from an id this module made. */
export interface GeminiCallOrigin {
  /** Gemini's own `functionCall.id`, when it gave one. */
  id?: string;
  /** The call part's `thoughtSignature`, when it had one. */
  signature?: string;
}

const nonEmpty = (value: unknown): value is string => typeof value === "string" && value !== "";

/** Characters outside Anthropic's id alphabet, replaced when an id is made from another id. */
const idSafe = (text: string) => text.replace(/[^a-zA-Z0-9_-]/g, "_");

/**
 * The id a client sees for Gemini's call number `ordinal` of the answer `answerId`.
 * Gemini's `id` alone (no signature) is encoded too, so the request writer knows it came
 * from Gemini and may be sent back as `functionCall.id`/`functionResponse.id`.
 */
export function callIdOf(origin: GeminiCallOrigin, answerId: string, ordinal: number): string {
  if (!nonEmpty(origin.id) && !nonEmpty(origin.signature)) return `call_${idSafe(answerId)}_${ordinal}`;
  const payload = `${origin.id ?? ""}${SEPARATOR}${origin.signature ?? ""}`;
  return PREFIX + Buffer.from(payload, "utf8").toString("base64url");
}

/** What an id made by `callIdOf` carries; undefined for any other id. */
export function originOfCallId(callId: string): GeminiCallOrigin | undefined {
  if (!callId.startsWith(PREFIX)) return undefined;
  const encoded = callId.slice(PREFIX.length);
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) return undefined;
  const payload = Buffer.from(encoded, "base64url").toString("utf8");
  const at = payload.indexOf(SEPARATOR);
  if (at === -1) return undefined;
  const id = payload.slice(0, at);
  const signature = payload.slice(at + 1);
  return { ...(id !== "" && { id }), ...(signature !== "" && { signature }) };
}

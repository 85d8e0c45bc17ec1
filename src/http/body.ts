import { badRequest, tooLarge } from "../core/errors.ts";
import { concatBytes } from "../core/bytes.ts";

const utf8 = new TextDecoder();

/**
 * Reads a request body, refusing it with 413 as soon as it grows past `limit`
 * bytes: a declared Content-Length over the limit is refused before reading, an
 * undeclared one while reading, so an oversized body is never buffered whole.
 */
export async function readBodyBytes(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  if (!request.body) return new Uint8Array(0);
  // A declared length within the limit: let the runtime read it natively in one go.
  if (declared !== null) return new Uint8Array(await request.arrayBuffer());
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return concatBytes(chunks, size);
}

/**
 * Parses body bytes as a JSON object; anything else is a 400. The parser's own
 * message is not repeated: it can quote the offending token, which may be a secret.
 */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  if (bytes.byteLength === 0) throw badRequest("Request body is empty; a JSON object is required");
  return parseJsonObjectText(utf8.decode(bytes));
}

/** `parseJsonObject` of a body already decoded. */
export function parseJsonObjectText(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest("Request body is not valid JSON");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw badRequest("Request body must be a JSON object");
  }
  return parsed as Record<string, unknown>;
}

/**
 * Refuses a body with a field outside `allowed` (400 naming the field): a misspelt
 * field must not be silently ignored while the call goes ahead.
 */
export function onlyFields(body: Record<string, unknown>, allowed: readonly string[]): void {
  for (const field of Object.keys(body)) {
    if (!allowed.includes(field)) throw badRequest(`Unknown field "${field}"; accepted fields: ${allowed.join(", ") || "none"}`, field);
  }
}

/**
 * Reads and parses a JSON object body within the size limit (a management write). Text
 * that is not well-formed Unicode (a lone surrogate, which JSON can spell as `\ud800`)
 * is a 400 naming its top-level field: stored, the database would change it into
 * another text (U+FFFD), so two different values could become one.
 */
export async function readJsonObject(request: Request, limit: number): Promise<Record<string, unknown>> {
  const body = parseJsonObject(await readBodyBytes(request, limit));
  for (const [field, value] of Object.entries(body)) {
    if (!field.isWellFormed() || !wellFormed(value)) throw badRequest(`${field.toWellFormed()} holds text that is not valid Unicode (a lone surrogate)`, field.toWellFormed());
  }
  return body;
}

/** Whether every string in a JSON value (keys too) is well-formed Unicode. */
function wellFormed(value: unknown): boolean {
  if (typeof value === "string") return value.isWellFormed();
  if (value === null || typeof value !== "object") return true;
  if (Array.isArray(value)) return value.every(wellFormed);
  return Object.entries(value).every(([key, inner]) => key.isWellFormed() && wellFormed(inner));
}

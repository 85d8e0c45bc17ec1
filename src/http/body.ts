import { badRequest, tooLarge } from "../core/errors.ts";

/**
 * Reads a request body, refusing it with 413 as soon as it grows past `limit`
 * bytes: a declared Content-Length over the limit is refused before reading, an
 * undeclared one while reading, so an oversized body is never buffered whole.
 */
export async function readBodyBytes(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  if (!request.body) return new Uint8Array(0);
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
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** Reads and parses a JSON object body; anything else is a 400 that says what was wrong. */
export async function readJsonObject(request: Request, limit: number): Promise<Record<string, unknown>> {
  const bytes = await readBodyBytes(request, limit);
  if (bytes.byteLength === 0) throw badRequest("Request body is empty; a JSON object is required");
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    throw badRequest(`Request body is not valid JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw badRequest("Request body must be a JSON object");
  }
  return parsed as Record<string, unknown>;
}

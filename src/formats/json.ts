/**
 * Readers of untrusted upstream JSON shared by the families' modules: nothing here
 * throws on odd input, it just finds less.
 */
import type { Usage } from "./usage.ts";

export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A token count, or undefined when the field is absent or not a count. */
export function count(v: unknown): number | undefined {
  if (typeof v === "number") return Number.isFinite(v) && v >= 0 ? v : undefined;
  // proto3 JSON writes 64-bit integers as strings; accept them in case an upstream does.
  if (typeof v === "string" && /^\d+$/.test(v)) return Number(v);
  return undefined;
}

/** A count, 0 when missing or malformed. */
export const n = (v: unknown): number => count(v) ?? 0;

export function field(o: unknown, key: string): unknown {
  return isObject(o) ? o[key] : undefined;
}

/** Parses an event's data as a JSON object; anything else (e.g. OpenAI's `[DONE]`) is undefined. */
export function parseObject(data: string): JsonObject | undefined {
  try {
    const v: unknown = JSON.parse(data);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `JSON.parse` reads the text (any JSON value, not only an object). */
export function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Adds the optional modality breakdowns only when reported, to keep records small. */
export function withModalities(u: Usage, audioPrompt: number, audioCompletion: number, imagePrompt: number, imageCompletion: number): Usage {
  if (audioPrompt > 0) u.audioPrompt = audioPrompt;
  if (audioCompletion > 0) u.audioCompletion = audioCompletion;
  if (imagePrompt > 0) u.imagePrompt = imagePrompt;
  if (imageCompletion > 0) u.imageCompletion = imageCompletion;
  return u;
}

const bufferIndexOf = Buffer.prototype.indexOf as (this: Uint8Array, value: Uint8Array | number, byteOffset?: number) => number;

/**
 * Where `value` first occurs in `bytes` from `from`, or -1: Buffer's native search run on
 * the Uint8Array itself. Wrapping each stream chunk in a Buffer view instead reads its
 * `.buffer`, which gives the array an ArrayBuffer object of its own: about 0.2 µs and
 * two more objects for the collector per chunk, twice per chunk (content count, usage tap).
 */
export const indexOfBytes = (bytes: Uint8Array, value: Uint8Array | number, from = 0): number => bufferIndexOf.call(bytes, value, from);

/** Byte needles for raw searches: searching with a string converts it on every call (4x slower). */
export const needle = (text: string) => new TextEncoder().encode(text);

/** The offset of the first `"<key>"` in `bytes` whose value is an object (`"usage":null` is not), or -1. */
export function objectKeyAt(bytes: Uint8Array, quotedKey: Uint8Array): number {
  for (let at = indexOfBytes(bytes, quotedKey); at !== -1; at = indexOfBytes(bytes, quotedKey, at + 1)) {
    let i = at + quotedKey.byteLength;
    while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x09 || bytes[i] === 0x3a || bytes[i] === 0x0d || bytes[i] === 0x0a)) i++;
    // Cut off before the value (end of this read): say yes, the decoder will know.
    if (i >= bytes.length || bytes[i] === 0x7b) return at;
  }
  return -1;
}

/** The smaller of two offsets where -1 means none. */
export const earliest = (a: number, b: number) => (a === -1 ? b : b === -1 ? a : Math.min(a, b));

/** Chunks carry `"usage":null` until the usage one: only an object is worth parsing. */
export const HAS_USAGE_OBJECT = /"usage"\s*:\s*\{/;

import { randomBytes } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Uniform base62 string from `bytes` random bytes (rejection sampling keeps it unbiased). */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 62 * 4: bytes above it would favour the first characters.
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/**
 * Short, unique id for a request, echoed in `X-Request-Id` and log lines (cheap: it is
 * made per request). A version 7 UUID: its first 48 bits are the time in milliseconds,
 * so ids grow with time and each request-log row, keyed by its id, is added at the end
 * of the table's key index instead of at a random place in it.
 */
export function requestId(): string {
  return `req_${Bun.randomUUIDv7().replaceAll("-", "")}`;
}

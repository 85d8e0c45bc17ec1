/**
 * Bytes of generated content in an answer or a stream chunk, for estimating completion
 * tokens when the upstream reported none: the string values of the members that carry
 * text, tool arguments and reasoning in the three families' answers and deltas, not
 * the JSON and SSE framing around them (a chunk of one token carries about 150 bytes of
 * framing). Native substring searches over the bytes, no parse: it runs on every chunk
 * of every stream, since whether usage will come is known only at the end.
 */
import { indexOfBytes, needle } from "../../formats/json.ts";

const CONTENT_KEYS = ["content", "text", "delta", "arguments", "partial_json", "thinking", "refusal", "reasoning_content", "transcript"].map(needle);

/** The content keys by their last byte: most member names are ruled out by one comparison. */
const KEYS_BY_LAST_BYTE = new Map<number, Uint8Array[]>();
for (const key of CONTENT_KEYS) {
  const last = key[key.byteLength - 1]!;
  KEYS_BY_LAST_BYTE.set(last, [...(KEYS_BY_LAST_BYTE.get(last) ?? []), key]);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether the member name that ends with the quote at `close` is one of the content keys. */
function isContentKey(bytes: Uint8Array, close: number): boolean {
  const candidates = KEYS_BY_LAST_BYTE.get(bytes[close - 1]!);
  if (!candidates) return false;
  for (const key of candidates) {
    const start = close - key.byteLength;
    if (start < 1 || bytes[start - 1] !== QUOTE) continue;
    let same = true;
    for (let k = key.byteLength - 2; k >= 0; k--) {
      if (bytes[start + k] !== key[k]) {
        same = false;
        break;
      }
    }
    if (same) return true;
  }
  return false;
}

/** Where the string that starts at `from` (just after its opening quote) ends: its closing quote, or the end of the bytes. */
function stringEnd(bytes: Uint8Array, from: number): number {
  let at = indexOfBytes(bytes, QUOTE, from);
  while (at !== -1) {
    let slashes = 0;
    for (let k = at - 1; k >= from && bytes[k] === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return at;
    at = indexOfBytes(bytes, QUOTE, at + 1);
  }
  return bytes.byteLength;
}

/** Where a string member's value starts: the key's closing quote, a colon, (a space,) an opening quote. */
const VALUE_STARTS = [needle('":"'), needle('": "')];

export function countContent(bytes: Uint8Array): number {
  // Native substring search finds only string members (a few per chunk); the JS loop
  // then runs per member, not per byte or per colon.
  let total = 0;
  for (const start of VALUE_STARTS) {
    // A producer writes one style: compact JSON (OpenAI, Anthropic) never needs the spaced search.
    if (total > 0) break;
    let at = indexOfBytes(bytes, start);
    while (at !== -1) {
      const value = at + start.byteLength;
      if (isContentKey(bytes, at)) {
        const end = stringEnd(bytes, value);
        total += end - value;
        at = indexOfBytes(bytes, start, end + 1);
      } else at = indexOfBytes(bytes, start, value);
    }
  }
  return total;
}

/** A rough token count for when the upstream reported none: about four bytes per token. */
export function estimateTokens(bytes: number): number {
  return Math.ceil(bytes / 4);
}

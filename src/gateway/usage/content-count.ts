/**
 * Bytes of generated content in an answer or a stream chunk, for estimating completion
 * tokens when the upstream reported none: the string values of the members that carry
 * text, tool arguments and reasoning in the three families' answers and deltas, not
 * the JSON and SSE framing around them (a chunk of one token carries about 150 bytes of
 * framing). One pass of `indexOf` over the bytes, no parse: it runs on every chunk of
 * every stream, since whether usage will come is known only at the end.
 */

const CONTENT_KEYS = ["content", "text", "delta", "arguments", "partial_json", "thinking", "refusal", "reasoning_content", "transcript"].map((key) =>
  new TextEncoder().encode(key),
);

const QUOTE = 0x22;
const COLON = 0x3a;
const SPACE = 0x20;
const BACKSLASH = 0x5c;

/** Whether the member name that ends with the quote at `close` is one of the content keys. */
function isContentKey(bytes: Uint8Array, close: number): boolean {
  for (const key of CONTENT_KEYS) {
    const start = close - key.byteLength;
    if (start < 1 || bytes[start - 1] !== QUOTE) continue;
    let same = true;
    for (let k = 0; k < key.byteLength; k++) {
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
  let at = bytes.indexOf(QUOTE, from);
  while (at !== -1) {
    let slashes = 0;
    for (let k = at - 1; k >= from && bytes[k] === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return at;
    at = bytes.indexOf(QUOTE, at + 1);
  }
  return bytes.byteLength;
}

export function countContent(bytes: Uint8Array): number {
  let total = 0;
  let colon = bytes.indexOf(COLON);
  while (colon !== -1) {
    let next = colon + 1;
    if (colon > 0 && bytes[colon - 1] === QUOTE) {
      let value = colon + 1;
      while (bytes[value] === SPACE) value++;
      if (bytes[value] === QUOTE && isContentKey(bytes, colon - 1)) {
        const end = stringEnd(bytes, value + 1);
        total += end - (value + 1);
        next = end + 1;
      }
    }
    colon = bytes.indexOf(COLON, next);
  }
  return total;
}

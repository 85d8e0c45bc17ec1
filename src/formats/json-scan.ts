/**
 * A JSON scanner that validates without building anything: it accepts only texts
 * `JSON.parse` accepts (test/unit/json-scan.test.ts fuzzes the two against each other)
 * and says where each value ends, so a large body's conversation can be checked and
 * left as text (large-body.ts) instead of becoming thousands of objects and strings.
 *
 * Its speed comes from the runtime's native searches: a string without escapes is
 * crossed with `indexOf`, and the next backslash and the next control character are
 * searched once for all the strings before them. A string with escapes is read
 * character by character from its first one (in code or JSON quoted in a conversation
 * they come every few characters). The 280 KB conversation of the benchmark: about 45 µs,
 * as long as `JSON.parse`; a conversation of code, 0.65 times `JSON.parse`'s time.
 */

/** The text is not JSON. */
export const SCAN_INVALID = -1;
/** Nested deeper than the scanner follows: the caller parses the text instead (JSON.parse has its own limit). */
export const SCAN_TOO_DEEP = -2;

/** Containers nested deeper than this end the scan with SCAN_TOO_DEEP. */
export const SCAN_MAX_DEPTH = 512;

/**
 * Called for each member of an object inside a scanned value, before its value is
 * scanned: the key's text lies in [keyStart, keyEnd) (between its quotes, as written),
 * `escaped` says whether it holds an escape, and the member's value starts at `valueStart`.
 */
export type KeyVisitor = (keyStart: number, keyEnd: number, escaped: boolean, valueStart: number) => void;

const CONTROL = /[\x00-\x1f]/g;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Escapes closer than DENSE_GAP characters DENSE_RUN times in a row switch a string to reading character by character. */
const DENSE_GAP = 24;
const DENSE_RUN = 4;

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);

/** After a backslash, the characters JSON allows besides `u`: `"` `\` `/` b f n r t. */
const isSimpleEscape = (c: number) => c === QUOTE || c === BACKSLASH || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74;

/** One text's scan, forward from its start. */
export class JsonScanner {
  /** Whether the last string scanned held an escape. */
  escaped = false;
  /**
   * The next backslash and the next control character at or after the position last
   * asked for (the text's length: none left; an int, never Infinity, so the
   * positions derived from them stay integers for the JIT: a double index made the
   * character loop below ten times slower), each searched again only once passed: the
   * backslashes with the native `indexOf`, the control characters (none in compact
   * JSON) with a regular expression. So calls must move forward through the text: a
   * scan never starts before the end of the previous one.
   */
  private backslash = -1;
  private control = -1;

  constructor(
    readonly text: string,
    /** The caller knows the text holds no control character (its bytes hold none): none is searched for. */
    controlFree = false,
  ) {
    if (controlFree) this.control = text.length;
  }

  private nextBackslash(from: number): number {
    if (this.backslash >= from) return this.backslash;
    const found = this.text.indexOf("\\", from);
    return (this.backslash = found < 0 ? this.text.length : found);
  }

  private nextControl(from: number): number {
    if (this.control >= from) return this.control;
    CONTROL.lastIndex = from;
    return (this.control = CONTROL.test(this.text) ? CONTROL.lastIndex - 1 : this.text.length);
  }

  /** Where the string whose opening quote is at `open` ends (after its closing quote), or SCAN_INVALID; `escaped` then says whether it held an escape. */
  string(open: number): number {
    const text = this.text;
    this.escaped = false;
    const quote = text.indexOf('"', open + 1);
    if (quote < 0) return SCAN_INVALID;
    const at = this.nextBackslash(open + 1);
    // A control character may not stand bare in a string.
    if (this.nextControl(open + 1) < Math.min(at, quote)) return SCAN_INVALID;
    // No escape: the whole string is crossed natively.
    if (at > quote) return quote + 1;
    this.escaped = true;
    // With escapes: from one escape to the next by native search (cached: each backslash
    // is found once), the closing quote searched again only when an escaped one passed
    // it. Where escapes come every few characters (code, JSON quoted in a message) a
    // search per escape costs more than reading on: then character by character.
    let end = quote;
    let escape = at;
    let dense = 0;
    for (;;) {
      const length = this.escapeLength(escape);
      if (length === 0) return SCAN_INVALID;
      const after = escape + length;
      if (after > end) {
        end = text.indexOf('"', after);
        if (end < 0) return SCAN_INVALID;
      }
      escape = this.nextBackslash(after);
      if (this.nextControl(after) < Math.min(escape, end)) return SCAN_INVALID;
      if (escape > end) return end + 1;
      if (escape - after >= DENSE_GAP) dense = 0;
      else if (++dense === DENSE_RUN) return this.readEscaped(escape);
    }
  }

  /** How long the escape whose backslash is at `at` is (`\uXXXX` 6, the others 2), or 0 when JSON has no such escape. */
  private escapeLength(at: number): number {
    const text = this.text;
    const next = text.charCodeAt(at + 1);
    if (next === 0x75) return isHex(text.charCodeAt(at + 2)) && isHex(text.charCodeAt(at + 3)) && isHex(text.charCodeAt(at + 4)) && isHex(text.charCodeAt(at + 5)) ? 6 : 0;
    return isSimpleEscape(next) ? 2 : 0;
  }

  /** The rest of a string from the escape at `from`, character by character: where it ends, or SCAN_INVALID. */
  private readEscaped(from: number): number {
    const text = this.text;
    const length = text.length;
    let i = from;
    while (i < length) {
      const c = text.charCodeAt(i);
      if (c === BACKSLASH) {
        const escape = this.escapeLength(i);
        if (escape === 0) return SCAN_INVALID;
        i += escape;
      } else if (c === QUOTE) return i + 1;
      else if (c < 0x20) return SCAN_INVALID;
      else i++;
    }
    return SCAN_INVALID;
  }

  /**
   * Where the number starting at `start` ends, or SCAN_INVALID: `-`? (`0` | [1-9][0-9]*)
   * (`.`[0-9]+)? ([eE][+-]?[0-9]+)?. Character by character: an answer of embeddings is
   * a hundred thousand numbers, and a regular expression per number took longer than
   * JSON.parse.
   */
  private number(start: number): number {
    const text = this.text;
    let pos = start;
    if (text.charCodeAt(pos) === 0x2d) pos++;
    let c = text.charCodeAt(pos);
    if (c === 0x30) c = text.charCodeAt(++pos);
    else if (isDigit(c)) {
      do c = text.charCodeAt(++pos);
      while (isDigit(c));
    } else return SCAN_INVALID;
    if (c === 0x2e) {
      c = text.charCodeAt(++pos);
      if (!isDigit(c)) return SCAN_INVALID;
      do c = text.charCodeAt(++pos);
      while (isDigit(c));
    }
    if (c === 0x65 || c === 0x45) {
      c = text.charCodeAt(++pos);
      if (c === 0x2b || c === 0x2d) c = text.charCodeAt(++pos);
      if (!isDigit(c)) return SCAN_INVALID;
      do c = text.charCodeAt(++pos);
      while (isDigit(c));
    }
    return pos;
  }

  /** The first position at or after `from` that is not JSON whitespace. */
  skipSpace(from: number): number {
    const text = this.text;
    let pos = from;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) pos++;
      else return pos;
    }
  }

  /** A member's key and colon from `at` (a quote expected): the position of its value, or SCAN_INVALID. */
  private member(at: number, visit: KeyVisitor | undefined): number {
    if (this.text.charCodeAt(at) !== QUOTE) return SCAN_INVALID;
    const end = this.string(at);
    if (end < 0) return SCAN_INVALID;
    const keyEscaped = this.escaped;
    const colon = this.skipSpace(end);
    if (this.text.charCodeAt(colon) !== COLON) return SCAN_INVALID;
    const valueStart = this.skipSpace(colon + 1);
    visit?.(at + 1, end - 1, keyEscaped, valueStart);
    return valueStart;
  }

  /** Where the value starting at `from` (after optional whitespace) ends, or SCAN_INVALID / SCAN_TOO_DEEP. */
  value(from: number, visit?: KeyVisitor): number {
    const text = this.text;
    /** The open containers, innermost last: true for an object. */
    const open: boolean[] = [];
    let pos = this.skipSpace(from);
    for (;;) {
      // A value starts at pos.
      const c = text.charCodeAt(pos);
      if (c === QUOTE) {
        pos = this.string(pos);
        if (pos < 0) return SCAN_INVALID;
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        const inner = this.skipSpace(pos + 1);
        if (text.charCodeAt(inner) === (c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY)) pos = inner + 1;
        else {
          if (open.length >= SCAN_MAX_DEPTH) return SCAN_TOO_DEEP;
          open.push(c === OPEN_OBJECT);
          pos = c === OPEN_OBJECT ? this.member(inner, visit) : inner;
          if (pos < 0) return pos;
          continue;
        }
      } else if (c === 0x74) {
        if (!text.startsWith("true", pos)) return SCAN_INVALID;
        pos += 4;
      } else if (c === 0x66) {
        if (!text.startsWith("false", pos)) return SCAN_INVALID;
        pos += 5;
      } else if (c === 0x6e) {
        if (!text.startsWith("null", pos)) return SCAN_INVALID;
        pos += 4;
      } else {
        pos = this.number(pos);
        if (pos < 0) return SCAN_INVALID;
      }
      // After a value: close what ends here, then a comma leads to the next value.
      for (;;) {
        if (open.length === 0) return pos;
        pos = this.skipSpace(pos);
        const d = text.charCodeAt(pos);
        const inObject = open[open.length - 1]!;
        if (d === COMMA) {
          pos = this.skipSpace(pos + 1);
          if (inObject) {
            pos = this.member(pos, visit);
            if (pos < 0) return pos;
          }
          break;
        }
        if (d !== (inObject ? CLOSE_OBJECT : CLOSE_ARRAY)) return SCAN_INVALID;
        open.pop();
        pos++;
      }
    }
  }
}

/** Whether `text` is one JSON value with only whitespace around it, as JSON.parse would accept it (undefined: too deep to say). */
export function isJson(text: string): boolean | undefined {
  const scanner = new JsonScanner(text);
  const end = scanner.value(0);
  if (end === SCAN_TOO_DEEP) return undefined;
  return end >= 0 && scanner.skipSpace(end) === text.length;
}

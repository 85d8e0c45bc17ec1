import { parseJsonObject, parseJsonObjectText } from "../http/body.ts";
import { PART_MARKER_FIELDS, UNSIZED_TYPES } from "./content-parts.ts";
import { holdAsText } from "./held-json.ts";
import { JsonScanner, type KeyVisitor } from "./json-scan.ts";

/**
 * A large model call's body read without building its conversation. A 256 KiB chat of
 * 278 messages cost the router about 130 µs of CPU to parse under load, and on a
 * same-format call nothing reads the messages but the unsized check (is any part an
 * image by URL, a file by id?), which the text can answer. So a body of at least
 * LAZY_BODY_BYTES is scanned once (json-scan.ts: validated, nothing built), its
 * top-level object parsed with each large conversation array (`messages`, `input`,
 * `contents`) standing in as `[]`, and each such member then defined as a property
 * that parses its text the first time something reads it (a translation, a rewrite of
 * the body, a spread copy): what reads the body sees the same values as before.
 *
 * Anything unusual makes it give up and leave the body to `JSON.parse`, which then
 * decides (a 400 for a body that is not JSON): a key written with an escape at the top
 * level, a conversation member named twice, nesting past the scanner's depth, a text
 * the scanner refuses. Text dense with strings and escapes (an agent's tool calls and
 * results) is parsed whole from the start: `JSON.parse` reads it faster than the scan.
 */

/** Bodies from this size are read this way; smaller ones are parsed whole (the scan would not pay). */
export const LAZY_BODY_BYTES = 32 * 1024;
/** A conversation shorter than this (characters) is parsed with the rest. */
const LAZY_MEMBER_CHARS = 8 * 1024;
/** Top-level members that hold a conversation (OpenAI chat and Anthropic, Responses, Gemini). */
const CONVERSATION_FIELDS: ReadonlySet<string> = new Set(["messages", "input", "contents"]);

const utf8 = new TextDecoder();

/** A model call's JSON body as an object (400 when it is not one), large conversations left as text. */
export function parseCallBody(bytes: Uint8Array): Record<string, unknown> {
  if (bytes.byteLength < LAZY_BODY_BYTES) return parseJsonObject(bytes);
  const text = utf8.decode(bytes);
  if (!looksSparse(text)) return parseJsonObjectText(text);
  // Text with a character beyond ASCII (fewer characters than bytes) is held two bytes a
  // character, where a regular expression's search for control characters is slow (73
  // µs for 190 KB of French against 9 for 280 KB of ASCII): its bytes are searched.
  const ascii = text.length === bytes.byteLength;
  if (!ascii && hasControlByte(bytes)) return parseJsonObjectText(text);
  return parseLazily(text, !ascii) ?? parseJsonObjectText(text);
}

/**
 * Whether any byte is a control character (below 0x20; in UTF-8 such a byte is always
 * that character), four bytes at a time: 24 µs for 199 KB.
 */
export function hasControlByte(bytes: Uint8Array): boolean {
  let i = 0;
  if (bytes.byteOffset % 4 === 0) {
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2);
    for (; i < words.length; i++) {
      const word = words[i]!;
      // Non-zero when some byte may be below 0x20 (a borrow can flag a byte above it, so the four are then looked at).
      if (((word - 0x20202020) & ~word & 0x80808080) !== 0) {
        if ((word & 0xe0) === 0 || (word & 0xe000) === 0 || (word & 0xe00000) === 0 || (word & 0xe0000000) === 0) return true;
      }
    }
    i *= 4;
  }
  for (; i < bytes.byteLength; i++) if (bytes[i]! < 0x20) return true;
  return false;
}

/** Bytes of the text sampled by `looksSparse`: three windows, at its start, middle and end. */
const SAMPLE_WINDOW = 4096;
/** Quotes and backslashes a KiB above which the text is parsed whole (see `looksSparse`). */
const DENSE_PER_KIB = 80;

/**
 * Whether the text has few strings and escapes for its size in each of three samples:
 * the scan crosses a long plain string at native speed but pays for each string and
 * each escape, where JSON.parse pays for the values it builds. In the router, CPU per
 * call at 8 connections (bench-variants --body): 250 KB chats of long messages with 25,
 * 32 and 66 quotes and backslashes a KiB (a line break every 61, 40, 15 characters)
 * 403 → 324, 436 → 347, 516 → 471 µs scanned instead of parsed; an agent's conversation
 * of tool calls and code in tool results (130 a KiB) 530 → 601 µs, so it is parsed.
 */
function looksSparse(text: string): boolean {
  const limit = (DENSE_PER_KIB * SAMPLE_WINDOW) / 1024;
  for (const start of [0, (text.length - SAMPLE_WINDOW) >> 1, text.length - SAMPLE_WINDOW]) {
    // A window of its own, so a search that finds nothing stops at the window's end.
    const window = text.slice(start, start + SAMPLE_WINDOW);
    // Each window on its own: an agent's body is plain in its system prompt and dense in its tool calls.
    let seen = 0;
    for (const mark of ['"', "\\"]) {
      for (let at = window.indexOf(mark); at >= 0; at = window.indexOf(mark, at + 1)) {
        if (++seen > limit) return false;
      }
    }
  }
  return true;
}

/**
 * The body's object with its large conversation members left as text; undefined when
 * the text is not read this way (then the caller parses it whole).
 */
export function parseLazily(text: string, controlFree = false): Record<string, unknown> | undefined {
  const spans = conversationSpans(text, controlFree);
  if (!spans) return undefined;
  let top = "";
  let from = 0;
  for (const span of spans) {
    top += `${text.slice(from, span.start)}[]`;
    from = span.end;
  }
  top += text.slice(from);
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(top) as Record<string, unknown>;
  } catch {
    // The scan accepted what JSON.parse refuses: never seen, but JSON.parse has the last word.
    return undefined;
  }
  for (const span of spans) holdAsText(json, span.key, text.slice(span.start, span.end), span.plain);
  return json;
}

interface Span {
  key: string;
  start: number;
  end: number;
  plain: boolean;
}

/** The large conversation members of a top-level object, validated; undefined to leave the text to JSON.parse. */
function conversationSpans(text: string, controlFree: boolean): Span[] | undefined {
  const scanner = new JsonScanner(text, controlFree);
  let pos = scanner.skipSpace(0);
  if (text.charCodeAt(pos) !== 0x7b) return undefined;
  pos = scanner.skipSpace(pos + 1);
  const spans: Span[] = [];
  const named = new Set<string>();
  for (;;) {
    if (text.charCodeAt(pos) !== 0x22) return undefined;
    const keyEnd = scanner.string(pos);
    // A key with an escape may spell a conversation member: JSON.parse decides.
    if (keyEnd < 0 || scanner.escaped) return undefined;
    const key = text.slice(pos + 1, keyEnd - 1);
    const colon = scanner.skipSpace(keyEnd);
    if (text.charCodeAt(colon) !== 0x3a) return undefined;
    const start = scanner.skipSpace(colon + 1);
    const conversation = CONVERSATION_FIELDS.has(key);
    // JSON.parse keeps the last of a repeated key: a conversation named twice is left to it.
    if (conversation && named.has(key)) return undefined;
    named.add(key);
    const marks = conversation && text.charCodeAt(start) === 0x5b ? new PartMarks(text) : undefined;
    const end = scanner.value(start, marks?.visit);
    if (end < 0) return undefined;
    if (marks && end - start >= LAZY_MEMBER_CHARS) spans.push({ key, start, end, plain: marks.plain });
    pos = scanner.skipSpace(end);
    const next = text.charCodeAt(pos);
    if (next === 0x2c) pos = scanner.skipSpace(pos + 1);
    else if (next === 0x7d) {
      if (scanner.skipSpace(pos + 1) !== text.length) return undefined;
      return spans.length > 0 ? spans : undefined;
    } else return undefined;
  }
}

/** First characters of the keys the unsized check reads: other keys are not even sliced. */
const MARK_INITIALS = new Set([..."type", ...[...PART_MARKER_FIELDS].map((field) => field[0]!)].map((c) => c.charCodeAt(0)));

/**
 * Watches the keys of a conversation as it is scanned: it stays plain while no key is
 * one the unsized check reads (at any depth: the check only walks some of them, so this
 * is the safe side), no `type` names an unsized part type, and no key or type is
 * written with an escape (JSON.parse would read the escape, this does not).
 */
class PartMarks {
  plain = true;
  constructor(private readonly text: string) {}

  readonly visit: KeyVisitor = (keyStart, keyEnd, escaped, valueStart) => {
    if (!this.plain) return;
    if (escaped) {
      this.plain = false;
      return;
    }
    if (!MARK_INITIALS.has(this.text.charCodeAt(keyStart))) return;
    const key = this.text.slice(keyStart, keyEnd);
    if (key === "type") this.plain = this.plainType(valueStart);
    // `file_ids` too: a conversation naming files is walked for them (gateway/named-files.ts).
    else if (PART_MARKER_FIELDS.has(key) || key === "file_ids") this.plain = false;
  };

  /** Whether the `type` value at `at` names no unsized part type (a non-string type names none). */
  private plainType(at: number): boolean {
    if (this.text.charCodeAt(at) !== 0x22) return true;
    const close = this.text.indexOf('"', at + 1);
    if (close < 0) return false;
    const type = this.text.slice(at + 1, close);
    return !type.includes("\\") && !UNSIZED_TYPES.has(type);
  }
}

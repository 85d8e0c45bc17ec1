/**
 * Incremental Server-Sent Events decoder following the WHATWG "event stream
 * interpretation" algorithm (HTML Living Standard, §9.2.6), so that the gateway sees
 * exactly the events a browser `EventSource` or an SDK's SSE parser would see.
 */

/** One dispatched event. */
export interface SseEvent {
  /** The `event:` field, or undefined when the event had none (a browser would call it "message"). */
  event: string | undefined;
  /** The `data:` lines of the event joined by "\n". */
  data: string;
  /**
   * The last event ID in effect when the event was dispatched. Per spec it persists
   * across events until an `id:` field changes it, and an empty `id:` clears it.
   */
  id?: string;
}

/** The push side of a decoder made by {@link createSseDecoder}. */
export interface SseDecoder {
  /** Feeds the next bytes of the stream; may be split anywhere, even inside a UTF-8 character. */
  push(chunk: Uint8Array): void;
  /**
   * Ends the stream. An event not yet terminated by a blank line is discarded, as the
   * spec requires, because an upstream cut mid-event has not finished saying it.
   */
  end(): void;
  /**
   * Whether everything pushed so far ended exactly at an event's end (no partial line,
   * field or event held back), so the next bytes begin a new event.
   */
  atBoundary(): boolean;
  /**
   * During `onEvent`: where the event's block (its lines up to and including the blank
   * line that ended it) lies in the text of the current `push`, as [start, end) offsets
   * into `text()`; undefined when the block began in an earlier push.
   */
  span(): [number, number] | undefined;
  /** The decoded text of the current (or last) `push`. */
  text(): string;
  /** Whether the event under way grew past the decoder's bound and is being dropped. */
  dropping(): boolean;
}

const LF = "\n";
const CR = "\r";

/**
 * Creates a decoder that calls `onEvent` synchronously, from within `push`, for every
 * complete event. The decoder resets itself on `end()` and can be reused afterwards.
 */
export function createSseDecoder(onEvent: (event: SseEvent) => void, maxEventChars = Number.MAX_SAFE_INTEGER): SseDecoder {
  // `stream: true` keeps a split multi-byte character until its remaining bytes arrive;
  // the default `ignoreBOM: false` strips one leading U+FEFF, as the spec asks.
  let utf8 = new TextDecoder("utf-8");
  // Pieces of the line still waiting for its line break; joined once, when it completes,
  // so a long line arriving in many chunks costs linear time.
  let pending: string[] = [];
  /**
   * Characters held for the event under way (its data lines and the line still open):
   * past `maxEventChars` the event is dropped as it grows (`dropping` until its blank
   * line), so one endless line or event from an upstream is not held whole. The bytes
   * themselves are the relay's to pass on; only what the decoder keeps is bounded.
   */
  let heldChars = 0;
  let dropping = false;
  let skipLine = false;
  // A chunk ended on "\r": the line was already taken, and a "\n" opening the next
  // chunk belongs to the same CRLF and must not count as a blank line.
  let skipLf = false;
  let dataLines: string[] = [];
  let eventType = "";
  let lastEventId = "";
  let asciiTail = true;
  /** The current push's text, where the current block began in it (-1: in an earlier push), and where the line being processed ends. */
  let current = "";
  let blockStart = 0;
  let lineEnd = 0;
  let eventSpan: [number, number] | undefined;

  function dispatch(): void {
    if (dropping) {
      dropping = false;
      heldChars = 0;
      dataLines = [];
      eventType = "";
      return;
    }
    heldChars = 0;
    if (dataLines.length === 0) {
      eventType = "";
      return;
    }
    const event: SseEvent = { event: eventType === "" ? undefined : eventType, data: dataLines.join(LF) };
    if (lastEventId !== "") event.id = lastEventId;
    // State is reset before the callback so that a throwing callback leaves the
    // decoder consistent for the next event.
    dataLines = [];
    eventType = "";
    eventSpan = blockStart >= 0 ? [blockStart, lineEnd] : undefined;
    onEvent(event);
    eventSpan = undefined;
  }

  function processLine(line: string): void {
    if (line.length === 0) {
      dispatch();
      // The next block starts after this blank line.
      blockStart = lineEnd;
      return;
    }
    const colon = line.indexOf(":");
    if (colon === 0) return; // comment, used by servers as keep-alive
    let field: string;
    let value: string;
    if (colon < 0) {
      field = line;
      value = "";
    } else {
      field = line.slice(0, colon);
      const start = line.charCodeAt(colon + 1) === 0x20 ? colon + 2 : colon + 1;
      value = line.slice(start);
    }
    switch (field) {
      case "data":
        if (!dropping) dataLines.push(value);
        break;
      case "event":
        eventType = value;
        break;
      case "id":
        if (!value.includes("\u0000")) lastEventId = value;
        break;
      // "retry" only matters to a reconnecting client; other fields are ignored per spec.
    }
  }

  function scan(text: string): void {
    let pos = 0;
    const len = text.length;
    if (skipLf && len > 0) {
      if (text.charCodeAt(0) === 0x0a) pos = 1;
      skipLf = false;
    }
    // Next CR and LF positions are cached: searching for both on every line would
    // rescan to the end for whichever character the stream never uses.
    let nextCr = text.indexOf(CR, pos);
    let nextLf = text.indexOf(LF, pos);
    while (pos < len) {
      if (nextCr !== -1 && nextCr < pos) nextCr = text.indexOf(CR, pos);
      if (nextLf !== -1 && nextLf < pos) nextLf = text.indexOf(LF, pos);
      let brk: number;
      if (nextCr === -1) brk = nextLf;
      else if (nextLf === -1) brk = nextCr;
      else brk = nextCr < nextLf ? nextCr : nextLf;
      if (brk === -1) break;

      let line = text.slice(pos, brk);
      if (pending.length > 0) {
        pending.push(line);
        line = pending.join("");
        pending = [];
      }
      // A line past the bound is not read; nor is the rest of one the bound cut (`skipLine`).
      let skip = skipLine;
      skipLine = false;
      if (!dropping && (heldChars += brk - pos) > maxEventChars) {
        drop();
        skip = true;
      }
      pos = brk + 1;
      if (brk === nextCr) {
        if (pos === len) skipLf = true;
        else if (text.charCodeAt(pos) === 0x0a) pos++;
      }
      lineEnd = pos;
      if (!skip) processLine(line);
    }
    if (pos < len) {
      if (!dropping) pending.push(text.slice(pos));
      if (!dropping && (heldChars += len - pos) > maxEventChars) drop();
      if (dropping) skipLine = true;
    }
  }

  /** The event under way grew past the bound: what it held is let go, and the rest of it is skipped up to its blank line. */
  function drop(): void {
    dropping = true;
    pending = [];
    dataLines = [];
  }

  return {
    push(chunk: Uint8Array): void {
      const asciiTailBefore = asciiTail;
      // A chunk ending in a non-ASCII byte may leave part of a character in the UTF-8 decoder.
      if (chunk.byteLength > 0) asciiTail = chunk[chunk.byteLength - 1]! < 0x80;
      const text = utf8.decode(chunk, { stream: true });
      // A block begins in this push only if the previous push ended exactly between blocks.
      blockStart = asciiTailBefore && pending.length === 0 && dataLines.length === 0 && eventType === "" && !skipLf && !dropping ? 0 : -1;
      current = text;
      if (text.length > 0) scan(text);
    },
    span() {
      return eventSpan;
    },
    text() {
      return current;
    },
    dropping() {
      return dropping;
    },
    atBoundary(): boolean {
      return asciiTail && pending.length === 0 && dataLines.length === 0 && eventType === "" && !skipLf && !dropping;
    },
    end(): void {
      utf8 = new TextDecoder("utf-8");
      pending = [];
      heldChars = 0;
      dropping = false;
      skipLine = false;
      skipLf = false;
      dataLines = [];
      eventType = "";
      lastEventId = "";
      asciiTail = true;
    },
  };
}

import { describe, expect, test } from "bun:test";
import { createSseDecoder, type SseEvent } from "../../src/formats/sse.ts";
import { generator } from "../helpers/seeded.ts";

const enc = new TextEncoder();

/** Decodes `input` fed as the given chunks, then ends the stream. */
function decodeChunks(chunks: Uint8Array[]): SseEvent[] {
  const events: SseEvent[] = [];
  const d = createSseDecoder((e) => events.push(e));
  for (const c of chunks) d.push(c);
  d.end();
  return events;
}

const decode = (text: string) => decodeChunks([enc.encode(text)]);

function byteByByte(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i++) out.push(bytes.subarray(i, i + 1));
  return out;
}

function randomSplits(bytes: Uint8Array, seed: number): Uint8Array[] {
  const rnd = generator(seed);
  const out: Uint8Array[] = [];
  let i = 0;
  while (i < bytes.length) {
    // Mostly tiny pieces (to land inside characters and CRLFs), sometimes empty ones.
    const len = Math.floor(rnd() * 7);
    out.push(bytes.subarray(i, i + len));
    i += len;
  }
  return out;
}

describe("fields", () => {
  test("data, event and id fields make an event", () => {
    expect(decode("event: greet\nid: 7\ndata: hello\n\n")).toEqual([{ event: "greet", data: "hello", id: "7" }]);
  });

  test("an event without event: or id: has event undefined and no id", () => {
    const [e] = decode("data: x\n\n");
    expect(e).toEqual({ event: undefined, data: "x" });
    expect(e !== undefined && "id" in e).toBe(false);
  });

  test("multiple data lines are joined by a newline, with no trailing newline", () => {
    expect(decode("data: one\ndata: two\ndata:\ndata: four\n\n")).toEqual([{ event: undefined, data: "one\ntwo\n\nfour" }]);
  });

  test("exactly one leading space after the colon is stripped", () => {
    expect(decode("data:nospace\n\ndata:  two spaces\n\ndata:\tTab\n\n").map((e) => e.data)).toEqual([
      "nospace",
      " two spaces",
      "\tTab",
    ]);
  });

  test("a value may contain colons", () => {
    expect(decode('data: {"a":"b:c"}\n\n')[0]?.data).toBe('{"a":"b:c"}');
  });

  test("comment lines are ignored, also between data lines", () => {
    expect(decode(": keep-alive\n\n:\ndata: a\n: note\ndata: b\n\n")).toEqual([{ event: undefined, data: "a\nb" }]);
  });

  test("a field without a colon has an empty value", () => {
    // `data` alone adds an empty data line, so an event with empty data is dispatched.
    expect(decode("data\n\n")).toEqual([{ event: undefined, data: "" }]);
    // `event` alone sets an empty event type, which reads as no type.
    expect(decode("event: x\nevent\ndata: y\n\n")).toEqual([{ event: undefined, data: "y" }]);
  });

  test("a blank line with no data dispatches nothing and resets the event type", () => {
    expect(decode("event: ping\n\ndata: after\n\n")).toEqual([{ event: undefined, data: "after" }]);
    expect(decode("\n\n\n")).toEqual([]);
  });

  test("the event type does not leak into the next event", () => {
    expect(decode("event: a\ndata: 1\n\ndata: 2\n\n").map((e) => e.event)).toEqual(["a", undefined]);
  });

  test("the last event id persists, is cleared by an empty id, and ignores ids with NUL", () => {
    const events = decode("id: 1\ndata: a\n\ndata: b\n\nid: 2\u0000x\ndata: c\n\nid\ndata: d\n\n");
    expect(events.map((e) => e.id)).toEqual(["1", "1", "1", undefined]);
  });

  test("unknown fields and retry are ignored", () => {
    expect(decode("retry: 1000\nfoo: bar\nDATA: no\ndata: yes\n\n")).toEqual([{ event: undefined, data: "yes" }]);
  });

  test("a leading byte order mark is stripped", () => {
    // Without stripping, the first field name would be "\uFEFFdata" and the event lost.
    expect(decode("\uFEFFdata: x\n\n")).toEqual([{ event: undefined, data: "x" }]);
    // Also when the BOM's three bytes arrive in separate chunks.
    const rest = enc.encode("data: y\n\n");
    expect(decodeChunks([new Uint8Array([0xef]), new Uint8Array([0xbb, 0xbf]), rest])).toEqual([{ event: undefined, data: "y" }]);
  });
});

describe("line endings", () => {
  const expected: SseEvent[] = [
    { event: "e", data: "a\nb" },
    { event: undefined, data: "c" },
  ];

  test("LF, CRLF and CR all end lines", () => {
    expect(decode("event: e\ndata: a\ndata: b\n\ndata: c\n\n")).toEqual(expected);
    expect(decode("event: e\r\ndata: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n")).toEqual(expected);
    expect(decode("event: e\rdata: a\rdata: b\r\rdata: c\r\r")).toEqual(expected);
    expect(decode("event: e\r\ndata: a\rdata: b\n\r\ndata: c\r\n\n")).toEqual(expected);
  });

  test("a CRLF split between its CR and LF is one line break, not two", () => {
    const events = decodeChunks([enc.encode("data: a\r"), enc.encode("\ndata: b\r"), enc.encode("\n\r"), enc.encode("\n")]);
    expect(events).toEqual([{ event: undefined, data: "a\nb" }]);
  });

  test("a CR at the end of a chunk followed by a CR is a blank line", () => {
    expect(decodeChunks([enc.encode("data: a\r"), enc.encode("\rdata: b\r"), enc.encode("\r")]).map((e) => e.data)).toEqual(["a", "b"]);
  });

  test("an empty chunk between CR and LF does not lose the pairing", () => {
    const events = decodeChunks([enc.encode("data: a\r"), new Uint8Array(0), enc.encode("\n\r\n")]);
    expect(events).toEqual([{ event: undefined, data: "a" }]);
  });
});

describe("end of stream", () => {
  test("an event without its terminating blank line is dropped", () => {
    expect(decode("data: complete\n\ndata: partial\n")).toEqual([{ event: undefined, data: "complete" }]);
    expect(decode("data: partial")).toEqual([]);
  });

  test("end() resets state so the decoder can be reused", () => {
    const events: SseEvent[] = [];
    const d = createSseDecoder((e) => events.push(e));
    d.push(enc.encode("event: old\nid: 5\ndata: dropped\n"));
    d.end();
    d.push(enc.encode("data: fresh\n\n"));
    d.end();
    expect(events).toEqual([{ event: undefined, data: "fresh" }]);
  });

  test("events are delivered during push, before end()", () => {
    const events: SseEvent[] = [];
    const d = createSseDecoder((e) => events.push(e));
    d.push(enc.encode("data: 1\n\ndata: 2"));
    expect(events.map((e) => e.data)).toEqual(["1"]);
    d.push(enc.encode("\n\n"));
    expect(events.map((e) => e.data)).toEqual(["1", "2"]);
  });
});

describe("chunk splitting", () => {
  const stream = [
    ": connected\r\n\r\n",
    "event: message_start\r\n",
    'data: {"type":"message_start","text":"héllo wörld — 日本語 🎉"}\r\n\r\n',
    "id: 42\n",
    "data: 第一行\n",
    "data: 🧪 second line\n\n",
    "event: done\r",
    "data: [DONE]\r\r",
    "data: ends with CR\r",
    "\r",
    "data: ü\n",
    "data:no space 🙂\n\n",
    "data: dropped at end",
  ].join("");
  const bytes = enc.encode(stream);
  const whole = decodeChunks([bytes]);

  test("the reference decoding is what the stream says", () => {
    expect(whole).toEqual([
      { event: "message_start", data: '{"type":"message_start","text":"héllo wörld — 日本語 🎉"}' },
      { event: undefined, data: "第一行\n🧪 second line", id: "42" },
      { event: "done", data: "[DONE]", id: "42" },
      { event: undefined, data: "ends with CR", id: "42" },
      { event: undefined, data: "ü\nno space 🙂", id: "42" },
    ]);
  });

  test("byte by byte gives the same events", () => {
    expect(decodeChunks(byteByByte(bytes))).toEqual(whole);
  });

  test("random splits give the same events", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const got = decodeChunks(randomSplits(bytes, seed));
      if (JSON.stringify(got) !== JSON.stringify(whole)) throw new Error(`seed ${seed} decoded differently`);
      expect(got).toEqual(whole);
    }
  });

  test("every two-way split gives the same events", () => {
    for (let i = 0; i <= bytes.length; i++) {
      expect(decodeChunks([bytes.subarray(0, i), bytes.subarray(i)])).toEqual(whole);
    }
  });

  test("a multi-byte character split across chunks is not replaced", () => {
    const b = enc.encode("data: 🎉\n\n"); // the emoji is 4 bytes starting at offset 6
    const events = decodeChunks([b.subarray(0, 7), b.subarray(7, 9), b.subarray(9)]);
    expect(events[0]?.data).toBe("🎉");
  });

  test("a long line arriving in many chunks is reassembled", () => {
    const payload = "x".repeat(100_000);
    const b = enc.encode(`data: ${payload}\n\n`);
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < b.length; i += 1000) chunks.push(b.subarray(i, i + 1000));
    const events = decodeChunks(chunks);
    expect(events.length).toBe(1);
    expect(events[0]?.data).toBe(payload);
  });

  test("many events in one chunk are all dispatched in order", () => {
    let text = "";
    for (let i = 0; i < 5000; i++) text += `data: ${i}\n\n`;
    const events = decode(text);
    expect(events.length).toBe(5000);
    expect(events[4999]?.data).toBe("4999");
    expect(events.every((e, i) => e.data === String(i))).toBe(true);
  });
});

describe("an event past the decoder's bound", () => {
  /** Decodes with a bound of `max` characters an event, the chunks split as given. */
  const bounded = (chunks: string[], max: number) => {
    const events: SseEvent[] = [];
    const d = createSseDecoder((e) => events.push(e), max);
    const dropping: boolean[] = [];
    for (const c of chunks) {
      d.push(enc.encode(c));
      dropping.push(d.dropping());
    }
    return { events, dropping };
  };
  const long = "x".repeat(5000);

  test("one endless line arriving in pieces is let go past the bound; the events after its blank line are read", () => {
    const pieces = ["data: ", ...Array.from({ length: 10 }, () => long), "\n", "\n", 'data: {"usage":1}\n\n'];
    const { events, dropping } = bounded(pieces, 1000);
    expect(events).toEqual([{ event: undefined, data: '{"usage":1}' }]);
    expect(dropping[1]).toBe(true);
    expect(dropping.at(-1)).toBe(false);
  });

  test("many lines of one event past the bound, in one read or split anywhere: dropped whole, never cut into a shorter event", () => {
    const text = `event: big\n${Array.from({ length: 50 }, () => "data: 0123456789012345678901234567890123456789\n").join("")}\ndata: after\n\n`;
    expect(bounded([text], 1000).events).toEqual([{ event: undefined, data: "after" }]);
    const byBytes = bounded([...text], 1000);
    expect(byBytes.events).toEqual([{ event: undefined, data: "after" }]);
  });

  test("an event within the bound, and the bound left out, decode as before", () => {
    const text = `data: ${long}\n\n`;
    expect(bounded([text], 10_000).events).toEqual([{ event: undefined, data: long }]);
    expect(decode(text)).toEqual([{ event: undefined, data: long }]);
  });
});

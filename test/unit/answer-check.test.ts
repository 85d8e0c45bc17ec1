import { describe, expect, test } from "bun:test";
import { isErrorObject, judgeJson, readFirstEvent } from "../../src/gateway/answer-check.ts";

const encoder = new TextEncoder();

/** A reader that yields `pieces` one read each. */
function reader(pieces: string[]): ReadableStreamDefaultReader<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of pieces) controller.enqueue(encoder.encode(piece));
      controller.close();
    },
  }).getReader();
}

describe("is a 2xx an answer", () => {
  test("error envelopes of the three families, and successes that merely carry an error member", () => {
    expect(isErrorObject({ error: { message: "x", type: "server_error" } })).toBe(true);
    expect(isErrorObject({ type: "error", error: { type: "overloaded_error" }, request_id: "r" })).toBe(true);
    expect(isErrorObject({ error: { code: 503, message: "x", status: "UNAVAILABLE" } })).toBe(true);
    expect(isErrorObject({ id: "resp_1", object: "response", error: null, output: [] })).toBe(false);
    expect(isErrorObject({ id: "c", choices: [], error: { message: "partial" } })).toBe(false);
    expect(judgeJson('{"id":"c","choices":[]}').answer).toBe(true);
    expect(judgeJson('[{"candidates":[]}]').answer).toBe(true);
    expect(judgeJson('[{"error":{"code":500}}]').answer).toBe(false);
    expect(judgeJson('{"id":"c","choi').answer).toBe(false);
    expect(judgeJson("").answer).toBe(false);
    expect(judgeJson('"ok"').answer).toBe(false);
  });
});

describe("a stream's first event", () => {
  test("an event split over reads, CRLF line ends, comments first: judged on the event, every byte kept", async () => {
    const pieces = [": keep-alive\r\n\r\n", 'data: {"id":"c",', '"choices":[]}\r', "\n\r\ndata: second\r\n\r\n"];
    const first = await readFirstEvent(reader(pieces));
    expect(first.judgement.answer).toBe(true);
    expect(new TextDecoder().decode(first.bytes)).toBe(pieces.join(""));
    expect(first.done).toBe(false);
  });

  test("a whole stream in one read: the first event decides, the bytes are all kept", async () => {
    const whole = 'data: {"a":1}\n\ndata: not json\n\ndata: [DONE]\n\n';
    const first = await readFirstEvent(reader([whole]));
    expect(first.judgement.answer).toBe(true);
    expect(first.bytes.byteLength).toBe(encoder.encode(whole).byteLength);
  });

  test("an error event, [DONE] first, unreadable data, or an end before any event are no answers", async () => {
    const no = async (pieces: string[]) => (await readFirstEvent(reader(pieces))).judgement.answer;
    expect(await no(['event: error\ndata: {"type":"error","error":{"type":"overloaded_error"}}\n\n'])).toBe(false);
    expect(await no(['data: {"error":{"message":"busy"}}\n\n'])).toBe(false);
    expect(await no(["data: [DONE]\n\n"])).toBe(false);
    expect(await no(["data: {nope\n\n"])).toBe(false);
    expect(await no([": only a comment\n\n"])).toBe(false);
    expect(await no(['data: {"cut":'])).toBe(false);
  });

  test("an event arriving a byte at a time, with CR, LF and CRLF line ends split anywhere: the same event and bytes as in one read", async () => {
    const text = ': hi\r\n\r\nevent: message_start\rdata: {"type":"message_start",\ndata: "x":1}\r\n\r\ndata: later\n\n';
    const first = await readFirstEvent(reader([...text]));
    expect(first.judgement).toEqual({ answer: true, parsed: { type: "message_start", x: 1 } });
    const kept = new TextDecoder().decode(first.bytes);
    expect(text.startsWith(kept)).toBe(true);
    expect(kept).toContain('"x":1}\r\n\r\n');
  });

  test("a first event still open past maxBytes is judged no answer at once, holding about the bound, not the whole line", async () => {
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(encoder.encode(pulled === 0 ? "data: " : "x".repeat(1000)));
        pulled++;
      },
    }).getReader();
    const first = await readFirstEvent(endless, 10_000);
    expect(first.judgement).toEqual({ answer: false, why: "a stream whose first event is over 10000 bytes" });
    expect(first.bytes.byteLength).toBeLessThan(12_000);
    expect(pulled).toBeLessThan(15);
    // Within the bound, the same stream ending its event is an answer.
    const fits = await readFirstEvent(reader(["data: ", `{"t":"${"x".repeat(9000)}"}`, "\n\n"]), 10_000);
    expect(fits.judgement.answer).toBe(true);
  });
});

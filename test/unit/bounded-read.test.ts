import { afterAll, describe, expect, test } from "bun:test";
import { readBoundedText } from "../../src/gateway/bounded-read.ts";

/**
 * An upstream body read whole (gateway/bounded-read.ts): within its size bound, and cut
 * when it goes silent, whether it is read natively (a small body of stated length, no
 * content coding) or chunk by chunk (no length, or compressed: a gzip bomb states its
 * compressed size).
 */

const encoder = new TextEncoder();
const server = Bun.serve({
  port: 0,
  fetch(request) {
    const url = new URL(request.url);
    const size = Number(url.searchParams.get("size") ?? 10);
    const text = "x".repeat(size);
    switch (url.pathname) {
      case "/stated":
        return new Response(text, { headers: { "content-length": String(size) } });
      case "/chunked":
        return new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(encoder.encode(text));
              controller.close();
            },
          }),
        );
      case "/gzip":
        return new Response(Bun.gzipSync(encoder.encode(text)), { headers: { "content-encoding": "gzip" } });
      case "/stalls":
        // States 100 bytes, sends 10, then nothing.
        return new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(encoder.encode("x".repeat(10)));
            },
          }),
          { headers: { "content-length": "100" } },
        );
      default:
        return new Response("not found", { status: 404 });
    }
  },
});
afterAll(() => server.stop(true));

/** Reads `path` within `max` bytes and an idle bound of `idleMs`; says whether the idle callback ran. */
async function read(path: string, max: number, idleMs = 5000) {
  const controller = new AbortController();
  let idle = false;
  const response = await fetch(new URL(path, server.url), { signal: controller.signal });
  const text = await readBoundedText(response, max, idleMs, () => {
    idle = true;
    controller.abort();
  }).catch(() => "cut" as const);
  return { text, idle };
}

describe("an upstream body read whole", () => {
  test("at the bound it is read, past it it is not: with a stated length, without one, and compressed", async () => {
    for (const path of ["/stated", "/chunked", "/gzip"]) {
      expect((await read(`${path}?size=1000`, 1000)).text).toBe("x".repeat(1000));
      expect((await read(`${path}?size=1001`, 1000)).text).toBeUndefined();
    }
  });

  test("a gzip bomb is judged by what it inflates to, not by its stated (compressed) length", async () => {
    const bomb = await read("/gzip?size=2000000", 100_000);
    expect(bomb.text).toBeUndefined();
  });

  test("a body of stated length that stops arriving is cut after the idle bound", async () => {
    const stalled = await read("/stalls", 1000, 100);
    expect(stalled).toEqual({ text: "cut", idle: true });
  });
});

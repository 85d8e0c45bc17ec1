import { afterAll, describe, expect, test } from "bun:test";
import { createServer, type Server as TlsServer } from "node:tls";
import zlib from "node:zlib";
import { anthropicText, chatText, chunk, compatRouter, completion, data, tokens } from "../helpers/compat-calls.ts";
import { addKey } from "../helpers/keys.ts";
import { testCertificates } from "../helpers/tls.ts";

/**
 * Compatible upstreams' answers on the wire (review-compat.test.ts has their shapes):
 * every content coding fetch decodes, and a Content-Length that is not the body's.
 */

const compat = compatRouter("cw");
const { up, chat, messages } = compat;
const afterAllStops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of afterAllStops) await stop();
});

describe("compressed answers", () => {
  const usage = { prompt_tokens: 21, completion_tokens: 6, total_tokens: 27 };
  const codings: Array<[string, (bytes: Uint8Array) => Uint8Array<ArrayBuffer>]> = [
    ["gzip", (b) => new Uint8Array(zlib.gzipSync(b))],
    ["br", (b) => new Uint8Array(zlib.brotliCompressSync(b))],
    ["deflate", (b) => new Uint8Array(zlib.deflateSync(b))],
    ["zstd", (b) => new Uint8Array(Bun.zstdCompressSync(b))],
  ];
  for (const [coding, compress] of codings) {
    test(`content-encoding ${coding}: JSON and a stream, same format and translated`, async () => {
      const encoder = new TextEncoder();
      const answer = encoder.encode(JSON.stringify(completion(usage, "zipped ✓")));
      const stream = encoder.encode(data(chunk({ role: "assistant", content: "zipped ✓" }, "stop")) + data({ ...chunk({}), choices: [], usage }) + "data: [DONE]\n\n");
      up("openai").route("POST", /.*/, (request) =>
        new Response(compress(request.json.stream ? stream : answer), { headers: { "content-type": request.json.stream ? "text/event-stream" : "application/json", "content-encoding": coding } }),
      );
      const plain = await chat("cw-openai", false);
      expect(JSON.parse(plain.text).choices[0].message.content).toBe("zipped ✓");
      expect(tokens(plain.row)).toMatchObject({ prompt: 21, completion: 6, source: "upstream" });
      const streamed = await chat("cw-openai", true);
      expect(chatText(streamed.text)).toBe("zipped ✓");
      expect(tokens(streamed.row)).toMatchObject({ prompt: 21, completion: 6, source: "upstream" });
      const translated = await messages("cw-openai", true);
      expect(anthropicText(translated.text)).toBe("zipped ✓");
      expect(tokens(translated.row)).toMatchObject({ prompt: 21, completion: 6, source: "upstream" });
    });
  }
});

/** An HTTPS upstream writing `head` and `body` verbatim (its Content-Length as given), then closing. */
async function verbatimUpstream(answer: () => { head: string; body: string }): Promise<string> {
  const certs = testCertificates();
  const server: TlsServer = createServer({ cert: certs.certPem, key: certs.keyPem }, (socket) => {
    let buffered = Buffer.alloc(0);
    socket.on("data", (piece: Buffer) => {
      buffered = Buffer.concat([buffered, piece]);
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(buffered.subarray(0, end).toString("latin1"))?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      const { head, body } = answer();
      socket.end(`HTTP/1.1 200 OK\r\n${head}connection: close\r\n\r\n${body}`);
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  afterAllStops.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `https://127.0.0.1:${(server.address() as { port: number }).port}`;
}

describe("a wrong content-length", () => {
  const usage = { prompt_tokens: 8, completion_tokens: 3, total_tokens: 11 };
  test("longer than the body, the connection then closed: 502, nothing charged", async () => {
    const body = JSON.stringify(completion(usage, "short"));
    const url = await verbatimUpstream(() => ({ head: `content-type: application/json\r\ncontent-length: ${body.length + 40}\r\n`, body }));
    await addKey(compat.router, { provider: url, level: 9, config: { provider_type: "standard", formats: ["openai"] } });
    await compat.router.deps.settings.update({ LEVEL_MAPPER: "cw-openai=1,cw-responses=2,cw-anthropic=3,cw-gemini=4,cw-len=9" });
    const r = await chat("cw-len", false);
    // A body cut short of its stated length is no answer: the client's envelope, nothing charged.
    expect(r.status).toBe(502);
    expect(JSON.parse(r.text).error).toMatchObject({ type: "api_error", code: "upstream_error" });
    expect(r.row).toMatchObject({ status: 502, cost_nanos: 0 });
  });
  test("shorter than the body: 502, nothing charged", async () => {
    const body = JSON.stringify(completion(usage, "short"));
    const url = await verbatimUpstream(() => ({ head: `content-type: application/json\r\ncontent-length: ${body.length - 30}\r\n`, body }));
    await addKey(compat.router, { provider: url, level: 8, config: { provider_type: "standard", formats: ["openai"] } });
    await compat.router.deps.settings.update({ LEVEL_MAPPER: "cw-openai=1,cw-responses=2,cw-anthropic=3,cw-gemini=4,cw-len=9,cw-short=8" });
    const r = await chat("cw-short", false);
    // Read to its stated length the JSON is cut: not relayed as an answer, nothing charged.
    expect(r.status).toBe(502);
    expect(JSON.parse(r.text).error).toMatchObject({ type: "api_error", code: "upstream_error" });
    expect(r.row).toMatchObject({ status: 502, cost_nanos: 0 });
  });
});


import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server as TlsServer } from "node:tls";
import { testCertificates } from "../helpers/tls.ts";
import zlib from "node:zlib";
import { keyPerFormat } from "../helpers/key-per-format.ts";
import type { KeyFormat } from "../../src/wire/constants.ts";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse } from "../helpers/mock-upstream.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { decodeSse } from "../helpers/sse-transcripts.ts";
import { api } from "../helpers/owner-ops.ts";
import { nanosToCredits } from "../../src/accounts/records.ts";

/**
 * OpenAI- and Anthropic-compatible servers that self-hosters put behind the router,
 * each answering with the legal but unusual shapes its documentation shows: the client
 * gets its answer in its own format and the charge is what the upstream reported.
 */

// USD per 1M tokens: 1 token of input costs 1000 nano-credits at Rates 1.
const PRICING = { ChatPricing: { "cp-*": { InputText: 1, OutputText: 2, CachedText: 0.25, CacheWrite: 1.25, ContextWindow: 100000, MaxOutput: 4000 } } };
const pairs = keyPerFormat("cp", { pricing: PRICING });
let router: TestRouter;
beforeAll(() => {
  router = pairs.router;
});
const afterAllStops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of afterAllStops) await stop();
});
const up = (format: KeyFormat) => pairs.ups.get(format)!;

/** nano-credits for token counts at PRICING. */
const cost = (t: { input?: number; cached?: number; write?: number; output?: number }) => ((t.input ?? 0) * 1 + (t.cached ?? 0) * 0.25 + (t.write ?? 0) * 1.25 + (t.output ?? 0) * 2) * 1000;

async function call(path: string, body: Record<string, unknown>) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (path === "/v1/messages") headers["anthropic-version"] = "2023-06-01";
  const res = await router.fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await res.text();
  const id = res.headers.get("x-request-id")!;
  const row = await waitFor(async () => (await usageRows(router)).find((r) => r.request_id === id), 5000, "usage row");
  return { status: res.status, type: res.headers.get("content-type") ?? "", text, row: row!, id };
}
const chat = (model: string, stream: boolean) => call("/v1/chat/completions", { model, stream, messages: [{ role: "user", content: "hi" }] });
const messages = (model: string, stream: boolean) => call("/v1/messages", { model, stream, max_tokens: 1000, messages: [{ role: "user", content: "hi" }] });

const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({ id: "chatcmpl-c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }], ...extra });
const completion = (usage: unknown, content = "hello") => ({ id: "chatcmpl-c", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }], usage });
const events = (text: string): any[] => decodeSse(text).map((e) => e.data);
const chatText = (text: string) => events(text).filter((e) => e !== "[DONE]").map((e) => e.choices?.[0]?.delta?.content ?? "").join("");
const anthropicText = (text: string) => events(text).filter((e) => e.type === "content_block_delta").map((e) => e.delta.text ?? "").join("");
/** The request log's record of a call agrees with its usage row: status, counts, source, cost. */
async function expectLogged(r: { id: string; row: Record<string, any> }) {
  const record = (await api(router, `/x-requests/${r.id}`)).body as Record<string, any>;
  expect(record).toMatchObject({ status: r.row.status, source: r.row.source, cost: nanosToCredits(r.row.cost_nanos), tokens: { prompt: r.row.prompt_tokens, completion: r.row.completion_tokens, cache_read: r.row.cache_read_tokens, cache_write: r.row.cache_write_tokens, reasoning: r.row.reasoning_tokens } });
}
const tokens = (row: Record<string, any>) => ({ prompt: row.prompt_tokens, completion: row.completion_tokens, cache_read: row.cache_read_tokens, cache_write: row.cache_write_tokens, reasoning: row.reasoning_tokens, source: row.source, cost: row.cost_nanos });

describe("DeepSeek: cache hits reported as prompt_cache_hit_tokens", () => {
  const usage = { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100, prompt_cache_hit_tokens: 800, prompt_cache_miss_tokens: 200, completion_tokens_details: { reasoning_tokens: 40 } };
  const expected = { prompt: 1000, completion: 100, cache_read: 800, cache_write: 0, reasoning: 40, source: "upstream", cost: cost({ input: 200, cached: 800, output: 100 }) };
  test("non-streaming", async () => {
    up("openai").route("POST", /.*/, () => json(completion(usage)));
    const r = await chat("cp-openai", false);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).usage).toEqual(usage);
    expect(tokens(r.row)).toEqual(expected);
    await expectLogged(r);
  });
  test("streaming, usage on the last chunk", async () => {
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "he" }), chunk({ content: "llo" }, "stop"), { ...chunk({}), choices: [], usage }], { done: true }));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("hello");
    expect(tokens(r.row)).toEqual(expected);
  });
  test("translated: an Anthropic client on a DeepSeek chat upstream", async () => {
    up("openai").route("POST", /.*/, () => json(completion(usage)));
    const r = await messages("cp-openai", false);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).usage).toMatchObject({ input_tokens: 200, cache_read_input_tokens: 800, output_tokens: 100 });
    expect(tokens(r.row)).toEqual(expected);
  });
});

describe("Groq: streamed usage in x_groq.usage on the last chunk", () => {
  const groqUsage = { queue_time: 0.02, prompt_tokens: 50, prompt_time: 0.004, completion_tokens: 7, completion_time: 0.01, total_tokens: 57, total_time: 0.014 };
  const groqStream = () =>
    sse([chunk({ role: "assistant", content: "" }, null, { x_groq: { id: "req_01" } }), chunk({ content: "hel" }), chunk({ content: "lo" }), chunk({}, "stop", { x_groq: { id: "req_01", usage: groqUsage } })], { done: true });
  const expected = { prompt: 50, completion: 7, cache_read: 0, cache_write: 0, reasoning: 0, source: "upstream", cost: cost({ input: 50, output: 7 }) };
  test("same format: relayed as sent and charged as reported", async () => {
    up("openai").route("POST", /.*/, groqStream);
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("hello");
    expect(r.text).toContain('"x_groq"');
    expect(tokens(r.row)).toEqual(expected);
  });
  test("translated: an Anthropic client gets Groq's counts", async () => {
    up("openai").route("POST", /.*/, groqStream);
    const r = await messages("cp-openai", true);
    expect(anthropicText(r.text)).toBe("hello");
    const delta = events(r.text).find((e) => e.type === "message_delta");
    expect(delta.usage).toMatchObject({ output_tokens: 7 });
    expect(tokens(r.row)).toEqual(expected);
    await expectLogged(r);
  });
});

/** A body sent in exactly these pieces (strings as UTF-8), as an upstream's TCP reads may cut it. */
function pieces(parts: Array<string | Uint8Array>, type = "text/event-stream", headers: Record<string, string> = {}): Response {
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const part of parts) {
        controller.enqueue(typeof part === "string" ? encoder.encode(part) : part);
        await Bun.sleep(2);
      }
      controller.close();
    },
  });
  return new Response(stream, { headers: { "content-type": type, ...headers } });
}
const data = (o: unknown, eol = "\n") => `data: ${JSON.stringify(o)}${eol}${eol}`;

describe("Moonshot: streamed usage inside choices[0].usage on the finishing chunk", () => {
  const usage = { prompt_tokens: 30, completion_tokens: 9, total_tokens: 39 };
  const finish = () => ({ ...chunk({}, "stop"), choices: [{ index: 0, delta: {}, finish_reason: "stop", usage }] });
  const expected = { prompt: 30, completion: 9, cache_read: 0, cache_write: 0, reasoning: 0, source: "upstream", cost: cost({ input: 30, output: 9 }) };
  test("there only: charged as reported, same format and translated", async () => {
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "hel" }), chunk({ content: "lo" }), finish()], { done: true }));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("hello");
    expect(tokens(r.row)).toEqual(expected);
    const translated = await messages("cp-openai", true);
    expect(anthropicText(translated.text)).toBe("hello");
    expect(tokens(translated.row)).toEqual(expected);
  });
  test("there and again on a trailing usage chunk: counted once", async () => {
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "hello" }), finish(), { ...chunk({}), choices: [], usage }], { done: true }));
    const r = await chat("cp-openai", true);
    expect(tokens(r.row)).toEqual(expected);
    const translated = await messages("cp-openai", true);
    expect(tokens(translated.row)).toEqual(expected);
  });
});

describe("xAI: reasoning_tokens counted beside completion_tokens (total_tokens = prompt + completion + reasoning)", () => {
  // grok-3-mini's figures as xAI reports them: 12 + 1 + 386 = 399.
  const usage = { prompt_tokens: 12, completion_tokens: 1, total_tokens: 399, prompt_tokens_details: { text_tokens: 12, audio_tokens: 0, image_tokens: 0, cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 386, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 }, num_sources_used: 0 };
  const expected = { prompt: 12, completion: 387, cache_read: 0, cache_write: 0, reasoning: 386, source: "upstream", cost: cost({ input: 12, output: 387 }) };
  test("non-streaming, same format and translated", async () => {
    up("openai").route("POST", /.*/, () => json(completion(usage, "4")));
    const r = await chat("cp-openai", false);
    expect(JSON.parse(r.text).usage).toEqual(usage);
    expect(tokens(r.row)).toEqual(expected);
    const translated = await messages("cp-openai", false);
    expect(JSON.parse(translated.text).usage).toMatchObject({ input_tokens: 12, output_tokens: 387 });
    expect(tokens(translated.row)).toEqual(expected);
  });
  test("streaming", async () => {
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "4" }, "stop"), { ...chunk({}), choices: [], usage }], { done: true }));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("4");
    expect(tokens(r.row)).toEqual(expected);
  });
  test("OpenAI's own shape, reasoning inside completion_tokens, is not counted twice", async () => {
    const openai = { prompt_tokens: 12, completion_tokens: 387, total_tokens: 399, completion_tokens_details: { reasoning_tokens: 386 } };
    up("openai").route("POST", /.*/, () => json(completion(openai, "4")));
    const r = await chat("cp-openai", false);
    expect(tokens(r.row)).toEqual(expected);
  });
});

describe("usage on more than one chunk", () => {
  test("vLLM continuous_usage_stats: cumulative usage on every chunk is not summed", async () => {
    const u = (completion: number) => ({ prompt_tokens: 40, completion_tokens: completion, total_tokens: 40 + completion });
    up("openai").route("POST", /.*/, () =>
      sse([chunk({ role: "assistant", content: "" }, null, { usage: u(0) }), chunk({ content: "hel" }, null, { usage: u(1) }), chunk({ content: "lo" }, null, { usage: u(2) }), chunk({}, "stop", { usage: u(3) }), { ...chunk({}), choices: [], usage: u(3) }], { done: true }),
    );
    const r = await call("/v1/chat/completions", { model: "cp-openai", stream: true, stream_options: { include_usage: true, continuous_usage_stats: true }, messages: [{ role: "user", content: "hi" }] });
    expect(chatText(r.text)).toBe("hello");
    expect(tokens(r.row)).toMatchObject({ prompt: 40, completion: 3, source: "upstream", cost: cost({ input: 40, output: 3 }) });
  });
  test("Mistral and Together: usage on the finishing chunk, which also carries content; the client did not ask for usage", async () => {
    const usage = { prompt_tokens: 12, total_tokens: 20, completion_tokens: 8 };
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "hel" }), chunk({ content: "lo!" }, "stop", { usage })], { done: true }));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("hello!");
    expect(tokens(r.row)).toMatchObject({ prompt: 12, completion: 8, source: "upstream" });
    const translated = await messages("cp-openai", true);
    expect(anthropicText(translated.text)).toBe("hello!");
    expect(tokens(translated.row)).toMatchObject({ prompt: 12, completion: 8, source: "upstream" });
  });
  test("a server that ignores stream_options never sends usage: a capped estimate, marked estimated, never zero", async () => {
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "hello there" }), chunk({}, "stop")], { done: true }));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("hello there");
    expect(r.row.source).toBe("estimated");
    expect(r.row.completion_tokens).toBeGreaterThan(0);
    expect(r.row.cost_nanos).toBeGreaterThan(0);
    expect(r.row.cost_nanos).toBeLessThanOrEqual(cost({ input: 100000, output: 4000 }));
  });
});

describe("SSE framing", () => {
  const usage = { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13, cost: 0.0000265, is_byok: false, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } };
  // "héllo wörld ✓": the é, ö and ✓ are cut between reads.
  const body = () => {
    const first = new TextEncoder().encode(data(chunk({ role: "assistant", content: "héllo wörld ✓" }), "\r\n"));
    const at = first.indexOf(0xc3) + 1;
    const check = first.indexOf(0xe2) + 2;
    return [": OPENROUTER PROCESSING\r\n\r\n", first.slice(0, at), first.slice(at, check), first.slice(check), ": OPENROUTER PROCESSING\r\n\r\n", data(chunk({}, "stop"), "\r\n"), data({ ...chunk({}), choices: [], usage }, "\r\n"), "data: [DONE]\r\n\r\n"];
  };
  test("OpenRouter: CRLF, processing comments, a character cut between reads, usage with cost and is_byok", async () => {
    up("openai").route("POST", /.*/, () => pieces(body()));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("héllo wörld ✓");
    expect(tokens(r.row)).toEqual({ prompt: 9, completion: 4, cache_read: 0, cache_write: 0, reasoning: 0, source: "upstream", cost: cost({ input: 9, output: 4 }) });
    const translated = await messages("cp-openai", true);
    expect(anthropicText(translated.text)).toBe("héllo wörld ✓");
    expect(tokens(translated.row)).toMatchObject({ prompt: 9, completion: 4, source: "upstream" });
  });
  test("no [DONE]: the stream ends when the connection closes cleanly after the usage chunk", async () => {
    up("openai").route("POST", /.*/, () => pieces([data(chunk({ role: "assistant", content: "fine" }, "stop")), data({ ...chunk({}), choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } })]));
    const r = await chat("cp-openai", true);
    expect(r.status).toBe(200);
    expect(chatText(r.text)).toBe("fine");
    expect(r.row).toMatchObject({ status: 200, prompt_tokens: 3, completion_tokens: 1, source: "upstream" });
    const translated = await messages("cp-openai", true);
    expect(anthropicText(translated.text)).toBe("fine");
    expect(events(translated.text).at(-1)).toMatchObject({ type: "message_stop" });
    expect(translated.row).toMatchObject({ status: 200, prompt_tokens: 3, completion_tokens: 1, source: "upstream" });
  });
  test("a server that ignores stream:true and answers JSON: the answer in the client's family, charged as reported", async () => {
    up("openai").route("POST", /.*/, () => json(completion({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }, "plain")));
    const r = await chat("cp-openai", true);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).choices[0].message.content).toBe("plain");
    expect(tokens(r.row)).toMatchObject({ prompt: 5, completion: 2, source: "upstream", cost: cost({ input: 5, output: 2 }) });
    const translated = await messages("cp-openai", true);
    expect(translated.status).toBe(200);
    expect(JSON.parse(translated.text)).toMatchObject({ type: "message", content: [{ type: "text", text: "plain" }], usage: { input_tokens: 5, output_tokens: 2 } });
    expect(tokens(translated.row)).toMatchObject({ prompt: 5, completion: 2, source: "upstream", cost: cost({ input: 5, output: 2 }) });
  });
});

describe("Anthropic-compatible streams", () => {
  const start = (usage: Record<string, unknown>) => ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "m", content: [], stop_reason: null, stop_sequence: null, usage } }];
  const stream = (startUsage: Record<string, unknown>, deltaUsage: Record<string, unknown>) => () =>
    sse([
      start(startUsage),
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
      ["ping", { type: "ping" }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hel" } }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "lo" } }],
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: deltaUsage }],
      ["message_stop", { type: "message_stop" }],
    ]);
  // Anthropic's own: cache counts on message_start, and message_delta restating them with the final output count.
  const cached = { input_tokens: 20, cache_creation_input_tokens: 300, cache_read_input_tokens: 1000, output_tokens: 1 };
  const expected = { prompt: 1320, completion: 15, cache_read: 1000, cache_write: 300, reasoning: 0, source: "upstream", cost: cost({ input: 20, cached: 1000, write: 300, output: 15 }) };
  test("ping events, cache counts on message_start, message_delta repeating input_tokens: counted once", async () => {
    up("anthropic").route("POST", /.*/, stream(cached, { ...cached, output_tokens: 15 }));
    const r = await messages("cp-anthropic", true);
    expect(anthropicText(r.text)).toBe("hello");
    expect(events(r.text).filter((e) => e.type === "ping")).toHaveLength(1);
    expect(tokens(r.row)).toEqual(expected);
    const translated = await chat("cp-anthropic", true);
    expect(chatText(translated.text)).toBe("hello");
    expect(tokens(translated.row)).toEqual(expected);
  });
  test("message_delta with the output count only (DeepSeek's and Moonshot's endpoints): the input side kept from message_start", async () => {
    up("anthropic").route("POST", /.*/, stream(cached, { output_tokens: 15 }));
    const r = await messages("cp-anthropic", true);
    expect(tokens(r.row)).toEqual(expected);
    const translated = await call("/v1/chat/completions", { model: "cp-anthropic", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hi" }] });
    expect(events(translated.text).find((e) => e !== "[DONE]" && e.usage)?.usage).toMatchObject({ prompt_tokens: 1320, completion_tokens: 15, prompt_tokens_details: { cached_tokens: 1000 } });
    expect(tokens(translated.row)).toEqual(expected);
  });
  test("message_start with zero placeholders and every count on message_delta", async () => {
    up("anthropic").route("POST", /.*/, stream({ input_tokens: 0, output_tokens: 0 }, { ...cached, output_tokens: 15 }));
    const r = await messages("cp-anthropic", true);
    expect(tokens(r.row)).toEqual(expected);
  });
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
      const plain = await chat("cp-openai", false);
      expect(JSON.parse(plain.text).choices[0].message.content).toBe("zipped ✓");
      expect(tokens(plain.row)).toMatchObject({ prompt: 21, completion: 6, source: "upstream" });
      const streamed = await chat("cp-openai", true);
      expect(chatText(streamed.text)).toBe("zipped ✓");
      expect(tokens(streamed.row)).toMatchObject({ prompt: 21, completion: 6, source: "upstream" });
      const translated = await messages("cp-openai", true);
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
    await addKey(router, { provider: url, level: 9, config: { provider_type: "standard", formats: ["openai"] } });
    await router.deps.settings.update({ LEVEL_MAPPER: "cp-openai=1,cp-responses=2,cp-anthropic=3,cp-gemini=4,cp-len=9" });
    const r = await chat("cp-len", false);
    // A body cut short of its stated length is no answer: the client's envelope, nothing charged.
    expect(r.status).toBe(502);
    expect(JSON.parse(r.text).error).toMatchObject({ type: "api_error", code: "upstream_error" });
    expect(r.row).toMatchObject({ status: 502, cost_nanos: 0 });
  });
  test("shorter than the body: 502, nothing charged", async () => {
    const body = JSON.stringify(completion(usage, "short"));
    const url = await verbatimUpstream(() => ({ head: `content-type: application/json\r\ncontent-length: ${body.length - 30}\r\n`, body }));
    await addKey(router, { provider: url, level: 8, config: { provider_type: "standard", formats: ["openai"] } });
    await router.deps.settings.update({ LEVEL_MAPPER: "cp-openai=1,cp-responses=2,cp-anthropic=3,cp-gemini=4,cp-len=9,cp-short=8" });
    const r = await chat("cp-short", false);
    // Read to its stated length the JSON is cut: not relayed as an answer, nothing charged.
    expect(r.status).toBe(502);
    expect(JSON.parse(r.text).error).toMatchObject({ type: "api_error", code: "upstream_error" });
    expect(r.row).toMatchObject({ status: 502, cost_nanos: 0 });
  });
});

describe("a failure the upstream reports inside its stream", () => {
  const piece = "x".repeat(199) + " ";
  test("Anthropic's overloaded_error after 4000 bytes of text: charged for what was delivered, not message_start's placeholder; the row says 502", async () => {
    up("anthropic").route("POST", /.*/, () =>
      sse([
        ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "m", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 12, output_tokens: 1 } } }],
        ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
        ...Array.from({ length: 20 }, (): [string, unknown] => ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: piece } }]),
        ["error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }],
      ]),
    );
    for (const r of [await messages("cp-anthropic", true), await chat("cp-anthropic", true)]) {
      expect(r.status).toBe(200);
      expect(r.text.split(piece).length - 1).toBe(20);
      expect(r.text).toContain("Overloaded");
      expect(r.row).toMatchObject({ status: 502, prompt_tokens: 12, source: "estimated" });
      expect(r.row.completion_tokens).toBeGreaterThanOrEqual(900);
      await expectLogged(r);
    }
  });
  test("OpenRouter's error chunk (finish_reason error) after some text: the row says 502, charged an estimate of what was delivered", async () => {
    up("openai").route("POST", /.*/, () =>
      sse([chunk({ role: "assistant", content: piece.repeat(5) }), { id: "cmpl-abc", object: "chat.completion.chunk", created: 1, model: "m", provider: "openai", error: { code: "server_error", message: "Provider disconnected unexpectedly" }, choices: [{ index: 0, delta: { content: "" }, finish_reason: "error" }] }], { done: true }),
    );
    for (const r of [await chat("cp-openai", true), await messages("cp-openai", true)]) {
      expect(r.status).toBe(200);
      expect(r.text).toContain("Provider disconnected unexpectedly");
      expect(r.row).toMatchObject({ status: 502, source: "estimated" });
      expect(r.row.completion_tokens).toBeGreaterThanOrEqual(200);
    }
  });
});

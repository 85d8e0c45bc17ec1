/**
 * The benchmark's upstream, run in its own process (`bun scripts/bench/mock-upstream.ts`)
 * so its CPU is not counted against the proxy under test. HTTPS on 127.0.0.1 with
 * the certificate in MOCK_CERT/MOCK_KEY; prints `mock listening on <url>`.
 *
 * Answers any POST like OpenAI chat completions:
 * - non-streaming (body without `"stream":true`): a chat.completion JSON with usage, at once;
 * - streaming: `x-mock-chunks` content chunks (default 20), then a usage-only chunk
 *   when the body asked for `include_usage` (as OpenAI does), then `data: [DONE]`.
 *   Zero-delay by default (the whole stream in one write); paced with
 *   `x-mock-first-ms` (delay before the first chunk) and `x-mock-every-ms` (between chunks).
 *
 * `GET /__stats` reports requests in flight and the most seen at once (`?reset=1` resets it),
 * which tells whether a proxy really opens as many upstream streams as it has clients.
 */
import { readFileSync } from "node:fs";

const encoder = new TextEncoder();
const MODEL = "bench-model";
const CREATED = 1_700_000_000;
const PROMPT_TOKENS = 120;

const completion = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: CREATED,
  model: MODEL,
  system_fingerprint: "fp_bench",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello! This is a benchmark answer of a few words.", refusal: null }, logprobs: null, finish_reason: "stop" }],
  usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: 12, total_tokens: PROMPT_TOKENS + 12 },
});

const chunk = (delta: Record<string, unknown>, finish: string | null) =>
  encoder.encode(
    `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: CREATED, model: MODEL, system_fingerprint: "fp_bench", choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null })}\n\n`,
  );
const FIRST = chunk({ role: "assistant", content: "Hello" }, null);
const MIDDLE = chunk({ content: " token" }, null);
const LAST = chunk({}, "stop");
const usageChunk = (completionTokens: number) =>
  encoder.encode(
    `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: CREATED, model: MODEL, system_fingerprint: "fp_bench", choices: [], usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: completionTokens, total_tokens: PROMPT_TOKENS + completionTokens } })}\n\n`,
  );
const DONE = encoder.encode("data: [DONE]\n\n");

/** Content chunks of a stream of `n`: the first carries the role, the last the finish reason. */
function contentChunk(i: number, n: number): Uint8Array {
  if (i === 0) return FIRST;
  return i === n - 1 ? LAST : MIDDLE;
}

/** Whole zero-delay streams, by chunk count and usage flag. */
const wholeStreams = new Map<string, Uint8Array>();
function wholeStream(n: number, usage: boolean): Uint8Array {
  const key = `${n}:${usage}`;
  let bytes = wholeStreams.get(key);
  if (!bytes) {
    const parts: Uint8Array[] = [];
    for (let i = 0; i < n; i++) parts.push(contentChunk(i, n));
    if (usage) parts.push(usageChunk(n));
    parts.push(DONE);
    bytes = new Uint8Array(parts.reduce((s, p) => s + p.byteLength, 0));
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.byteLength;
    }
    wholeStreams.set(key, bytes);
  }
  return bytes;
}

let inflight = 0;
let maxInflight = 0;
let requests = 0;
const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(process.env.MOCK_PORT ?? 0),
  tls: { cert: readFileSync(process.env.MOCK_CERT!, "utf8"), key: readFileSync(process.env.MOCK_KEY!, "utf8") },
  idleTimeout: 0,
  async fetch(request) {
    if (request.method === "GET") {
      const url = new URL(request.url);
      if (url.pathname !== "/__stats") return new Response("not found", { status: 404 });
      const stats = { inflight, maxInflight, requests };
      if (url.searchParams.has("reset")) maxInflight = inflight;
      return Response.json(stats);
    }
    requests++;
    inflight++;
    maxInflight = Math.max(maxInflight, inflight);
    const body = await request.text();
    if (!body.includes('"stream":true')) {
      inflight--;
      return new Response(completion, { headers: { "content-type": "application/json" } });
    }
    const usage = body.includes('"include_usage":true');
    const headers = request.headers;
    const n = Math.max(1, Number(headers.get("x-mock-chunks") ?? 20));
    const first = Number(headers.get("x-mock-first-ms") ?? 0);
    const every = Number(headers.get("x-mock-every-ms") ?? 0);
    let open = true;
    const close = () => {
      if (open) {
        open = false;
        inflight--;
      }
    };
    if (first === 0 && every === 0) {
      const bytes = wholeStream(n, usage);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes);
          controller.close();
          close();
        },
      });
      return new Response(stream, { headers: SSE_HEADERS });
    }
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        try {
          if (first > 0) await Bun.sleep(first);
          for (let i = 0; i < n && open; i++) {
            if (i > 0 && every > 0) await Bun.sleep(every);
            if (!open) return;
            controller.enqueue(contentChunk(i, n));
          }
          if (every > 0) await Bun.sleep(every);
          if (!open) return;
          if (usage) controller.enqueue(usageChunk(n));
          controller.enqueue(DONE);
          controller.close();
        } catch {
          // The client went away.
        } finally {
          close();
        }
      },
      cancel: close,
    });
    return new Response(stream, { headers: SSE_HEADERS });
  },
});

console.log(`mock listening on https://127.0.0.1:${server.port}`);

import { Database } from "bun:sqlite";
import type { Server } from "bun";
import { afterEach, describe, expect, test } from "bun:test";
import { createServer, type Server as HttpsServer } from "node:https";
import { join } from "node:path";
import { addKey, usageRows } from "../helpers/keys.ts";
import { hang, sse, startMockUpstream, type MockUpstream, type Script } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type StartOptions, type TestRouter } from "../helpers/router.ts";
import { testCertificates } from "../helpers/tls.ts";

const encoder = new TextEncoder();

const stops: Array<() => Promise<void>> = [];
const routers: TestRouter[] = [];
afterEach(async () => {
  // Upstreams first: closing them ends any call a router still waits on.
  for (const stop of stops.splice(0)) await stop();
  for (const router of routers.splice(0)) await router.stop();
});

async function router(config: StartOptions["config"] = {}): Promise<TestRouter> {
  const started = await startRouter({ config });
  routers.push(started);
  return started;
}

function mock(path: string, script: Script): MockUpstream {
  const upstream = startMockUpstream().route("POST", path, script);
  stops.push(() => upstream.stop());
  return upstream;
}

const chunk = (content: string) => ({
  id: "chatcmpl-s",
  object: "chat.completion.chunk",
  created: 1,
  model: "gpt-x",
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});
const usageChunk = (prompt: number, completion: number) => ({
  id: "chatcmpl-s",
  object: "chat.completion.chunk",
  created: 1,
  model: "gpt-x",
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});
const frame = (data: unknown) => encoder.encode(`data: ${JSON.stringify(data)}\n\n`);

function streamChat(r: TestRouter, init: RequestInit = {}) {
  return r.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-x", stream: true, messages: [{ role: "user", content: "tell me a story" }] }),
    ...init,
  });
}

/** The `data:` payloads of an SSE text, in order. */
function dataOf(text: string): string[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) =>
      block
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => line.slice(6))
        .join("\n"),
    );
}

/** The text content of the chunks, and the error event that ended the stream (if any). */
function parse(text: string) {
  let content = "";
  let error: any;
  let done = false;
  for (const data of dataOf(text)) {
    if (data === "[DONE]") {
      done = true;
      continue;
    }
    const event = JSON.parse(data);
    if (event.error) error = event.error;
    else content += event.choices?.[0]?.delta?.content ?? "";
  }
  return { content, error, done };
}

const rowFor = (r: TestRouter, status: number): Promise<Record<string, any>> =>
  waitFor(async () => (await usageRows(r)).find((row) => row.status === status), 5000, `a usage row with status ${status}`) as Promise<Record<string, any>>;

/** A stream that sends `first` and then nothing, never closing. */
function silentAfter(first: Uint8Array): Response {
  return new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(first);
      },
    }),
    { headers: { "content-type": "text/event-stream" } },
  );
}

/**
 * An HTTPS upstream (node:https) that sends its response headers at once and the
 * first event only after `delayMs`, as providers do while a model thinks.
 */
async function headersFirstUpstream(delayMs: number, events: unknown[]): Promise<{ url: string; requests: number }> {
  const certs = testCertificates();
  const state = { url: "", requests: 0 };
  const timers: Array<ReturnType<typeof setTimeout>> = [];
  const server: HttpsServer = createServer({ cert: certs.certPem, key: certs.keyPem }, (req, res) => {
    state.requests++;
    req.resume();
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders();
    timers.push(
      setTimeout(() => {
        for (const event of events) res.write(`data: ${JSON.stringify(event)}\n\n`);
        res.end("data: [DONE]\n\n");
      }, delayMs),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  state.url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  stops.push(async () => {
    for (const timer of timers) clearTimeout(timer);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return state;
}

describe("slow first byte", () => {
  test("a healthy stream whose first event comes late is not cut", async () => {
    const r = await router({ firstByteTimeoutMs: 5000 });
    const upstream = mock("/v1/chat/completions", () =>
      sse([chunk("Once"), chunk(" upon"), usageChunk(5, 2)], { firstDelayMs: 1500, done: true }),
    );
    await addKey(r, { provider: `${upstream.url}/v1` });
    const res = await streamChat(r);
    expect(res.status).toBe(200);
    const result = parse(await res.text());
    expect(result).toEqual({ content: "Once upon", error: undefined, done: true });
    expect(await rowFor(r, 200)).toMatchObject({ prompt_tokens: 5, completion_tokens: 2, source: "upstream" });
  });

  test("headers at once and the first event late: the first-byte limit applies, not the idle limit", async () => {
    const r = await router({ firstByteTimeoutMs: 5000, streamIdleTimeoutMs: 300 });
    const upstream = await headersFirstUpstream(1200, [chunk("Thought"), chunk(" hard"), usageChunk(4, 9)]);
    await addKey(r, { provider: `${upstream.url}/v1` });
    const res = await streamChat(r);
    expect(res.status).toBe(200);
    expect(parse(await res.text())).toEqual({ content: "Thought hard", error: undefined, done: true });
    expect(await rowFor(r, 200)).toMatchObject({ prompt_tokens: 4, completion_tokens: 9, source: "upstream" });
  });
});

describe("first-byte timeout", () => {
  test("an upstream that never answers is retried on the next key", async () => {
    const r = await router({ firstByteTimeoutMs: 300 });
    const silent = mock("/v1/chat/completions", () => hang());
    const good = mock("/v1/chat/completions", () => sse([chunk("Hi"), chunk("!")], { done: true }));
    await addKey(r, { provider: `${silent.url}/v1` });
    const second = await addKey(r, { provider: `${good.url}/v1` });
    const res = await streamChat(r);
    expect(res.status).toBe(200);
    expect(parse(await res.text()).content).toBe("Hi!");
    expect(silent.requests).toHaveLength(1);
    expect(good.requests).toHaveLength(1);
    expect(await rowFor(r, 200)).toMatchObject({ key_id: second.id });
  });

  test("headers sent but no event within the first-byte limit: retried on the next key", async () => {
    const r = await router({ firstByteTimeoutMs: 300, streamIdleTimeoutMs: 5000 });
    const stalled = await headersFirstUpstream(60_000, [chunk("too late")]);
    const good = mock("/v1/chat/completions", () => sse([chunk("Fresh")], { done: true }));
    await addKey(r, { provider: `${stalled.url}/v1` });
    await addKey(r, { provider: `${good.url}/v1` });
    const res = await streamChat(r);
    expect(res.status).toBe(200);
    expect(parse(await res.text())).toMatchObject({ content: "Fresh", error: undefined });
    expect(stalled.requests).toBe(1);
    expect(good.requests).toHaveLength(1);
  });

  test("with a single key the client gets 502 upstream_timeout in its envelope (spec 7: upstream unavailable)", async () => {
    const r = await router({ firstByteTimeoutMs: 300 });
    const silent = mock("/v1/chat/completions", () => hang());
    await addKey(r, { provider: `${silent.url}/v1` });
    const res = await streamChat(r);
    expect(res.status).toBe(502);
    expect((await res.json()).error).toMatchObject({ type: "api_error", code: "upstream_timeout" });
    expect(await rowFor(r, 502)).toMatchObject({ stream: 1 });
  });
});

describe("mid-stream failures", () => {
  test("idle timeout: the stream ends with an OpenAI error event; the row says 504", async () => {
    const r = await router({ streamIdleTimeoutMs: 300 });
    const upstream = mock("/v1/chat/completions", () => silentAfter(frame(chunk("Hel"))));
    await addKey(r, { provider: `${upstream.url}/v1` });
    const res = await streamChat(r);
    expect(res.status).toBe(200);
    const text = await res.text();
    const result = parse(text);
    expect(result.content).toBe("Hel");
    expect(result.done).toBe(false);
    expect(result.error).toMatchObject({ type: "timeout_error", code: "upstream_idle_timeout" });
    expect(dataOf(text).at(-1)).toStartWith('{"error":');
    expect(await rowFor(r, 504)).toMatchObject({ stream: 1, source: "estimated" });
  });

  test("idle timeout on an Anthropic stream ends with `event: error`", async () => {
    const r = await router({ streamIdleTimeoutMs: 300 });
    const start = {
      type: "message_start",
      message: { id: "msg_1", type: "message", role: "assistant", model: "claude-x", content: [], usage: { input_tokens: 8, output_tokens: 1 } },
    };
    const upstream = mock("/v1/messages", () => silentAfter(encoder.encode(`event: message_start\ndata: ${JSON.stringify(start)}\n\n`)));
    await addKey(r, { provider: `${upstream.url}/v1` });
    const res = await r.fetch("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-x", max_tokens: 5, stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toStartWith("event: message_start\n");
    const last = text.trim().split("\n\n").at(-1)!;
    expect(last).toStartWith("event: error\ndata: ");
    expect(JSON.parse(last.split("\ndata: ")[1]!)).toEqual({ type: "error", error: { type: "timeout_error", message: expect.any(String) } });
    expect(await rowFor(r, 504)).toMatchObject({ prompt_tokens: 8, source: "upstream" });
  });

  test("the upstream drops mid-stream: the client gets the first events, then an error event; the row says 502", async () => {
    const r = await router();
    const upstream = mock("/v1/chat/completions", () =>
      sse([chunk("one"), chunk(" two"), chunk(" three"), usageChunk(3, 3)], { breakAfter: 2, delayMs: 10, done: true }),
    );
    await addKey(r, { provider: `${upstream.url}/v1` });
    const res = await streamChat(r);
    expect(res.status).toBe(200);
    const result = parse(await res.text());
    expect(result.content).toBe("one two");
    expect(result.done).toBe(false);
    expect(result.error).toMatchObject({ type: "api_error", code: "upstream_stream_error" });
    expect(await rowFor(r, 502)).toMatchObject({ stream: 1 });
  });
});

describe("client disconnect", () => {
  test("mid-stream: the upstream is drained and its real usage recorded with status 499", async () => {
    const r = await router({ drainTimeoutMs: 3000 });
    const upstreamState = { sent: 0, finished: false, cancelled: false };
    const upstream = mock("/v1/chat/completions", () => {
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          try {
            controller.enqueue(frame(chunk("first")));
            for (let i = 0; i < 8; i++) {
              await Bun.sleep(40);
              controller.enqueue(frame(chunk(` part ${i}`)));
              upstreamState.sent++;
            }
            controller.enqueue(frame(usageChunk(11, 22)));
            controller.enqueue(encoder.encode("data: [DONE]\n\n"));
            controller.close();
            upstreamState.finished = true;
          } catch {
            // The router cut the connection.
          }
        },
        cancel() {
          upstreamState.cancelled = true;
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream" } });
    });
    await addKey(r, { provider: `${upstream.url}/v1` });

    const client = new AbortController();
    const res = await streamChat(r, { signal: client.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain("first");
    client.abort();
    await reader.read().catch(() => {});

    const row = await rowFor(r, 499);
    expect(row).toMatchObject({ stream: 1, prompt_tokens: 11, completion_tokens: 22, source: "upstream" });
    expect(upstreamState.finished).toBe(true);
    expect(upstreamState.cancelled).toBe(false);
    expect(await usageRows(r)).toHaveLength(1);
  });

  test("a stream that never reports usage gets an estimated row", async () => {
    const r = await router();
    const upstream = mock("/v1/chat/completions", () => sse([chunk("Hello"), chunk(" there, friend")], { done: true }));
    await addKey(r, { provider: `${upstream.url}/v1` });
    const res = await streamChat(r);
    expect(parse(await res.text())).toEqual({ content: "Hello there, friend", error: undefined, done: true });
    const row = await rowFor(r, 200);
    expect(row.source).toBe("estimated");
    expect(row.prompt_tokens).toBeGreaterThan(0);
    expect(row.completion_tokens).toBeGreaterThan(0);
  });

  test("a non-streaming call the client leaves before the answer: the upstream is read on for the drain time, then cut; nothing answered, nothing charged", async () => {
    const r = await router({ drainTimeoutMs: 300 });
    const certs = testCertificates();
    const seen: AbortSignal[] = [];
    const upstream: Server<unknown> = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: certs.certPem, key: certs.keyPem },
      idleTimeout: 0,
      fetch(request) {
        seen.push(request.signal);
        return hang();
      },
    });
    stops.push(() => upstream.stop(true));
    await addKey(r, { provider: `https://127.0.0.1:${upstream.port}/v1` });

    const client = new AbortController();
    const call = r
      .fetch("/v1/chat/completions", {
        method: "POST",
        body: JSON.stringify({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }),
        signal: client.signal,
      })
      .catch((error: Error) => error);
    await waitFor(() => seen.length === 1, 5000, "the upstream request");
    expect(seen[0]!.aborted).toBe(false);
    const leftAt = performance.now();
    client.abort();
    expect(await call).toBeInstanceOf(Error);
    await waitFor(() => seen[0]!.aborted, 5000, "the upstream request to be aborted");
    // Not at once: the upstream may have been about to answer (and charge).
    expect(performance.now() - leftAt).toBeGreaterThanOrEqual(250);
    expect(await rowFor(r, 499)).toMatchObject({ stream: 0, cost_nanos: 0, prompt_tokens: 0 });
    expect(r.deps.pool.keysOf(1)[0]!.inFlight).toBe(0);
  });

  test("a non-streaming answer the client leaves halfway is recorded as 499, not as an upstream failure", async () => {
    const r = await router({ drainTimeoutMs: 300 });
    let upstreamCancelled = false;
    const upstream = mock("/v1/chat/completions", () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(encoder.encode('{"id":"chatcmpl-slow","choices":['));
          },
          cancel() {
            upstreamCancelled = true;
          },
        }),
        { headers: { "content-type": "application/json" } },
      ),
    );
    await addKey(r, { provider: `${upstream.url}/v1` });
    const client = new AbortController();
    const call = r
      .fetch("/v1/chat/completions", {
        method: "POST",
        body: JSON.stringify({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }),
        signal: client.signal,
      })
      .catch((error: Error) => error);
    await waitFor(() => upstream.requests.length === 1, 5000, "the upstream's answer to start");
    client.abort();
    expect(await call).toBeInstanceOf(Error);
    expect(await rowFor(r, 499)).toMatchObject({ stream: 0 });
    expect((await usageRows(r)).some((row) => row.status === 502)).toBe(false);
    await waitFor(() => upstreamCancelled, 5000, "the upstream body to be cancelled");
  });
});

describe("the usage chunk the router asked for", () => {
  /** An upstream that sends `text` in pieces cut at `cuts` (byte offsets), each piece its own write. */
  function piecewise(text: string, cuts: number[]): Response {
    const bytes = encoder.encode(text);
    const edges = [0, ...cuts, bytes.byteLength];
    return new Response(
      new ReadableStream<Uint8Array>({
        async start(controller) {
          for (let i = 0; i + 1 < edges.length; i++) {
            controller.enqueue(bytes.slice(edges[i], edges[i + 1]));
            await Bun.sleep(15);
          }
          controller.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  }

  test("is cut however the upstream's writes split events, and every other byte reaches the client as sent", async () => {
    const content = ["Grüße", ", wörld ✓", "!"];
    const events = [...content.map(chunk), usageChunk(9, 3)].map((e) => `data: ${JSON.stringify(e)}\n\n`);
    const text = events.join("") + "data: [DONE]\n\n";
    const at = (needle: string, plus = 0) => encoder.encode(text.slice(0, text.indexOf(needle))).byteLength + plus;
    // Whole events; a cut inside a line; one inside a two-byte character; one inside the usage chunk.
    const cuts = [encoder.encode(events[0]!).byteLength, at("wörld", 2), at("wörld", 5), at('"usage"', 3)].sort((a, b) => a - b);
    const r = await router();
    const upstream = mock("/v1/chat/completions", (req) => {
      expect(req.json.stream_options).toEqual({ include_usage: true });
      return piecewise(text, cuts);
    });
    await addKey(r, { provider: `${upstream.url}/v1` });
    const res = await streamChat(r);
    const received = await res.text();
    // Exactly the upstream's stream without its usage event.
    expect(received).toBe(text.replace(events[3]!, ""));
    expect(parse(received)).toEqual({ content: content.join(""), error: undefined, done: true });
    const row = await rowFor(r, 200);
    expect(row).toMatchObject({ source: "upstream", prompt_tokens: 9, completion_tokens: 3 });
  });

  test("is cut out of a write that holds the whole stream, the other bytes untouched", async () => {
    const content = ["Grüße", ", wörld ✓"];
    // A comment and an `id:` line: fields a re-encoding would drop, so they show the bytes passed as they came.
    const events = [...content.map(chunk), usageChunk(4, 2)].map((e, i) => `: note ${i}\nid: ${i}\ndata: ${JSON.stringify(e)}\n\n`);
    const text = events.join("") + "data: [DONE]\n\n";
    const r = await router();
    const upstream = mock("/v1/chat/completions", () => piecewise(text, []));
    await addKey(r, { provider: `${upstream.url}/v1` });
    const received = await (await streamChat(r)).text();
    expect(received).toBe(text.replace(events[2]!, ""));
    expect(await rowFor(r, 200)).toMatchObject({ source: "upstream", prompt_tokens: 4, completion_tokens: 2 });
  });
});

describe("graceful shutdown", () => {
  test("a stream the grace period cuts is read on for its usage, and charged before the router closes", async () => {
    const r = await startRouter({ config: { graceSeconds: 1 } });
    routers.push(r);
    const upstream = mock("/v1/chat/completions", () => {
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          for (let i = 0; i < 20; i++) {
            controller.enqueue(frame(chunk(`${i}.`)));
            await Bun.sleep(100);
          }
          controller.enqueue(frame(usageChunk(6, 20)));
          controller.enqueue(encoder.encode("data: [DONE]\n\n"));
          controller.close();
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream" } });
    });
    await addKey(r, { provider: `${upstream.url}/v1` });
    const res = await streamChat(r);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    // The stop's grace (1 s) ends before the stream (2 s): its connection is cut, the upstream read on.
    await r.server.stop(1, 0);
    await reader.read().catch(() => {});
    const db = new Database(join(r.dataDir, "router.db"), { readonly: true });
    const rows = db.query<Record<string, any>, []>("SELECT * FROM usage_events").all();
    db.close();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ prompt_tokens: 6, completion_tokens: 20, source: "upstream" });
  });


  test("a stream in flight completes; stop resolves afterwards; new connections are refused", async () => {
    const r = await startRouter({ config: { graceSeconds: 10 } });
    routers.push(r);
    let upstreamDone = false;
    const upstream = mock("/v1/chat/completions", () => {
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          for (let i = 0; i < 10; i++) {
            controller.enqueue(frame(chunk(`${i}.`)));
            await Bun.sleep(100);
          }
          controller.enqueue(frame(usageChunk(6, 10)));
          controller.enqueue(encoder.encode("data: [DONE]\n\n"));
          controller.close();
          upstreamDone = true;
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream" } });
    });
    await addKey(r, { provider: `${upstream.url}/v1` });

    const res = await streamChat(r);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value, { stream: true });

    let stopped = false;
    let upstreamDoneAtStop = false;
    // No drain pause (covered in test/e2e/scale-out-faults.test.ts): new connections are refused at once.
    const stopping = r.server.stop(10, 0).then(() => {
      stopped = true;
      upstreamDoneAtStop = upstreamDone;
    });
    const refused = await fetch(`${r.url}/v1/models`, { keepalive: false, headers: { authorization: `Bearer ${r.ownerKey}` } }).then(
      () => false,
      () => true,
    );
    expect(refused).toBe(true);

    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(parse(text)).toEqual({ content: "0.1.2.3.4.5.6.7.8.9.", error: undefined, done: true });
    await stopping;
    expect(stopped).toBe(true);
    // Stop waited for the stream: it resolved only after the upstream had sent everything.
    expect(upstreamDoneAtStop).toBe(true);

    // The stream's usage reached the database before it closed.
    const db = new Database(join(r.dataDir, "router.db"), { readonly: true });
    const rows = db.query<Record<string, any>, []>("SELECT * FROM usage_events").all();
    db.close();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 200, prompt_tokens: 6, completion_tokens: 10, source: "upstream" });
  });
});

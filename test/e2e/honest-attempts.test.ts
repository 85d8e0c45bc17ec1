import { describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import type { Server } from "bun";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startDroppingUpstream } from "../helpers/raw-upstream.ts";
import { waitFor, type StartOptions, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, geminiClient, openaiClient } from "../helpers/sdk.ts";
import { testCertificates } from "../helpers/tls.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Issue 13, items 8, 9, 10 and 18: a 2xx that is not an answer fails over and is never
 * charged; a client that leaves before the first byte does not stop the upstream, whose
 * usage is charged; estimates stay within what the call could have used and count
 * content, not framing; a Level's only key survives a refused connection.
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } }, ImgPricing: { "acme-img": { Call: 0.04 } } };
const USAGE = { prompt_tokens: 30, completion_tokens: 30, total_tokens: 60 };
const COST = (30 * 2 + 30 * 8) * 1000;
const completion = (content = "ok") => ({ id: "c", object: "chat.completion", created: 1, model: "acme-chat", choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }], usage: USAGE });
const chunk = (content: string | null, usage?: unknown) => ({ id: "c", object: "chat.completion.chunk", created: 1, model: "acme-chat", choices: content === null ? [] : [{ index: 0, delta: { content }, finish_reason: null }], ...(usage ? { usage } : {}) });

const scope = perTest();

const router = (config: StartOptions["config"] = {}): Promise<TestRouter> => scope.router({ pricing: PRICING, config });
const upstream = (): MockUpstream => scope.upstream();

/** A router with two keys on one upstream: whichever key gets the first attempt, the other gets the second. */
async function twoKeys() {
  const r = await router();
  const u = upstream();
  const keys = [await addKey(r, { provider: u.url }), await addKey(r, { provider: u.url })];
  return { r, u, keys };
}

const failuresOf = (r: TestRouter, ids: number[]) => ids.map((id) => r.deps.pool.get(id)!.failures).reduce((a, b) => a + b, 0);

const post = (r: TestRouter, path: string, body: unknown, init: { signal?: AbortSignal } = {}) =>
  r.fetch(path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" }, signal: init.signal });

describe("a 2xx that is not an answer is a failure of its key", () => {
  const CHAT = { model: "acme-chat", messages: [{ role: "user", content: "hi" }] };

  test.each([
    ["an OpenAI error object", () => json({ error: { message: "overloaded", type: "server_error" } })],
    ["JSON cut short", () => new Response('{"id":"c","choices":[{"message":', { headers: { "content-type": "application/json" } })],
    ["an empty JSON body", () => new Response("", { headers: { "content-type": "application/json" } })],
    ["an HTML page", () => new Response("<html><body>Service Unavailable</body></html>", { headers: { "content-type": "text/html" } })],
  ])("%s: another key answers, the first key's health counts it, one charge", async (_name, bad) => {
    const { r, u, keys } = await twoKeys();
    u.once(bad).route("POST", "/v1/chat/completions", () => json(completion("from the second key")));
    const answer = await openaiClient(r.url, r.ownerKey).chat.completions.create(CHAT as never);
    expect(answer.choices[0]!.message.content).toBe("from the second key");
    expect(u.requests).toHaveLength(2);
    expect(failuresOf(r, keys.map((k) => k.id))).toBe(1);
    const rows = await usageRows(r);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 200, cost_nanos: COST, source: "upstream" });
  });

  test("a stream whose first event is an error is tried on another key before the client sees anything", async () => {
    const { r, u, keys } = await twoKeys();
    u.once(() => sse([["error", { type: "error", error: { type: "overloaded_error", message: "busy" } }]]));
    u.route("POST", "/v1/chat/completions", () => sse([chunk("good"), chunk(null, USAGE)], { done: true }));
    const stream = await openaiClient(r.url, r.ownerKey).chat.completions.create({ ...CHAT, stream: true } as never);
    let text = "";
    for await (const part of stream as unknown as AsyncIterable<{ choices: Array<{ delta: { content?: string } }> }>) text += part.choices[0]?.delta.content ?? "";
    expect(text).toBe("good");
    expect(failuresOf(r, keys.map((k) => k.id))).toBe(1);
    expect((await usageRows(r)).map((row) => [row.status, row.cost_nanos])).toEqual([[200, COST]]);
  });

  test("a stream whose first event cannot be read is a failure too", async () => {
    const { r, u } = await twoKeys();
    u.once(() => new Response("data: {not json\n\n", { headers: { "content-type": "text/event-stream" } }));
    u.route("POST", "/v1/chat/completions", () => sse([chunk("good"), chunk(null, USAGE)], { done: true }));
    const res = await post(r, "/v1/chat/completions", { ...CHAT, stream: true });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("good");
    expect(u.requests).toHaveLength(2);
  });

  test("Anthropic and Gemini error objects behind a 200: the SDKs get another key's answer", async () => {
    const { r, u } = await twoKeys();
    u.once(() => json({ type: "error", error: { type: "overloaded_error", message: "busy" } }));
    u.route("POST", "/v1/messages", () => json({ id: "m", type: "message", role: "assistant", model: "acme-claude", content: [{ type: "text", text: "claude ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 30, output_tokens: 30 } }));
    const message = await anthropicClient(r.url, r.ownerKey).messages.create({ model: "acme-claude", max_tokens: 50, messages: [{ role: "user", content: "hi" }] });
    expect(message.content[0]).toMatchObject({ type: "text", text: "claude ok" });

    u.once(() => json({ error: { code: 503, message: "The model is overloaded.", status: "UNAVAILABLE" } }));
    u.route("POST", /:generateContent$/, () => json({ candidates: [{ content: { role: "model", parts: [{ text: "gemini ok" }] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 30, totalTokenCount: 60 } }));
    const answer = await geminiClient(r.url, r.ownerKey).models.generateContent({ model: "acme-gem", contents: "hi" });
    expect(answer.text).toBe("gemini ok");
    expect(u.requests).toHaveLength(4);
  });

  test("when no key answers: 502 in the family's envelope, nothing charged", async () => {
    const r = await router();
    const u = upstream();
    await addKey(r, { provider: u.url });
    u.route("POST", "/v1/messages", () => json({ type: "error", error: { type: "api_error", message: "internal" } }));
    const error = (await anthropicClient(r.url, r.ownerKey)
      .messages.create({ model: "acme-claude", max_tokens: 50, messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e)) as { status: number; error: { type: string; error: { type: string } } };
    expect(error.status).toBe(502);
    expect(error.error).toMatchObject({ type: "error", error: { type: "api_error" } });
    const rows = await usageRows(r);
    expect(rows.map((row) => [row.status, row.cost_nanos])).toEqual([[502, 0]]);
  });

  test("an image generation (never replayed) that answers 200 with an error object is 502 on the first key, uncharged", async () => {
    const { r, u } = await twoKeys();
    u.route("POST", "/v1/images/generations", () => json({ error: { message: "content policy", type: "server_error" } }));
    const res = await post(r, "/v1/images/generations", { model: "acme-img", prompt: "a cat" });
    expect(res.status).toBe(502);
    expect(u.requests).toHaveLength(1);
    expect((await usageRows(r)).map((row) => row.cost_nanos)).toEqual([0]);
  });
});

describe("a client that leaves before the first byte is still metered", () => {
  test("non-streaming: the upstream answers after the client left; its usage is charged, recorded as 499", async () => {
    const r = await router();
    const u = upstream();
    await addKey(r, { provider: u.url });
    let answer!: () => void;
    const gate = new Promise<void>((resolve) => (answer = resolve));
    u.route("POST", "/v1/chat/completions", async () => {
      await gate;
      return json(completion());
    });
    const client = new AbortController();
    const call = post(r, "/v1/chat/completions", { model: "acme-chat", messages: [{ role: "user", content: "hi" }] }, { signal: client.signal }).catch((e: Error) => e);
    await waitFor(() => u.requests.length === 1 || undefined);
    client.abort();
    expect(await call).toBeInstanceOf(Error);
    // The router learns that a client left when the runtime sees its socket close, a
    // moment after the client's own abort; the upstream answers after that moment.
    await Bun.sleep(100);
    answer();
    const row = await waitFor(async () => (await usageRows(r))[0]);
    expect(row).toMatchObject({ status: 499, prompt_tokens: 30, completion_tokens: 30, cost_nanos: COST, source: "upstream" });
  });

  test("streaming: the stream that starts after the client left is read to its end for its usage", async () => {
    const r = await router();
    const u = upstream();
    await addKey(r, { provider: u.url });
    u.route("POST", "/v1/chat/completions", () => sse([chunk("a"), chunk("b"), chunk(null, USAGE)], { firstDelayMs: 300, delayMs: 10, done: true }));
    const client = new AbortController();
    const call = post(r, "/v1/chat/completions", { model: "acme-chat", stream: true, messages: [{ role: "user", content: "hi" }] }, { signal: client.signal }).catch((e: Error) => e);
    await waitFor(() => u.requests.length === 1 || undefined);
    client.abort();
    await call;
    const row = await waitFor(async () => (await usageRows(r))[0], 5000, "the stream's row");
    expect(row).toMatchObject({ status: 499, stream: 1, prompt_tokens: 30, completion_tokens: 30, cost_nanos: COST, source: "upstream" });
  });
});

describe("estimates never exceed what could have happened", () => {
  test("a stream without usage: completion counts the delivered content, not the SSE framing", async () => {
    const r = await router();
    const u = upstream();
    await addKey(r, { provider: u.url });
    // 40 chunks of 8 content bytes: 320 bytes of content (80 tokens at four bytes each), about 6 KB of framing.
    u.route("POST", "/v1/chat/completions", () => sse(Array.from({ length: 40 }, () => chunk("abcdefgh")), { done: true }));
    const res = await post(r, "/v1/chat/completions", { model: "acme-chat", stream: true, max_tokens: 1000, messages: [{ role: "user", content: "hi" }] });
    await res.text();
    const row = await waitFor(async () => (await usageRows(r))[0]);
    expect(row).toMatchObject({ status: 200, source: "estimated", completion_tokens: 80 });
  });

  test("capped at max_tokens and at the call's reservation", async () => {
    const r = await router();
    const u = upstream();
    await addKey(r, { provider: u.url });
    u.route("POST", "/v1/chat/completions", () => sse(Array.from({ length: 40 }, () => chunk("abcdefgh")), { done: true }));
    const body = { model: "acme-chat", stream: true, max_tokens: 5, messages: [{ role: "user", content: "hi" }] };
    const res = await post(r, "/v1/chat/completions", body);
    await res.text();
    const row = (await waitFor(async () => (await usageRows(r))[0]))!;
    expect(row).toMatchObject({ source: "estimated", completion_tokens: 5 });
    // The reservation: the body's bytes + 1024 in at 2, 5 out at 8.
    const reserved = ((JSON.stringify(body).length + 1024) * 2 + 5 * 8) * 1000;
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);
    expect(row.cost_nanos).toBe((row.prompt_tokens * 2 + 5 * 8) * 1000);
  });

  test("a JSON answer without usage: the content of its message, not its JSON", async () => {
    const r = await router();
    const u = upstream();
    await addKey(r, { provider: u.url });
    const content = "x".repeat(400);
    u.route("POST", "/v1/chat/completions", () => json({ id: "c", object: "chat.completion", created: 1, model: "acme-chat", system_fingerprint: "fp_".padEnd(400, "0"), choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }] }));
    expect((await post(r, "/v1/chat/completions", { model: "acme-chat", messages: [{ role: "user", content: "hi" }] })).status).toBe(200);
    expect((await waitFor(async () => (await usageRows(r))[0]))!).toMatchObject({ source: "estimated", completion_tokens: 100 });
  });
});

describe("a Level with one key survives a transient fault", () => {
  /** A port nobody listens on yet. */
  async function freePort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    const port = (server.address() as { port: number }).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }

  test("a refused connection is retried on the same key after a short wait; the upstream that came up answers", async () => {
    const r = await router();
    const port = await freePort();
    const { id } = await addKey(r, { provider: `https://127.0.0.1:${port}` });
    const certs = testCertificates();
    let server: Server<unknown> | undefined;
    scope.later(() => server?.stop(true));
    const call = post(r, "/v1/chat/completions", { model: "acme-chat", messages: [{ role: "user", content: "hi" }] });
    // The first attempt was refused: bring the upstream up before the retry.
    await waitFor(() => r.deps.pool.get(id)!.failures === 1 || undefined, 5000, "the refused attempt");
    server = Bun.serve({ hostname: "127.0.0.1", port, tls: { cert: certs.certPem, key: certs.keyPem }, fetch: () => Response.json(completion("after the restart")) });
    const res = await call;
    expect(res.status).toBe(200);
    expect((await res.json()).choices[0].message.content).toBe("after the restart");
    expect(r.deps.pool.get(id)!.failures).toBe(0);
  });

  test("a connection reset after the request was sent: chat is retried on the same key, image generation never", async () => {
    const r = await router();
    const dropping = await startDroppingUpstream();
    scope.later(() => dropping.stop());
    // NoSleep: the three failures of the chat call must not put the key to sleep before the image call.
    await addKey(r, { provider: dropping.url, noSleep: true });
    const chat = await post(r, "/v1/chat/completions", { model: "acme-chat", messages: [{ role: "user", content: "hi" }] });
    expect(chat.status).toBe(502);
    // Three attempts (--max-attempts), all on the one key.
    expect(dropping.received).toHaveLength(3);
    const image = await post(r, "/v1/images/generations", { model: "acme-img", prompt: "a cat" });
    expect(image.status).toBe(502);
    expect(dropping.received).toHaveLength(4);
  });
});

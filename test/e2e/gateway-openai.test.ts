import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { openaiClient } from "../helpers/sdk.ts";

let router: TestRouter;
let upstream: MockUpstream;
let secret: string;

const completion = (model: string, content = "Hello!") => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model,
  choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
  usage: {
    prompt_tokens: 12,
    completion_tokens: 30,
    total_tokens: 42,
    prompt_tokens_details: { cached_tokens: 4 },
    completion_tokens_details: { reasoning_tokens: 10 },
  },
});

const chunk = (content: string | null, extra: Record<string, unknown> = {}) => ({
  id: "chatcmpl-2",
  object: "chat.completion.chunk",
  created: 1,
  model: "gpt-4o-mini",
  choices: content === null ? [] : [{ index: 0, delta: { content }, finish_reason: null }],
  ...extra,
});

beforeAll(async () => {
  upstream = startMockUpstream();
  router = await startRouter();
  secret = (await addKey(router, { provider: `${upstream.url}/v1` })).secret;
});
afterAll(async () => {
  await router.stop();
  await upstream.stop();
});
beforeEach(() => upstream.reset());

describe("OpenAI family through the official SDK", () => {
  test("a non-streaming chat completion passes through with the upstream credential and is metered", async () => {
    upstream.route("POST", "/v1/chat/completions", (req) => json(completion(req.json.model)));
    const client = openaiClient(router.url, router.ownerKey);
    const result = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
    expect(result.choices[0]!.message.content).toBe("Hello!");
    expect(result.usage?.total_tokens).toBe(42);

    const seen = upstream.requests[0]!;
    expect(seen.headers.get("authorization")).toBe(`Bearer ${secret}`);
    expect(seen.body).toContain('"model":"gpt-4o-mini"');
    expect(seen.headers.get("x-api-key")).toBeNull();

    const row = (await usageRows(router)).at(-1)!;
    expect(row).toMatchObject({
      account_id: 1,
      endpoint: "/v1/chat/completions",
      requested_model: "gpt-4o-mini",
      effective_model: "gpt-4o-mini",
      status: 200,
      prompt_tokens: 12,
      completion_tokens: 30,
      cache_read_tokens: 4,
      reasoning_tokens: 10,
      source: "upstream",
    });
  });

  test("a stream arrives chunk by chunk; the usage chunk the router asked for is hidden and metered", async () => {
    upstream.route("POST", "/v1/chat/completions", (req) => {
      expect(req.json.stream_options).toEqual({ include_usage: true });
      return sse(
        [chunk("Hel"), chunk("lo"), chunk(null, { usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } })],
        { done: true, delayMs: 5 },
      );
    });
    const client = openaiClient(router.url, router.ownerKey);
    const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], stream: true });
    const parts: string[] = [];
    let sawUsage = false;
    for await (const part of stream) {
      if (part.usage) sawUsage = true;
      parts.push(part.choices[0]?.delta?.content ?? "");
    }
    expect(parts.join("")).toBe("Hello");
    expect(sawUsage).toBe(false);
    const row = await waitFor(async () => (await usageRows(router)).find((r) => r.stream === 1 && r.prompt_tokens === 7));
    expect(row).toMatchObject({ completion_tokens: 2, source: "upstream", status: 200 });
  });

  test("a client that asked for usage gets the usage chunk", async () => {
    upstream.route("POST", "/v1/chat/completions", () =>
      sse([chunk("Hi"), chunk(null, { usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } })], { done: true }),
    );
    const client = openaiClient(router.url, router.ownerKey);
    const stream = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: unknown;
    for await (const part of stream) if (part.usage) usage = part.usage;
    expect(usage).toEqual({ prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 });
  });

  test("unknown fields and explicit zeros pass through untouched", async () => {
    upstream.route("POST", "/v1/chat/completions", (req) => json(completion(req.json.model)));
    const res = await router.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"model":"gpt-4o-mini","messages":[],"temperature":0,"vendor_extension":{"x":[1,2]}}',
    });
    expect(res.status).toBe(200);
    expect(upstream.requests[0]!.body).toBe('{"model":"gpt-4o-mini","messages":[],"temperature":0,"vendor_extension":{"x":[1,2]}}');
  });

  test("the upstream's client errors pass through; its headers do not", async () => {
    upstream.route("POST", "/v1/chat/completions", () =>
      json({ error: { message: "bad messages", type: "invalid_request_error", code: null } }, 400, { "set-cookie": "a=b", "x-ratelimit-remaining-requests": "5" }),
    );
    const res = await router.fetch("/v1/chat/completions", { method: "POST", body: '{"model":"gpt-4o-mini","messages":"x"}' });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toBe("bad messages");
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(res.headers.get("x-ratelimit-remaining-requests")).toBeNull();
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
  });

  test("a missing model is 400 naming the field; invalid JSON is 400", async () => {
    const missing = await router.fetch("/v1/chat/completions", { method: "POST", body: '{"messages":[]}' });
    expect(missing.status).toBe(400);
    expect((await missing.json()).error.param).toBe("model");
    const broken = await router.fetch("/v1/chat/completions", { method: "POST", body: "{" });
    expect(broken.status).toBe(400);
    expect(upstream.requests).toHaveLength(0);
  });

  test("the aliases without /v1 reach the same endpoints", async () => {
    upstream.route("POST", "/v1/chat/completions", (req) => json(completion(req.json.model)));
    upstream.route("POST", "/v1/embeddings", () => json({ object: "list", data: [{ embedding: [0.1], index: 0 }], usage: { prompt_tokens: 5, total_tokens: 5 } }));
    const chat = await router.fetch("/chat/completions", { method: "POST", body: '{"model":"gpt-4o-mini","messages":[]}' });
    expect(chat.status).toBe(200);
    const emb = await router.fetch("/embeddings", { method: "POST", body: '{"model":"text-embedding-3-small","input":"x"}' });
    expect(emb.status).toBe(200);
    expect(upstream.requests.map((r) => r.path)).toEqual(["/v1/chat/completions", "/v1/embeddings"]);
  });
});

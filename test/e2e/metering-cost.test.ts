import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, geminiClient, openaiClient } from "../helpers/sdk.ts";

/**
 * Issue 5, pricing: the exact credit charged for known token counts, through the
 * official SDKs, for each family, streaming and not. Cost = each token kind × its
 * price × Rates; reasoning is output unless ReasonText is set, cache reads are input
 * unless CachedText is set, and no token is counted twice.
 */

const PRICING = {
  ChatPricing: {
    // USD per 1M tokens
    "acme-*": { InputText: 2, OutputText: 8, CachedText: 0.5, CacheWrite: 2.5, ReasonText: 12 },
    // No CachedText, CacheWrite or ReasonText: cache tokens are input, reasoning is output.
    "plain-*": { InputText: 2, OutputText: 8 },
  },
};
const RATES = 1.5;
/** nano-credits for a sum of tokens × USD-per-1M prices, at the account's Rates. */
const nanos = (usdPer1mTokens: number) => Math.round(usdPer1mTokens * 1000 * RATES);

let router: TestRouter;
let upstream: MockUpstream;
let account: { id: number; key: string };

async function api(path: string, init: { method?: string; body?: unknown; key?: string | null } = {}) {
  const res = await router.fetch(path, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    key: init.key,
    headers: { "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** The account's balance in credits, as it sees it. */
async function balance(key: string): Promise<number> {
  const res = await api("/dashboard/status", { key });
  expect(res.status).toBe(200);
  return res.body.balance;
}

/**
 * Runs one call and returns its usage row and how far the balance dropped (nano-credits).
 * The row is awaited: a stream is recorded when it ends, just after the client saw it.
 */
async function charged(run: () => Promise<unknown>): Promise<{ row: Record<string, any>; drop: number }> {
  const before = await balance(account.key);
  const seen = (await usageRows(router)).filter((r) => r.account_id === account.id).length;
  await run();
  const row = await waitFor(async () => (await usageRows(router)).filter((r) => r.account_id === account.id)[seen], 5000, "usage row");
  await usageRows(router);
  const after = await balance(account.key);
  return { row: row!, drop: Math.round((before - after) * 1e9) };
}

// ---- OpenAI: prompt_tokens includes cached_tokens; completion_tokens includes reasoning_tokens.
const openaiUsage = {
  prompt_tokens: 1000,
  completion_tokens: 500,
  total_tokens: 1500,
  prompt_tokens_details: { cached_tokens: 200 },
  completion_tokens_details: { reasoning_tokens: 100 },
};
const chatCompletion = (model: string) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model,
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: openaiUsage,
});
const chatChunk = (model: string, content: string | null, extra: Record<string, unknown> = {}) => ({
  id: "chatcmpl-2",
  object: "chat.completion.chunk",
  created: 1,
  model,
  choices: content === null ? [] : [{ index: 0, delta: { content }, finish_reason: null }],
  ...extra,
});

// ---- Anthropic: input_tokens excludes cache reads and writes; message_delta output is cumulative.
const anthropicUsage = { input_tokens: 300, output_tokens: 400, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200 };
const anthropicMessage = (model: string) => ({
  id: "msg_1",
  type: "message",
  role: "assistant",
  model,
  content: [{ type: "text", text: "ok" }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: anthropicUsage,
});
const anthropicStream = (model: string) =>
  [
    ["message_start", { type: "message_start", message: { ...anthropicMessage(model), content: [], usage: { ...anthropicUsage, output_tokens: 1 } } }],
    ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ok" } }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", { type: "message_delta", delta: { stop_reason: null, stop_sequence: null }, usage: { output_tokens: 150 } }],
    ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 400 } }],
    ["message_stop", { type: "message_stop" }],
  ] as Array<[string, unknown]>;

// ---- Gemini: promptTokenCount includes cached content; thoughts are output outside candidatesTokenCount.
const geminiUsage = { promptTokenCount: 1000, cachedContentTokenCount: 400, candidatesTokenCount: 300, thoughtsTokenCount: 200, totalTokenCount: 1900 };
const geminiAnswer = (text: string, usage: Record<string, number>) => ({
  candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }],
  usageMetadata: usage,
  modelVersion: "acme-gem",
});

beforeAll(async () => {
  upstream = startMockUpstream();
  router = await startRouter();
  await addKey(router, { provider: upstream.url });
  expect((await api("/x-config", { method: "PUT", body: { PRICING } })).status).toBe(200);
  const created = await api("/x-users", { body: { Email: "cost@example.com", CreditGranted: 100, Rates: RATES } });
  expect(created.status).toBe(201);
  account = { id: created.body.ID, key: created.body.APIKey };
});
afterAll(async () => {
  await router.stop();
  await upstream.stop();
});
beforeEach(() => {
  upstream.reset();
  upstream.route("POST", "/v1/chat/completions", (req) =>
    req.json.stream
      ? sse(
          [
            chatChunk(req.json.model, "o"),
            chatChunk(req.json.model, "k"),
            chatChunk(req.json.model, null, { usage: req.json.stream_options?.include_usage ? openaiUsage : null }),
          ],
          { done: true, delayMs: 2 },
        )
      : json(chatCompletion(req.json.model)),
  );
  upstream.route("POST", "/v1/messages", (req) => (req.json.stream ? sse(anthropicStream(req.json.model), { delayMs: 2 }) : json(anthropicMessage(req.json.model))));
  upstream.route("POST", /:generateContent$/, () => json(geminiAnswer("ok", geminiUsage)));
  upstream.route("POST", /:streamGenerateContent$/, () =>
    sse(
      [
        geminiAnswer("o", { promptTokenCount: 1000, candidatesTokenCount: 100, totalTokenCount: 1100 }),
        geminiAnswer("k", geminiUsage),
      ],
      { delayMs: 2 },
    ),
  );
});

describe("OpenAI family (openai SDK)", () => {
  // 800 uncached × 2 + 200 cached × 0.5 + 400 visible × 8 + 100 reasoning × 12
  const expected = nanos(800 * 2 + 200 * 0.5 + 400 * 8 + 100 * 12);

  test("non-streaming: cached and reasoning tokens at their own prices", async () => {
    expect(expected).toBe(9_150_000);
    const client = openaiClient(router.url, account.key);
    const { row, drop } = await charged(() => client.chat.completions.create({ model: "acme-chat", messages: [{ role: "user", content: "hi" }] }));
    expect(row).toMatchObject({ status: 200, stream: 0, prompt_tokens: 1000, cache_read_tokens: 200, completion_tokens: 500, reasoning_tokens: 100 });
    expect(row.cost_nanos).toBe(expected);
    expect(drop).toBe(expected);
  });

  test("streaming: the usage chunk is metered (and hidden) and charged the same", async () => {
    const client = openaiClient(router.url, account.key);
    const { row, drop } = await charged(async () => {
      const stream = await client.chat.completions.create({ model: "acme-chat", messages: [{ role: "user", content: "hi" }], stream: true });
      let text = "";
      for await (const part of stream) {
        expect(part.usage ?? undefined).toBeUndefined();
        text += part.choices[0]?.delta?.content ?? "";
      }
      expect(text).toBe("ok");
    });
    expect(row).toMatchObject({ stream: 1, source: "upstream", prompt_tokens: 1000, completion_tokens: 500 });
    expect(row.cost_nanos).toBe(expected);
    expect(drop).toBe(expected);
  });

  test("without ReasonText reasoning is output; without CachedText cache reads are input", async () => {
    const client = openaiClient(router.url, account.key);
    const { row, drop } = await charged(() => client.chat.completions.create({ model: "plain-chat", messages: [{ role: "user", content: "hi" }] }));
    // 1000 input × 2 + 500 output × 8: every token once, none free.
    const plain = nanos(1000 * 2 + 500 * 8);
    expect(plain).toBe(9_000_000);
    expect(row.cost_nanos).toBe(plain);
    expect(drop).toBe(plain);
  });

  test("the Responses API: input_tokens_details and output_tokens_details priced the same way", async () => {
    upstream.route("POST", "/v1/responses", (req) =>
      json({
        id: "resp_1",
        object: "response",
        created_at: 1,
        status: "completed",
        model: req.json.model,
        output: [{ type: "message", id: "m1", status: "completed", role: "assistant", content: [{ type: "output_text", text: "ok", annotations: [] }] }],
        usage: { input_tokens: 1000, input_tokens_details: { cached_tokens: 200 }, output_tokens: 500, output_tokens_details: { reasoning_tokens: 100 }, total_tokens: 1500 },
      }),
    );
    const client = openaiClient(router.url, account.key);
    const { row, drop } = await charged(() => client.responses.create({ model: "acme-chat", input: "hi" }));
    expect(row.endpoint).toBe("/v1/responses");
    expect(row.cost_nanos).toBe(expected);
    expect(drop).toBe(expected);
  });
});

describe("Anthropic family (@anthropic-ai/sdk)", () => {
  // prompt = 300 + 1000 + 200 = 1500: 300 uncached × 2 + 1000 reads × 0.5 + 200 writes × 2.5 + 400 out × 8
  const expected = nanos(300 * 2 + 1000 * 0.5 + 200 * 2.5 + 400 * 8);

  test("non-streaming: cache reads at CachedText, cache writes at CacheWrite", async () => {
    expect(expected).toBe(7_200_000);
    const client = anthropicClient(router.url, account.key);
    const { row, drop } = await charged(() => client.messages.create({ model: "acme-claude", max_tokens: 1000, messages: [{ role: "user", content: "hi" }] }));
    expect(row).toMatchObject({ stream: 0, prompt_tokens: 1500, cache_read_tokens: 1000, cache_write_tokens: 200, completion_tokens: 400 });
    expect(row.cost_nanos).toBe(expected);
    expect(drop).toBe(expected);
  });

  test("streaming: message_delta usage is cumulative (the last counts, never the sum)", async () => {
    const client = anthropicClient(router.url, account.key);
    const { row, drop } = await charged(async () => {
      const final = await client.messages.stream({ model: "acme-claude", max_tokens: 1000, messages: [{ role: "user", content: "hi" }] }).finalMessage();
      expect(final.usage.output_tokens).toBe(400);
    });
    expect(row).toMatchObject({ stream: 1, prompt_tokens: 1500, completion_tokens: 400, source: "upstream" });
    expect(row.cost_nanos).toBe(expected);
    expect(drop).toBe(expected);
  });

  test("without CachedText and CacheWrite, cache tokens are input", async () => {
    const client = anthropicClient(router.url, account.key);
    const { row, drop } = await charged(() => client.messages.create({ model: "plain-claude", max_tokens: 1000, messages: [{ role: "user", content: "hi" }] }));
    const plain = nanos(1500 * 2 + 400 * 8);
    expect(row.cost_nanos).toBe(plain);
    expect(drop).toBe(plain);
  });
});

describe("Gemini family (@google/genai)", () => {
  // 600 uncached × 2 + 400 cached × 0.5 + 300 candidates × 8 + 200 thoughts × 12
  const expected = nanos(600 * 2 + 400 * 0.5 + 300 * 8 + 200 * 12);

  test("generateContent: cached content at CachedText, thoughts at ReasonText", async () => {
    expect(expected).toBe(9_300_000);
    const client = geminiClient(router.url, account.key);
    const { row, drop } = await charged(() => client.models.generateContent({ model: "acme-gem", contents: "hi" }));
    expect(row).toMatchObject({ stream: 0, prompt_tokens: 1000, cache_read_tokens: 400, completion_tokens: 500, reasoning_tokens: 200 });
    expect(row.cost_nanos).toBe(expected);
    expect(drop).toBe(expected);
  });

  test("streamGenerateContent: cumulative usageMetadata, the last one counts", async () => {
    const client = geminiClient(router.url, account.key);
    const { row, drop } = await charged(async () => {
      let text = "";
      for await (const chunk of await client.models.generateContentStream({ model: "acme-gem", contents: "hi" })) text += chunk.text ?? "";
      expect(text).toBe("ok");
    });
    expect(row).toMatchObject({ stream: 1, prompt_tokens: 1000, completion_tokens: 500, reasoning_tokens: 200 });
    expect(row.cost_nanos).toBe(expected);
    expect(drop).toBe(expected);
  });

  test("without ReasonText thoughts are output; without CachedText cached content is input", async () => {
    const client = geminiClient(router.url, account.key);
    const { row, drop } = await charged(() => client.models.generateContent({ model: "plain-gem", contents: "hi" }));
    const plain = nanos(1000 * 2 + 500 * 8);
    expect(row.cost_nanos).toBe(plain);
    expect(drop).toBe(plain);
  });
});

test("calls that cost nothing upstream charge nothing: an upstream 400 is passed on, not billed", async () => {
  upstream.reset();
  upstream.route("POST", "/v1/chat/completions", () => json({ error: { message: "bad", type: "invalid_request_error" } }, 400));
  const { row, drop } = await charged(async () => {
    const res = await api("/v1/chat/completions", { key: account.key, body: { model: "acme-chat", messages: [] } });
    expect(res.status).toBe(400);
  });
  expect(row.status).toBe(400);
  expect(row.cost_nanos).toBe(0);
  expect(drop).toBe(0);
});

import { describe, expect, test } from "bun:test";
import { heldCredit, usageRows } from "../helpers/keys.ts";
import { json, sse, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";
import { anthropicClient, geminiClient, openaiClient } from "../helpers/sdk.ts";

/**
 * What the three native providers' own usage fields are charged (docs/api.md, "Cost of
 * a call", "Reservation"): each field read, priced on its own line, never twice, and a
 * call's charge within what it reserved. The clients are the official SDKs; the
 * upstreams are mocks answering in the providers' documented shapes.
 */

const scope = perTest();

/** A router with the shipped catalog's prices, one key on a mock upstream. */
async function catalogGateway(): Promise<{ router: TestRouter; upstream: MockUpstream }> {
  return scope.gateway({ pricing: false });
}

/** The account's one usage row, once written. */
async function onlyRow(router: TestRouter, accountId: number): Promise<Record<string, any>> {
  const rows = await waitFor(async () => {
    const mine = (await usageRows(router)).filter((r) => r.account_id === accountId);
    return mine.length === 1 ? mine : undefined;
  });
  return rows![0]!;
}

/** Nano-credits of `tokens` at `usdPer1M`. */
const nanos = (tokens: number, usdPer1M: number) => Math.round(tokens * usdPer1M * 1000);

/**
 * Runs `call` while the upstream holds its answer, and returns what the account had
 * reserved meanwhile (nano-credits) with the call's result.
 */
async function reservedDuring<T>(router: TestRouter, accountId: number, gate: { release: () => void; arrived: Promise<void> }, call: () => Promise<T>): Promise<{ reserved: number; result: T }> {
  const pending = call();
  await gate.arrived;
  const reserved = await heldCredit(router, accountId);
  gate.release();
  return { reserved, result: await pending };
}

/** A gate the upstream waits at: `arrived` once the request reached it, the answer once `release` is called. */
function gate() {
  let release!: () => void;
  let arrive!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const arrived = new Promise<void>((resolve) => (arrive = resolve));
  return { release, arrived, wait: async () => (arrive(), await released) };
}

describe("Anthropic: cache writes kept an hour", () => {
  // claude-haiku-4-5 in the catalog: input 1, output 5, 5-minute write 1.25 (1.25x); an hour's write is 2x input = 2.
  const MODEL = "claude-haiku-4-5";

  test("a 1-hour cache write (cache_creation.ephemeral_1h_input_tokens) is charged at twice the input price, not the 5-minute 1.25x, and within the reservation", async () => {
    const { router, upstream } = await catalogGateway();
    const hold = gate();
    upstream.route("POST", "/v1/messages", async () => {
      await hold.wait();
      return json({
        id: "msg_1", type: "message", role: "assistant", model: MODEL, content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null,
        usage: { input_tokens: 20, cache_creation_input_tokens: 1000, cache_read_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 200, ephemeral_1h_input_tokens: 800 }, output_tokens: 10, service_tier: "standard" },
      });
    });
    const account = await createAccount(router, { CreditGranted: 5 });
    const client = anthropicClient(router.url, account.key);
    const { reserved, result } = await reservedDuring(router, account.id, hold, () =>
      client.messages.create({ model: MODEL, max_tokens: 10, system: [{ type: "text", text: "A long system prompt.", cache_control: { type: "ephemeral", ttl: "1h" } }], messages: [{ role: "user", content: "hi" }] }),
    );
    expect(result.usage.cache_creation?.ephemeral_1h_input_tokens).toBe(800);
    const row = await onlyRow(router, account.id);
    expect(row.prompt_tokens).toBe(1020);
    expect(row.cache_write_tokens).toBe(1000);
    const expected = nanos(20, 1) + nanos(200, 1.25) + nanos(800, 2) + nanos(10, 5);
    expect(row.cost_nanos).toBe(expected);
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);
  });

  test("streamed: the 1-hour breakdown comes in message_start only, the cumulative counts in message_delta; the hour's writes are still charged 2x", async () => {
    const { router, upstream } = await catalogGateway();
    upstream.route("POST", "/v1/messages", () =>
      sse([
        ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: MODEL, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 20, cache_creation_input_tokens: 1000, cache_read_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 1000 }, output_tokens: 1 } } }],
        ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
        ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ok" } }],
        ["content_block_stop", { type: "content_block_stop", index: 0 }],
        ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { input_tokens: 20, cache_creation_input_tokens: 1000, cache_read_input_tokens: 0, output_tokens: 10 } }],
        ["message_stop", { type: "message_stop" }],
      ]),
    );
    const account = await createAccount(router, { CreditGranted: 5 });
    const stream = anthropicClient(router.url, account.key).messages.stream({ model: MODEL, max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    const final = await stream.finalMessage();
    expect(final.usage.output_tokens).toBe(10);
    const row = await onlyRow(router, account.id);
    expect(row.cache_write_tokens).toBe(1000);
    expect(row.cost_nanos).toBe(nanos(20, 1) + nanos(1000, 2) + nanos(10, 5));
  });
});

describe("Anthropic: an owner prices the hour's cache write", () => {
  test("PRICING accepts CacheWrite1h (checked like every price) and a model it prices is charged it; one without it is charged CacheWrite", async () => {
    const { router, upstream } = await scope.gateway({ pricing: false });
    const refused = await api(router, "/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "acme-*": { InputText: 2, CacheWrite1h: -1 } } } } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.param).toBe("PRICING");
    expect(refused.body.error.message).toContain('ChatPricing["acme-*"].CacheWrite1h');
    const put = await api(router, "/x-config", {
      method: "PUT",
      body: { PRICING: { ChatPricing: { "acme-hour": { InputText: 2, OutputText: 8, CacheWrite: 2.5, CacheWrite1h: 4 }, "acme-plain": { InputText: 2, OutputText: 8, CacheWrite: 2.5 } } } },
    });
    expect(put.status).toBe(200);
    upstream.route("POST", "/v1/messages", (req) =>
      json({
        id: "msg_1", type: "message", role: "assistant", model: (req.json as { model: string }).model, content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null,
        usage: { input_tokens: 0, cache_creation_input_tokens: 500, cache_read_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 500 }, output_tokens: 0 },
      }),
    );
    for (const [model, price] of [["acme-hour", 4], ["acme-plain", 2.5]] as const) {
      const account = await createAccount(router, { CreditGranted: 5 });
      await anthropicClient(router.url, account.key).messages.create({ model, max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
      expect((await onlyRow(router, account.id)).cost_nanos).toBe(nanos(500, price));
    }
  });
});

/** A Gemini answer of `text` with `usageMetadata`. */
const geminiAnswer = (text: string, usageMetadata: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0, ...extra }],
  usageMetadata,
  modelVersion: "gemini-2.5-flash",
});

describe("Gemini: cached content by modality", () => {
  // gemini-2.5-flash in the catalog: text input 0.3, cached 0.03, audio input 1, output 2.5.
  test("cached audio (cacheTokensDetails AUDIO, also inside promptTokensDetails AUDIO) is charged once, at the cached price, and the uncached text is not free", async () => {
    const { router, upstream } = await catalogGateway();
    upstream.route("POST", /\/models\/gemini-2\.5-flash:generateContent$/, () =>
      json(
        geminiAnswer("ok", {
          promptTokenCount: 1000,
          cachedContentTokenCount: 600,
          candidatesTokenCount: 10,
          totalTokenCount: 1010,
          promptTokensDetails: [{ modality: "TEXT", tokenCount: 400 }, { modality: "AUDIO", tokenCount: 600 }],
          cacheTokensDetails: [{ modality: "AUDIO", tokenCount: 600 }],
          candidatesTokensDetails: [{ modality: "TEXT", tokenCount: 10 }],
        }),
      ),
    );
    const account = await createAccount(router, { CreditGranted: 5 });
    const result = await geminiClient(router.url, account.key).models.generateContent({ model: "gemini-2.5-flash", contents: "summarise the recording" });
    expect(result.usageMetadata?.cachedContentTokenCount).toBe(600);
    const row = await onlyRow(router, account.id);
    expect(row).toMatchObject({ prompt_tokens: 1000, cache_read_tokens: 600, completion_tokens: 10 });
    expect(row.cost_nanos).toBe(nanos(400, 0.3) + nanos(600, 0.03) + nanos(10, 2.5));
  });

  test("uncached audio beside cached text: the audio is charged at the audio price, the cached text at the cached price", async () => {
    const { router, upstream } = await catalogGateway();
    upstream.route("POST", /\/models\/gemini-2\.5-flash:generateContent$/, () =>
      json(
        geminiAnswer("ok", {
          promptTokenCount: 1000,
          cachedContentTokenCount: 600,
          candidatesTokenCount: 10,
          totalTokenCount: 1010,
          promptTokensDetails: [{ modality: "TEXT", tokenCount: 600 }, { modality: "AUDIO", tokenCount: 400 }],
          cacheTokensDetails: [{ modality: "TEXT", tokenCount: 600 }],
        }),
      ),
    );
    const account = await createAccount(router, { CreditGranted: 5 });
    await geminiClient(router.url, account.key).models.generateContent({ model: "gemini-2.5-flash", contents: "hi" });
    expect((await onlyRow(router, account.id)).cost_nanos).toBe(nanos(400, 1) + nanos(600, 0.03) + nanos(10, 2.5));
  });
});

/** An Anthropic message answering with `usage`. */
const anthropicMessage = (model: string, usage: Record<string, unknown>) =>
  json({ id: "msg_1", type: "message", role: "assistant", model, content: [{ type: "text", text: "found it" }], stop_reason: "end_turn", stop_sequence: null, usage });

describe("web searches are billed per search", () => {
  // Anthropic and OpenAI bill $10 per 1,000 web searches on top of the tokens.
  const SEARCH = 0.01e9; // nano-credits per search

  test("Anthropic: usage.server_tool_use.web_search_requests is charged per search, and a call that uses all it may stays within its reservation", async () => {
    const { router, upstream } = await catalogGateway();
    const hold = gate();
    // The most this call can use: its whole context window written to an hour's cache, its max_tokens, its max_uses searches.
    upstream.route("POST", "/v1/messages", async () => {
      await hold.wait();
      return anthropicMessage("claude-haiku-4-5", {
        input_tokens: 10, cache_creation_input_tokens: 199_990, cache_read_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 199_990 },
        output_tokens: 100, server_tool_use: { web_search_requests: 3, web_fetch_requests: 1 },
      });
    });
    const account = await createAccount(router, { CreditGranted: 5 });
    const client = anthropicClient(router.url, account.key);
    const { reserved, result } = await reservedDuring(router, account.id, hold, () =>
      client.messages.create({ model: "claude-haiku-4-5", max_tokens: 100, tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 3 }], messages: [{ role: "user", content: "news?" }] }),
    );
    expect(result.usage.server_tool_use?.web_search_requests).toBe(3);
    const row = await onlyRow(router, account.id);
    // Web fetches cost only their tokens (Anthropic bills no fee for them).
    expect(row.cost_nanos).toBe(nanos(10, 1) + nanos(199_990, 2) + nanos(100, 5) + 3 * SEARCH);
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);
  });

  test("Anthropic stream: the searches counted in message_delta (cumulative) are charged once", async () => {
    const { router, upstream } = await catalogGateway();
    upstream.route("POST", "/v1/messages", () =>
      sse([
        ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "claude-haiku-4-5", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 50, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1, server_tool_use: { web_search_requests: 0 } } } }],
        ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
        ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "found" } }],
        ["content_block_stop", { type: "content_block_stop", index: 0 }],
        ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { input_tokens: 50, output_tokens: 20, server_tool_use: { web_search_requests: 2, web_fetch_requests: 0 } } }],
        ["message_stop", { type: "message_stop" }],
      ]),
    );
    const account = await createAccount(router, { CreditGranted: 5 });
    const final = await anthropicClient(router.url, account.key)
      .messages.stream({ model: "claude-haiku-4-5", max_tokens: 100, tools: [{ type: "web_search_20250305", name: "web_search" }], messages: [{ role: "user", content: "news?" }] })
      .finalMessage();
    expect(final.usage.server_tool_use?.web_search_requests).toBe(2);
    expect((await onlyRow(router, account.id)).cost_nanos).toBe(nanos(50, 1) + nanos(20, 5) + 2 * SEARCH);
  });

  const webSearchCall = (i: number) => ({ type: "web_search_call", id: `ws_${i}`, status: "completed", action: { type: "search", query: `q${i}` } });
  const responsesUsage = { input_tokens: 100, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 120 };
  const message = { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "found it", annotations: [] }] };

  test("OpenAI Responses: each web_search_call in the output is charged per call (gpt-5: $10 per 1,000)", async () => {
    const { router, upstream } = await catalogGateway();
    upstream.route("POST", "/v1/responses", () =>
      json({ id: "resp_1", object: "response", created_at: 1, status: "completed", model: "gpt-5", output: [webSearchCall(1), webSearchCall(2), message], usage: responsesUsage, error: null, incomplete_details: null }),
    );
    const account = await createAccount(router, { CreditGranted: 5 });
    const response = await openaiClient(router.url, account.key).responses.create({ model: "gpt-5", input: "news?", tools: [{ type: "web_search" }] });
    expect(response.output_text).toBe("found it");
    expect((await onlyRow(router, account.id)).cost_nanos).toBe(nanos(100, 1.25) + nanos(20, 10) + 2 * SEARCH);
  });

  test("OpenAI Responses stream: the web_search_call items of response.completed are charged", async () => {
    const { router, upstream } = await catalogGateway();
    const done = { id: "resp_1", object: "response", created_at: 1, status: "completed", model: "gpt-5", output: [webSearchCall(1), message], usage: responsesUsage, error: null, incomplete_details: null };
    upstream.route("POST", "/v1/responses", () =>
      sse([
        ["response.created", { type: "response.created", sequence_number: 0, response: { ...done, status: "in_progress", output: [], usage: null } }],
        ["response.output_item.done", { type: "response.output_item.done", sequence_number: 1, output_index: 0, item: webSearchCall(1) }],
        ["response.output_text.delta", { type: "response.output_text.delta", sequence_number: 2, output_index: 1, item_id: "msg_1", content_index: 0, delta: "found it" }],
        ["response.completed", { type: "response.completed", sequence_number: 3, response: done }],
      ]),
    );
    const account = await createAccount(router, { CreditGranted: 5 });
    const stream = await openaiClient(router.url, account.key).responses.create({ model: "gpt-5", input: "news?", tools: [{ type: "web_search" }], stream: true });
    for await (const _ of stream) void _;
    expect((await onlyRow(router, account.id)).cost_nanos).toBe(nanos(100, 1.25) + nanos(20, 10) + SEARCH);
  });

  test("PRICING names WebSearch per model (checked like every price); a model it prices at 0 charges no searches", async () => {
    const { router, upstream } = await scope.gateway({ pricing: false });
    const refused = await api(router, "/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "claude-*": { WebSearch: "cheap" } } } } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('ChatPricing["claude-*"].WebSearch');
    expect((await api(router, "/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "acme-*": { InputText: 1, OutputText: 5, WebSearch: 0.025 }, "acme-free": { InputText: 1, OutputText: 5, WebSearch: 0 } } } } })).status).toBe(200);
    upstream.route("POST", "/v1/messages", (req) => anthropicMessage((req.json as { model: string }).model, { input_tokens: 0, output_tokens: 0, server_tool_use: { web_search_requests: 4 } }));
    for (const [model, each] of [["acme-search", 0.025e9], ["acme-free", 0]] as const) {
      const account = await createAccount(router, { CreditGranted: 5 });
      await anthropicClient(router.url, account.key).messages.create({ model, max_tokens: 10, tools: [{ type: "web_search_20250305", name: "web_search" }], messages: [{ role: "user", content: "news?" }] });
      expect((await onlyRow(router, account.id)).cost_nanos).toBe(4 * each);
    }
  });
});

describe("web searches: the reservation bounds them", () => {
  test("an Anthropic web search tool without max_uses reserves 20 searches, and a Responses call's max_tool_calls bounds its searches", async () => {
    const { router, upstream } = await scope.gateway({ pricing: { ChatPricing: { "acme-*": { InputText: 1, OutputText: 1, WebSearch: 1, ContextWindow: 1000, MaxOutput: 10 } } } });
    const hold = gate();
    upstream.route("POST", "/v1/messages", async () => (await hold.wait(), anthropicMessage("acme-claude", { input_tokens: 0, output_tokens: 0, server_tool_use: { web_search_requests: 20 } })));
    const account = await createAccount(router, { CreditGranted: 100 });
    const { reserved } = await reservedDuring(router, account.id, hold, () =>
      anthropicClient(router.url, account.key).messages.create({ model: "acme-claude", max_tokens: 10, tools: [{ type: "web_search_20250305", name: "web_search" }], messages: [{ role: "user", content: "news?" }] }),
    );
    const row = await onlyRow(router, account.id);
    expect(row.cost_nanos).toBe(20e9);
    // 1000 input + 10 output tokens at $1 per 1M, and 20 searches at $1.
    expect(reserved).toBe(nanos(1010, 1) + 20e9);

    const second = gate();
    upstream.route("POST", "/v1/responses", async () => {
      await second.wait();
      return json({ id: "resp_1", object: "response", created_at: 1, status: "completed", model: "acme-gpt", output: [{ type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "q" } }], usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 }, error: null, incomplete_details: null });
    });
    const other = await createAccount(router, { CreditGranted: 100 });
    // max_tool_calls is a Responses parameter the installed SDK's create() type does not list yet: passed as a variable.
    const params = { model: "acme-gpt", input: "news?", max_output_tokens: 10, max_tool_calls: 2, tools: [{ type: "web_search" as const }] };
    const held = await reservedDuring(router, other.id, second, () => openaiClient(router.url, other.key).responses.create(params));
    expect(held.reserved).toBe(nanos(1010, 1) + 2e9);
    expect((await onlyRow(router, other.id)).cost_nanos).toBe(1e9);
  });
});

describe("Gemini: grounding with Google Search", () => {
  const grounded = (queries: string[]) => ({ groundingMetadata: { webSearchQueries: queries, groundingChunks: [{ web: { uri: "https://example.com", title: "example.com" } }] } });
  const usage = { promptTokenCount: 100, candidatesTokenCount: 20, toolUsePromptTokenCount: 50, totalTokenCount: 170 };

  test("gemini-2.5-flash bills a grounded prompt once ($35 per 1,000), however many queries it ran, within its reservation", async () => {
    const { router, upstream } = await catalogGateway();
    const hold = gate();
    upstream.route("POST", /\/models\/gemini-2\.5-flash:generateContent$/, async () => {
      await hold.wait();
      return json(geminiAnswer("sunny", usage, grounded(["weather paris", "paris forecast"])));
    });
    const account = await createAccount(router, { CreditGranted: 5 });
    const { reserved } = await reservedDuring(router, account.id, hold, () =>
      geminiClient(router.url, account.key).models.generateContent({ model: "gemini-2.5-flash", contents: "weather in Paris?", config: { tools: [{ googleSearch: {} }] } }),
    );
    const row = await onlyRow(router, account.id);
    expect(row.prompt_tokens).toBe(150);
    expect(row.cost_nanos).toBe(nanos(150, 0.3) + nanos(20, 2.5) + 0.035e9);
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);
  });

  test("gemini-3-pro bills each search query ($14 per 1,000), streamed: queries repeated in later chunks are counted once", async () => {
    const { router, upstream } = await catalogGateway();
    upstream.route("POST", /\/models\/gemini-3-pro-preview:streamGenerateContent$/, () =>
      sse([
        geminiAnswer("sun", { promptTokenCount: 100, totalTokenCount: 100 }),
        geminiAnswer("ny", usage, grounded(["weather paris", "paris forecast"])),
        geminiAnswer("", usage, grounded(["weather paris", "paris forecast"])),
      ]),
    );
    const account = await createAccount(router, { CreditGranted: 5 });
    const parts: string[] = [];
    for await (const chunk of await geminiClient(router.url, account.key).models.generateContentStream({ model: "gemini-3-pro-preview", contents: "weather in Paris?", config: { tools: [{ googleSearch: {} }] } })) parts.push(chunk.text ?? "");
    expect(parts.join("")).toBe("sunny");
    expect((await onlyRow(router, account.id)).cost_nanos).toBe(nanos(150, 2) + nanos(20, 12) + 2 * 0.014e9);
  });
});

describe("Anthropic: fast mode (speed \"fast\")", () => {
  test("claude-opus-4-6 answered with usage.speed \"fast\" is charged six times its standard rates, within a reservation that counts the multiplier", async () => {
    const { router, upstream } = await catalogGateway();
    const hold = gate();
    upstream.route("POST", "/v1/messages", async () => {
      await hold.wait();
      return anthropicMessage("claude-opus-4-6", { input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 100, speed: "fast", service_tier: "standard" });
    });
    const account = await createAccount(router, { CreditGranted: 5 });
    // speed is a Messages parameter the installed SDK's create() type lists for beta calls only: passed as a variable.
    const params = { model: "claude-opus-4-6", max_tokens: 100, speed: "fast" as const, messages: [{ role: "user" as const, content: "refactor this" }] };
    const { reserved } = await reservedDuring(router, account.id, hold, () => anthropicClient(router.url, account.key).messages.create(params));
    const row = await onlyRow(router, account.id);
    // Opus 4.6: $5 / $25 per 1M at standard speed; fast mode is 6x.
    expect(row.cost_nanos).toBe(6 * (nanos(100, 5) + nanos(100, 25)));
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);
  });

  test("PRICING's FastMultiplier is a factor (0.01 to 100), not a price: Rates leaves it in GET /x-pricing, and a standard-speed answer ignores it", async () => {
    const { router, upstream } = await scope.gateway({ pricing: false });
    for (const bad of [0, 101, "6"]) {
      const refused = await api(router, "/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "acme-*": { InputText: 1, FastMultiplier: bad } } } } });
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toContain('ChatPricing["acme-*"].FastMultiplier');
    }
    expect((await api(router, "/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "acme-*": { InputText: 1, OutputText: 2, FastMultiplier: 3 } } } } })).status).toBe(200);
    const account = await createAccount(router, { CreditGranted: 5, Rates: 2 });
    const prices = await api(router, "/x-pricing", { key: account.key });
    expect(prices.body.ChatPricing["acme-*"]).toEqual({ InputText: 2, OutputText: 4, FastMultiplier: 3 });
    upstream.route("POST", "/v1/messages", () => anthropicMessage("acme-claude", { input_tokens: 1000, output_tokens: 1000, speed: "standard" }));
    await anthropicClient(router.url, account.key).messages.create({ model: "acme-claude", max_tokens: 1000, messages: [{ role: "user", content: "hi" }] });
    expect((await onlyRow(router, account.id)).cost_nanos).toBe(2 * (nanos(1000, 1) + nanos(1000, 2)));
  });
});

describe("OpenAI Responses: file searches", () => {
  test("each file_search_call of the output is charged per call (gpt-5: $2.50 per 1,000), beside the tokens", async () => {
    const { router, upstream } = await catalogGateway();
    const fileSearch = (i: number) => ({ type: "file_search_call", id: `fs_${i}`, status: "completed", queries: [`q${i}`], results: null });
    upstream.route("POST", "/v1/responses", () =>
      json({
        id: "resp_1", object: "response", created_at: 1, status: "completed", model: "gpt-5",
        output: [fileSearch(1), fileSearch(2), fileSearch(3), { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "in the manual", annotations: [] }] }],
        usage: { input_tokens: 100, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 120 }, error: null, incomplete_details: null,
      }),
    );
    const account = await createAccount(router, { CreditGranted: 5 });
    const response = await openaiClient(router.url, account.key).responses.create({ model: "gpt-5", input: "where?", tools: [{ type: "file_search", vector_store_ids: ["vs_1"] }] });
    expect(response.output_text).toBe("in the manual");
    expect((await onlyRow(router, account.id)).cost_nanos).toBe(nanos(100, 1.25) + nanos(20, 10) + 3 * 0.0025e9);
  });
});

describe("long-context prices: a prompt above 200K tokens", () => {
  // A body long enough to hold such a prompt: its reservation is sized by its bytes.
  const LONG = "word ".repeat(240_000);

  test("Claude Sonnet 4.5 charges 2x input and 1.5x output once the prompt (cache reads and writes included) passes 200K tokens, within the reservation; below it, standard rates", async () => {
    const { router, upstream } = await catalogGateway();
    let hold = gate();
    let prompt = 250_000;
    upstream.route("POST", "/v1/messages", async () => {
      await hold.wait();
      return anthropicMessage("claude-sonnet-4-5", { input_tokens: prompt - 10_000, cache_creation_input_tokens: 0, cache_read_input_tokens: 10_000, output_tokens: 1000 });
    });
    const account = await createAccount(router, { CreditGranted: 50 });
    const { reserved } = await reservedDuring(router, account.id, hold, () => anthropicClient(router.url, account.key).messages.create({ model: "claude-sonnet-4-5", max_tokens: 1000, messages: [{ role: "user", content: LONG }] }));
    const row = await onlyRow(router, account.id);
    // $6 / $0.60 cached / $22.50 per 1M above 200K (standard: $3 / $0.30 / $15).
    expect(row.cost_nanos).toBe(nanos(240_000, 6) + nanos(10_000, 0.6) + nanos(1000, 22.5));
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);

    const other = await createAccount(router, { CreditGranted: 50 });
    prompt = 150_000;
    hold = gate();
    hold.release();
    await anthropicClient(router.url, other.key).messages.create({ model: "claude-sonnet-4-5", max_tokens: 1000, messages: [{ role: "user", content: LONG }] });
    expect((await onlyRow(router, other.id)).cost_nanos).toBe(nanos(140_000, 3) + nanos(10_000, 0.3) + nanos(1000, 15));
  });

  test("Gemini 2.5 Pro charges its long-context rates above 200K prompt tokens (cached content included)", async () => {
    const { router, upstream } = await catalogGateway();
    upstream.route("POST", /\/models\/gemini-2\.5-pro:generateContent$/, () =>
      json(geminiAnswer("ok", { promptTokenCount: 300_000, cachedContentTokenCount: 100_000, candidatesTokenCount: 1000, thoughtsTokenCount: 500, totalTokenCount: 301_500 })),
    );
    const account = await createAccount(router, { CreditGranted: 50 });
    await geminiClient(router.url, account.key).models.generateContent({ model: "gemini-2.5-pro", contents: LONG + LONG });
    // $2.50 / $0.25 cached / $15 per 1M above 200K (standard: $1.25 / $0.125 / $10).
    expect((await onlyRow(router, account.id)).cost_nanos).toBe(nanos(200_000, 2.5) + nanos(100_000, 0.25) + nanos(1500, 15));
  });
});

describe("inline images: the reservation bounds their tokens", () => {
  // A 1x1 PNG: 68 bytes, yet Gemini counts every image at least 258 tokens (OpenAI's and Anthropic's tiny images cost tokens beyond their bytes too).
  const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

  test("200 tiny inline images to Gemini 2.5 Pro (258 tokens each, more than their bytes): the call's cost stays within its reservation", async () => {
    const { router, upstream } = await catalogGateway();
    const hold = gate();
    upstream.route("POST", /\/models\/gemini-2\.5-pro:generateContent$/, async () => {
      await hold.wait();
      return json(geminiAnswer("all white", { promptTokenCount: 200 * 258 + 10, candidatesTokenCount: 5, totalTokenCount: 200 * 258 + 15, promptTokensDetails: [{ modality: "IMAGE", tokenCount: 200 * 258 }, { modality: "TEXT", tokenCount: 10 }] }));
    });
    const account = await createAccount(router, { CreditGranted: 5 });
    const parts = [...Array.from({ length: 200 }, () => ({ inlineData: { mimeType: "image/png", data: PIXEL } })), { text: "which colours?" }];
    const { reserved } = await reservedDuring(router, account.id, hold, () =>
      geminiClient(router.url, account.key).models.generateContent({ model: "gemini-2.5-pro", contents: [{ role: "user", parts }], config: { maxOutputTokens: 5 } }),
    );
    const row = await onlyRow(router, account.id);
    expect(row.prompt_tokens).toBe(51_610);
    expect(row.cost_nanos).toBe(nanos(51_610, 1.25) + nanos(5, 10));
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);
  });
});

describe("OpenAI images priced by tokens (gpt-image-1)", () => {
  test("generations: text and image input tokens and the image output tokens at their own prices, within the reservation", async () => {
    const { router, upstream } = await catalogGateway();
    const hold = gate();
    upstream.route("POST", "/v1/images/generations", async () => {
      await hold.wait();
      return json({ created: 1, data: [{ b64_json: "AAAA" }], usage: { input_tokens: 60, input_tokens_details: { text_tokens: 50, image_tokens: 10 }, output_tokens: 6240, total_tokens: 6300 } });
    });
    const account = await createAccount(router, { CreditGranted: 5 });
    const { reserved } = await reservedDuring(router, account.id, hold, () => openaiClient(router.url, account.key).images.generate({ model: "gpt-image-1", prompt: "a cat", size: "1536x1024", quality: "high" }));
    const row = await onlyRow(router, account.id);
    expect(row).toMatchObject({ prompt_tokens: 60, completion_tokens: 6240 });
    // gpt-image-1: text input $5, image input $10, image output $40 per 1M.
    expect(row.cost_nanos).toBe(nanos(50, 5) + nanos(10, 10) + nanos(6240, 40));
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);
  });
});

describe("OpenAI Chat Completions: the details inside the counts", () => {
  test("predicted outputs (accepted and rejected prediction tokens are inside completion_tokens) and audio (inside both counts) are each charged once", async () => {
    const { router, upstream } = await catalogGateway();
    upstream.route("POST", "/v1/chat/completions", (req) => {
      const audio = (req.json as { model: string }).model.includes("audio");
      return json({
        id: "c", object: "chat.completion", created: 1, model: (req.json as { model: string }).model,
        choices: [{ index: 0, message: { role: "assistant", content: "ok", refusal: null }, finish_reason: "stop", logprobs: null }],
        usage: audio
          ? { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 800 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 400, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } }
          : { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 200, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 300, rejected_prediction_tokens: 150 } },
      });
    });
    const predicted = await createAccount(router, { CreditGranted: 5 });
    await openaiClient(router.url, predicted.key).chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "fix" }], prediction: { type: "content", content: "old code" } });
    // gpt-4o: $2.50 in, $1.25 cached, $10 out: the rejected prediction is billed inside the 500 output tokens, not beside them.
    expect((await onlyRow(router, predicted.id)).cost_nanos).toBe(nanos(800, 2.5) + nanos(200, 1.25) + nanos(500, 10));
    const spoken = await createAccount(router, { CreditGranted: 5 });
    await openaiClient(router.url, spoken.key).chat.completions.create({ model: "gpt-4o-audio-preview", modalities: ["text", "audio"], audio: { voice: "alloy", format: "wav" }, messages: [{ role: "user", content: "say hi" }] });
    // gpt-4o-audio-preview: text $2.50 / $10, audio $40 / $80.
    expect((await onlyRow(router, spoken.id)).cost_nanos).toBe(nanos(200, 2.5) + nanos(800, 40) + nanos(100, 10) + nanos(400, 80));
  });
});

describe("OpenAI service tiers: the tier that served the call prices it", () => {
  const usage = { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } };
  const answer = (tier: string) => json({ id: "c", object: "chat.completion", created: 1, model: "gpt-5", service_tier: tier, choices: [{ index: 0, message: { role: "assistant", content: "ok", refusal: null }, finish_reason: "stop", logprobs: null }], usage });

  test("Chat Completions served at service_tier \"priority\" is charged gpt-5's priority rates (2x), within a reservation that counts them", async () => {
    const { router, upstream } = await catalogGateway();
    const hold = gate();
    upstream.route("POST", "/v1/chat/completions", async () => (await hold.wait(), answer("priority")));
    const account = await createAccount(router, { CreditGranted: 5 });
    const { reserved, result } = await reservedDuring(router, account.id, hold, () =>
      openaiClient(router.url, account.key).chat.completions.create({ model: "gpt-5", service_tier: "priority", max_completion_tokens: 100, messages: [{ role: "user", content: "hi" }] }),
    );
    expect(result.service_tier).toBe("priority");
    const row = await onlyRow(router, account.id);
    // gpt-5: $1.25 / $10 standard, $2.50 / $20 priority.
    expect(row.cost_nanos).toBe(nanos(1000, 2.5) + nanos(100, 20));
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);
  });

  test("a Responses stream served at \"flex\" is charged the flex rates (half), one served \"default\" the standard ones", async () => {
    const { router, upstream } = await catalogGateway();
    let tier = "flex";
    upstream.route("POST", "/v1/responses", () => {
      const done = { id: "resp_1", object: "response", created_at: 1, status: "completed", model: "gpt-5", service_tier: tier, output: [{ type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "ok", annotations: [] }] }], usage: { input_tokens: 1000, input_tokens_details: { cached_tokens: 0 }, output_tokens: 100, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1100 }, error: null, incomplete_details: null };
      return sse([
        ["response.created", { type: "response.created", sequence_number: 0, response: { ...done, status: "in_progress", output: [], usage: null } }],
        ["response.completed", { type: "response.completed", sequence_number: 1, response: done }],
      ]);
    });
    for (const [asked, factor] of [["flex", 0.5], ["default", 1]] as const) {
      tier = asked;
      const account = await createAccount(router, { CreditGranted: 5 });
      const stream = await openaiClient(router.url, account.key).responses.create({ model: "gpt-5", input: "hi", service_tier: asked, stream: true });
      for await (const _ of stream) void _;
      expect((await onlyRow(router, account.id)).cost_nanos).toBe(factor * (nanos(1000, 1.25) + nanos(100, 10)));
    }
  });
});

describe("web searches of a stream cut before its final counts", () => {
  test("Anthropic: the searches whose results were delivered (web_search_tool_result, not an error) are charged though message_delta never came", async () => {
    const { router, upstream } = await catalogGateway();
    const result = (i: number, content: unknown) => ["content_block_start", { type: "content_block_start", index: i, content_block: { type: "web_search_tool_result", tool_use_id: `srvtoolu_${i}`, content } }];
    const found = [{ type: "web_search_result", url: "https://example.com", title: "Example", encrypted_content: "xyz", page_age: null }];
    const events = [
      ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "claude-haiku-4-5", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 50, output_tokens: 1, server_tool_use: { web_search_requests: 0 } } } }],
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} } }],
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      result(1, found),
      ["content_block_stop", { type: "content_block_stop", index: 1 }],
      result(2, found),
      ["content_block_stop", { type: "content_block_stop", index: 2 }],
      // A failed search is not billed.
      result(3, { type: "web_search_tool_result_error", error_code: "unavailable" }),
      ["content_block_stop", { type: "content_block_stop", index: 3 }],
      ["content_block_start", { type: "content_block_start", index: 4, content_block: { type: "text", text: "" } }],
      ["content_block_delta", { type: "content_block_delta", index: 4, delta: { type: "text_delta", text: "found it" } }],
      ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 20, server_tool_use: { web_search_requests: 2 } } }],
    ];
    // The connection drops after the text: message_delta (the search count) never comes.
    upstream.route("POST", "/v1/messages", () => sse(events, { breakAfter: events.length - 1, delayMs: 2 }));
    const account = await createAccount(router, { CreditGranted: 5 });
    const res = await router.fetch("/v1/messages", {
      method: "POST",
      key: account.key,
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-haiku-4-5", max_tokens: 100, stream: true, tools: [{ type: "web_search_20250305", name: "web_search" }], messages: [{ role: "user", content: "news?" }] }),
    });
    expect(await res.text()).toContain("found it");
    const row = await onlyRow(router, account.id);
    expect(row.status).toBe(502);
    // The tokens are an estimate; the two delivered searches are charged on top.
    expect(row.cost_nanos).toBe(nanos(row.prompt_tokens, 1) + nanos(row.completion_tokens, 5) + 2 * 0.01e9);
  });
});

describe("web searches of a Responses stream cut before response.completed", () => {
  test("the web_search_call items already delivered (response.output_item.done) are charged beside the estimated tokens", async () => {
    const { router, upstream } = await catalogGateway();
    const call = (i: number) => ({ type: "web_search_call", id: `ws_${i}`, status: "completed", action: { type: "search", query: `q${i}` } });
    const started = { id: "resp_1", object: "response", created_at: 1, status: "in_progress", model: "gpt-5", output: [], usage: null, error: null, incomplete_details: null };
    const events = [
      ["response.created", { type: "response.created", sequence_number: 0, response: started }],
      ["response.output_item.done", { type: "response.output_item.done", sequence_number: 1, output_index: 0, item: call(1) }],
      ["response.output_item.done", { type: "response.output_item.done", sequence_number: 2, output_index: 1, item: call(2) }],
      ["response.output_text.delta", { type: "response.output_text.delta", sequence_number: 3, output_index: 2, item_id: "msg_1", content_index: 0, delta: "found it" }],
      ["response.completed", { type: "response.completed", sequence_number: 4, response: { ...started, status: "completed" } }],
    ];
    upstream.route("POST", "/v1/responses", () => sse(events, { breakAfter: events.length - 1, delayMs: 2 }));
    const account = await createAccount(router, { CreditGranted: 5 });
    const res = await router.fetch("/v1/responses", { method: "POST", key: account.key, headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-5", input: "news?", stream: true, tools: [{ type: "web_search" }] }) });
    expect(await res.text()).toContain("found it");
    const row = await onlyRow(router, account.id);
    expect(row.status).toBe(502);
    expect(row.source).toBe("estimated");
    expect(row.cost_nanos).toBe(nanos(row.prompt_tokens, 1.25) + nanos(row.completion_tokens, 10) + 2 * 0.01e9);
  });
});

describe("Anthropic: inference kept in one geography", () => {
  test("claude-opus-4-6 answered with usage.inference_geo \"us\" is charged 1.1x, within a reservation that counts it; \"global\" at standard rates", async () => {
    const { router, upstream } = await catalogGateway();
    let geo = "us";
    const hold = gate();
    upstream.route("POST", "/v1/messages", async () => (await hold.wait(), anthropicMessage("claude-opus-4-6", { input_tokens: 100, output_tokens: 100, inference_geo: geo })));
    const account = await createAccount(router, { CreditGranted: 5 });
    // inference_geo is a Messages parameter: passed as a variable, as the installed SDK's types may lag.
    const params = { model: "claude-opus-4-6", max_tokens: 100, inference_geo: "us", messages: [{ role: "user" as const, content: "hi" }] };
    const { reserved } = await reservedDuring(router, account.id, hold, () => anthropicClient(router.url, account.key).messages.create(params));
    const row = await onlyRow(router, account.id);
    expect(row.cost_nanos).toBe(Math.round(1.1 * (nanos(100, 5) + nanos(100, 25))));
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);
    geo = "global";
    const other = await createAccount(router, { CreditGranted: 5 });
    await anthropicClient(router.url, other.key).messages.create({ model: "claude-opus-4-6", max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
    expect((await onlyRow(router, other.id)).cost_nanos).toBe(nanos(100, 5) + nanos(100, 25));
  });
});

describe("OpenAI Chat Completions search models", () => {
  test("a call with web_search_options (a search model searches before it answers) is charged one web search beside its tokens, within its reservation; a failed one nothing", async () => {
    const { router, upstream } = await catalogGateway();
    const hold = gate();
    let fail = false;
    upstream.route("POST", "/v1/chat/completions", async () => {
      await hold.wait();
      if (fail) return json({ error: { message: "bad request", type: "invalid_request_error", param: null, code: null } }, 400);
      return json({
        id: "c", object: "chat.completion", created: 1, model: "gpt-5-search-api",
        choices: [{ index: 0, message: { role: "assistant", content: "It is sunny.", refusal: null, annotations: [{ type: "url_citation", url_citation: { url: "https://example.com", title: "Weather", start_index: 0, end_index: 12 } }] }, finish_reason: "stop", logprobs: null }],
        usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
      });
    });
    const account = await createAccount(router, { CreditGranted: 5 });
    const client = openaiClient(router.url, account.key);
    const { reserved } = await reservedDuring(router, account.id, hold, () => client.chat.completions.create({ model: "gpt-5-search-api", web_search_options: {}, max_completion_tokens: 20, messages: [{ role: "user", content: "weather?" }] }));
    const row = await onlyRow(router, account.id);
    expect(row.cost_nanos).toBe(nanos(100, 1.25) + nanos(20, 10) + 0.01e9);
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);

    fail = true;
    const other = await createAccount(router, { CreditGranted: 5 });
    const refused = await openaiClient(router.url, other.key).chat.completions.create({ model: "gpt-5-search-api", web_search_options: {}, messages: [{ role: "user", content: "weather?" }] }).catch((e: { status: number }) => e);
    expect((refused as { status: number }).status).toBe(400);
    const rows = (await usageRows(router)).filter((r) => r.account_id === other.id);
    expect(rows.reduce((sum, r) => sum + r.cost_nanos, 0)).toBe(0);
  });
});

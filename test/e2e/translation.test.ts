import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, openaiClient } from "../helpers/sdk.ts";

/**
 * Issue 16, wiring: a key declares the formats it speaks (`config.formats`); a call in
 * another format is translated (Anthropic Messages ⇄ OpenAI Chat Completions), answered
 * in the client's format through its official SDK, and metered on the upstream's own
 * answer, so it costs what a native call costs.
 *
 * Levels: 1 an OpenAI-format key (model acme-oa), 2 an Anthropic-format key (acme-an),
 * 3 both (acme-both: the native one must be chosen), 4 a Gemini-only key (acme-gem).
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8, CachedText: 0.5, CacheWrite: 2.5 } } };

let router: TestRouter;
/** Speaks OpenAI Chat Completions. */
let oa: MockUpstream;
/** Speaks Anthropic Messages. */
let an: MockUpstream;
let bothOpenai: MockUpstream;
let bothAnthropic: MockUpstream;
let gem: MockUpstream;
let anthropicKeyId: number;

const anthropicMessage = (model: string, content: unknown[] = [{ type: "text", text: "Bonjour" }], stop = "end_turn") => ({
  id: "msg_1",
  type: "message",
  role: "assistant",
  model,
  content,
  stop_reason: stop,
  stop_sequence: null,
  usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 },
});

const chatCompletion = (model: string, message: Record<string, unknown> = { role: "assistant", content: "Bonjour" }, finish = "stop") => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model,
  choices: [{ index: 0, message, finish_reason: finish }],
  usage: { prompt_tokens: 130, completion_tokens: 5, total_tokens: 135, prompt_tokens_details: { cached_tokens: 100 } },
});

const chunk = (model: string, delta: Record<string, unknown>, finish: string | null = null) => ({
  id: "chatcmpl-2",
  object: "chat.completion.chunk",
  created: 1,
  model,
  choices: [{ index: 0, delta, finish_reason: finish }],
});

/** A Chat stream with two parallel tool calls whose arguments arrive in fragments, then usage. */
const chatToolStream = (model: string) => [
  chunk(model, { role: "assistant", content: null }),
  chunk(model, { tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "weather", arguments: "" } }] }),
  chunk(model, { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
  chunk(model, { tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "weather", arguments: '{"ci' } }] }),
  chunk(model, { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
  chunk(model, { tool_calls: [{ index: 1, function: { arguments: 'ty":"Oslo"}' } }] }),
  chunk(model, {}, "tool_calls"),
  { id: "chatcmpl-2", object: "chat.completion.chunk", created: 1, model, choices: [], usage: { prompt_tokens: 40, completion_tokens: 12, total_tokens: 52 } },
];

/** An Anthropic stream with two tool_use blocks whose input arrives as JSON fragments. */
const anthropicToolStream = (model: string) =>
  [
    ["message_start", { type: "message_start", message: { ...anthropicMessage(model, []), stop_reason: null, usage: { input_tokens: 40, output_tokens: 1 } } }],
    ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_a", name: "weather", input: {} } }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"city":' } }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '"Paris"}' } }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["content_block_start", { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_b", name: "weather", input: {} } }],
    ["content_block_delta", { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"city":"Oslo"}' } }],
    ["content_block_stop", { type: "content_block_stop", index: 1 }],
    ["message_delta", { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 12 } }],
    ["message_stop", { type: "message_stop" }],
  ] as Array<[string, unknown]>;

const weatherTool = { name: "weather", description: "Weather of a city", input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] } };
const weatherFunction = { type: "function" as const, function: { name: "weather", description: "Weather of a city", parameters: weatherTool.input_schema } };

beforeAll(async () => {
  [oa, an, bothOpenai, bothAnthropic, gem] = [startMockUpstream(), startMockUpstream(), startMockUpstream(), startMockUpstream(), startMockUpstream()];
  router = await startRouter({ pricing: PRICING });
  await addKey(router, { provider: oa.url, level: 1, config: { provider_type: "standard", formats: ["openai"] } });
  anthropicKeyId = (await addKey(router, { provider: an.url, level: 2, config: { provider_type: "standard", formats: ["anthropic"] } })).id;
  await addKey(router, { provider: bothOpenai.url, level: 3, config: { provider_type: "standard", formats: ["openai"] } });
  await addKey(router, { provider: bothAnthropic.url, level: 3, config: { provider_type: "standard", formats: ["anthropic"] } });
  await addKey(router, { provider: gem.url, level: 4, config: { provider_type: "standard", formats: ["gemini"] } });
  await router.deps.settings.update({ LEVEL_MAPPER: "acme-oa*=1,acme-an*=2,acme-both=3,acme-gem=4" });
});
afterAll(async () => {
  await router.stop();
  await Promise.all([oa, an, bothOpenai, bothAnthropic, gem].map((m) => m.stop()));
});
beforeEach(() => {
  for (const mock of [oa, an, bothOpenai, bothAnthropic, gem]) mock.reset();
});

/** The usage rows written since `before` rows, once `count` of them are there. */
async function newRows(before: number, count: number): Promise<Array<Record<string, any>>> {
  return waitFor(async () => {
    const rows = (await usageRows(router)).slice(before);
    return rows.length >= count ? rows : undefined;
  }, 5000, `${count} usage rows`) as Promise<Array<Record<string, any>>>;
}

describe("config.formats", () => {
  test("GET /x-keys/{id} shows the formats a key speaks, filled with the default from its host when it declares none", async () => {
    const declared = await router.fetch(`/x-keys/${anthropicKeyId}`);
    expect((await declared.json()).config.formats).toEqual(["anthropic"]);
    for (const [provider, config, formats] of [
      ["https://api.anthropic.com", { provider_type: "standard" }, ["anthropic"]],
      ["https://api.openai.com/v1", { provider_type: "standard" }, ["openai", "responses"]],
      ["https://generativelanguage.googleapis.com", { provider_type: "standard" }, ["gemini"]],
      ["https://llm.internal.example", { provider_type: "standard" }, ["openai", "responses", "anthropic", "gemini"]],
      ["https://my-resource.openai.azure.com", { provider_type: "azure" }, ["openai", "responses"]],
    ] as const) {
      // Disabled, on a Level nothing routes to: only its record is read.
      const { id } = await addKey(router, { provider, level: 90, status: false, config: config as never });
      const record = await (await router.fetch(`/x-keys/${id}`)).json();
      expect(record.config.formats).toEqual(formats as unknown as string[]);
    }
  });

  test("unknown or repeated formats, or an empty list, are a 400 naming config.formats", async () => {
    for (const formats of [["openai", "cobol"], ["anthropic", "anthropic"], [], "openai"]) {
      const res = await router.fetch("/x-keys", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ Provider: "https://api.example.com/v1", SecretKey: "sk-test-formats-0123456789abcdef", Level: 1, Status: true, config: { formats } }),
      });
      expect(res.status).toBe(400);
      expect((await res.json()).error.param).toBe("config.formats");
    }
  });
});

describe("routing", () => {
  test("a key speaking the client's format is preferred over one that needs a translator on the same Level", async () => {
    bothAnthropic.route("POST", "/v1/messages", (req) => json(anthropicMessage(req.json.model)));
    bothOpenai.route("POST", "/v1/chat/completions", (req) => json(chatCompletion(req.json.model)));
    const anthropic = anthropicClient(router.url, router.ownerKey);
    const openai = openaiClient(router.url, router.ownerKey);
    for (let i = 0; i < 3; i++) {
      await anthropic.messages.create({ model: "acme-both", max_tokens: 50, messages: [{ role: "user", content: "Salut" }] });
      await openai.chat.completions.create({ model: "acme-both", messages: [{ role: "user", content: "Salut" }] });
    }
    expect(bothAnthropic.requests.map((r) => r.path)).toEqual(["/v1/messages", "/v1/messages", "/v1/messages"]);
    expect(bothOpenai.requests.map((r) => r.path)).toEqual(["/v1/chat/completions", "/v1/chat/completions", "/v1/chat/completions"]);
  });

  test("a same-format call goes upstream byte for byte as the client sent it", async () => {
    an.route("POST", "/v1/messages", (req) => json(anthropicMessage(req.json.model)));
    const body = '{"model":"acme-an","max_tokens":50,  "messages":[{"role":"user","content":"Salut"}],"metadata":{"user_id":"u1"}}';
    const res = await router.fetch("/v1/messages", { method: "POST", headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" }, body });
    expect(res.status).toBe(200);
    expect(an.requests[0]!.body).toBe(body);
  });

  test("a call no translator carries (embeddings) for a model whose keys speak another format is a 400 naming the model and their formats", async () => {
    const res = await router.fetch("/v1/embeddings", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "acme-an", input: "Salut" }),
    });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe("unsupported_format");
    expect(body.error.message).toContain("acme-an");
    expect(body.error.message).toContain("anthropic");
    expect(an.requests).toHaveLength(0);
  });
});

describe("Anthropic client, OpenAI-format key", () => {
  test("a plain message: translated request with the key's Bearer auth, answer in the Anthropic shape", async () => {
    oa.route("POST", "/v1/chat/completions", (req) => json(chatCompletion(req.json.model)));
    const client = anthropicClient(router.url, router.ownerKey);
    const message = await client.messages.create({ model: "acme-oa", max_tokens: 50, system: "Be brief", messages: [{ role: "user", content: "Salut" }] });
    expect(message.content).toMatchObject([{ type: "text", text: "Bonjour" }]);
    expect(message.stop_reason).toBe("end_turn");
    const seen = oa.requests[0]!;
    expect(seen.path).toBe("/v1/chat/completions");
    expect(seen.headers.get("authorization")).toMatch(/^Bearer sk-upstream-test-/);
    expect(seen.headers.get("x-api-key")).toBeNull();
    expect(seen.headers.get("anthropic-version")).toBeNull();
    expect(seen.json).toMatchObject({ model: "acme-oa", max_completion_tokens: 50, messages: [{ role: "system", content: "Be brief" }, { role: "user", content: "Salut" }] });
  });

  test("a stream with parallel tool calls, assembled by the SDK's stream helper; then the tool results go back", async () => {
    oa.route("POST", "/v1/chat/completions", (req) => (req.json.stream ? sse(chatToolStream(req.json.model), { done: true }) : json(chatCompletion(req.json.model))));
    const client = anthropicClient(router.url, router.ownerKey);
    const stream = client.messages.stream({ model: "acme-oa", max_tokens: 200, tools: [weatherTool], messages: [{ role: "user", content: "Weather in Paris and Oslo?" }] });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe("tool_use");
    expect(final.content.map((block: any) => [block.type, block.id, block.input])).toEqual([
      ["tool_use", "call_a", { city: "Paris" }],
      ["tool_use", "call_b", { city: "Oslo" }],
    ]);
    expect(final.usage.output_tokens).toBe(12);
    expect(oa.requests[0]!.json.stream_options).toEqual({ include_usage: true });

    await client.messages.create({
      model: "acme-oa",
      max_tokens: 200,
      tools: [weatherTool],
      messages: [
        { role: "user", content: "Weather in Paris and Oslo?" },
        { role: "assistant", content: final.content as never },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "call_a", content: "sunny" },
            { type: "tool_result", tool_use_id: "call_b", content: "snow" },
          ],
        },
      ],
    });
    const second = oa.requests[1]!.json;
    expect(second.messages.slice(1)).toMatchObject([
      { role: "assistant", tool_calls: [{ id: "call_a", function: { name: "weather" } }, { id: "call_b", function: { name: "weather" } }] },
      { role: "tool", tool_call_id: "call_a", content: "sunny" },
      { role: "tool", tool_call_id: "call_b", content: "snow" },
    ]);
  });

  test("the client's first event leaves with the upstream's first, not when the stream ends", async () => {
    oa.route("POST", "/v1/chat/completions", (req) =>
      sse([chunk(req.json.model, { role: "assistant", content: "" }), chunk(req.json.model, { content: "Bon" }), chunk(req.json.model, {}, "stop")], { delayMs: 400, done: true }),
    );
    const started = Date.now();
    const res = await router.fetch("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "acme-oa", max_tokens: 50, stream: true, messages: [{ role: "user", content: "Salut" }] }),
    });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain("event: message_start");
    expect(Date.now() - started).toBeLessThan(350);
    let rest = "";
    for (let read = await reader.read(); !read.done; read = await reader.read()) rest += new TextDecoder().decode(read.value);
    expect(rest).toContain("event: message_stop");
  });

  test("an upstream error comes back in Anthropic's envelope with its status", async () => {
    oa.route("POST", "/v1/chat/completions", () => json({ error: { message: "bad things", type: "invalid_request_error", param: "messages", code: null } }, 400));
    const res = await router.fetch("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "acme-oa", max_tokens: 50, messages: [{ role: "user", content: "Salut" }] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: "bad things" } });
  });

  test("a request that cannot be carried is the translator's 400: nothing upstream, no usage row", async () => {
    const before = (await usageRows(router)).length;
    const res = await router.fetch("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "acme-oa", max_tokens: 50, mcp_servers: [{ type: "url", url: "https://mcp.example", name: "x" }], messages: [{ role: "user", content: "Salut" }] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(oa.requests).toHaveLength(0);
    await Bun.sleep(100);
    expect((await usageRows(router)).length).toBe(before);
  });
});

describe("OpenAI client, Anthropic-format key", () => {
  test("a plain message: max_tokens is the reserved bound when the client gave none; x-api-key auth; Chat answer", async () => {
    an.route("POST", "/v1/messages", (req) => json(anthropicMessage(req.json.model)));
    const client = openaiClient(router.url, router.ownerKey);
    const completion = await client.chat.completions.create({ model: "acme-an", messages: [{ role: "user", content: "Salut" }] });
    expect(completion.choices[0]!.message.content).toBe("Bonjour");
    expect(completion.choices[0]!.finish_reason).toBe("stop");
    expect(completion.usage).toMatchObject({ prompt_tokens: 130, completion_tokens: 5 });
    const seen = an.requests[0]!;
    expect(seen.path).toBe("/v1/messages");
    expect(seen.headers.get("x-api-key")).toMatch(/^sk-upstream-test-/);
    expect(seen.headers.get("authorization")).toBeNull();
    expect(seen.headers.get("anthropic-version")).toBe("2023-06-01");
    // No max_tokens from the client: the bound the router reserved (no MaxOutput priced: the default).
    expect(seen.json.max_tokens).toBe(32_768);
  });

  test("a stream with parallel tool calls, assembled by the SDK's stream helper", async () => {
    an.route("POST", "/v1/messages", (req) => sse(anthropicToolStream(req.json.model)));
    const client = openaiClient(router.url, router.ownerKey);
    const stream = client.chat.completions.stream({ model: "acme-an", max_tokens: 200, tools: [weatherFunction], messages: [{ role: "user", content: "Weather in Paris and Oslo?" }] });
    const final = await stream.finalChatCompletion();
    const message = final.choices[0]!.message;
    expect(final.choices[0]!.finish_reason).toBe("tool_calls");
    expect(message.tool_calls!.map((call: any) => [call.id, call.function.name, JSON.parse(call.function.arguments)])).toEqual([
      ["toolu_a", "weather", { city: "Paris" }],
      ["toolu_b", "weather", { city: "Oslo" }],
    ]);
  });

  test("a plain text stream reaches the SDK chunk by chunk, ending with [DONE]", async () => {
    an.route("POST", "/v1/messages", (req) =>
      sse([
        ["message_start", { type: "message_start", message: { ...anthropicMessage(req.json.model, []), stop_reason: null, usage: { input_tokens: 7, output_tokens: 1 } } }],
        ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
        ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Bon" } }],
        ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "jour" } }],
        ["content_block_stop", { type: "content_block_stop", index: 0 }],
        ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 3 } }],
        ["message_stop", { type: "message_stop" }],
      ]),
    );
    const client = openaiClient(router.url, router.ownerKey);
    const stream = await client.chat.completions.create({ model: "acme-an", max_tokens: 50, stream: true, messages: [{ role: "user", content: "Salut" }] });
    let text = "";
    for await (const part of stream) text += part.choices[0]?.delta.content ?? "";
    expect(text).toBe("Bonjour");
  });

  test("an upstream error comes back in OpenAI's envelope with its status", async () => {
    an.route("POST", "/v1/messages", () => json({ type: "error", error: { type: "invalid_request_error", message: "max_tokens too large" } }, 400));
    const client = openaiClient(router.url, router.ownerKey);
    const error = (await client.chat.completions.create({ model: "acme-an", messages: [{ role: "user", content: "Salut" }] }).catch((e: unknown) => e)) as any;
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ message: "max_tokens too large", type: "invalid_request_error" });
  });

  test("a request that cannot be carried (n above 1) is the translator's 400: nothing upstream, no usage row", async () => {
    const before = (await usageRows(router)).length;
    const client = openaiClient(router.url, router.ownerKey);
    const error = (await client.chat.completions.create({ model: "acme-an", n: 2, messages: [{ role: "user", content: "Salut" }] }).catch((e: unknown) => e)) as any;
    expect(error.status).toBe(400);
    expect(error.error.param).toBe("n");
    expect(an.requests).toHaveLength(0);
    await Bun.sleep(100);
    expect((await usageRows(router)).length).toBe(before);
  });

  test("a stream that fails midway ends with OpenAI's terminal error event", async () => {
    an.route("POST", "/v1/messages", (req) => sse(anthropicToolStream(req.json.model), { breakAfter: 3, delayMs: 20 }));
    const res = await router.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "acme-an", max_tokens: 50, stream: true, tools: [weatherFunction], messages: [{ role: "user", content: "Salut" }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    // Chat chunks as far as the upstream got, then OpenAI's error event; no [DONE] after it.
    expect(text).toContain('"tool_calls"');
    const events = text.trim().split("\n\n");
    expect(JSON.parse(events.at(-1)!.replace(/^data: /, ""))).toMatchObject({ error: { message: expect.any(String) } });
    expect(text).not.toContain("[DONE]");
  });
});

describe("metering parity", () => {
  test("the same conversation costs the same through a native key and a translated one (JSON and stream)", async () => {
    an.route("POST", "/v1/messages", (req) => (req.json.stream ? sse(anthropicToolStream(req.json.model)) : json(anthropicMessage(req.json.model))));
    oa.route("POST", "/v1/chat/completions", (req) => (req.json.stream ? sse(chatToolStream(req.json.model), { done: true }) : json(chatCompletion(req.json.model))));
    const anthropic = anthropicClient(router.url, router.ownerKey);
    const openai = openaiClient(router.url, router.ownerKey);
    const messages = [{ role: "user" as const, content: "Salut" }];
    const pick = (row: Record<string, any>) => [row.prompt_tokens, row.completion_tokens, row.cache_read_tokens, row.cache_write_tokens, row.cost_nanos, row.source];

    // On the Anthropic-format key: native Anthropic client, translated OpenAI client.
    let before = (await usageRows(router)).length;
    await anthropic.messages.create({ model: "acme-an", max_tokens: 50, messages });
    await openai.chat.completions.create({ model: "acme-an", max_tokens: 50, messages });
    await anthropic.messages.stream({ model: "acme-an", max_tokens: 50, messages }).finalMessage();
    await openai.chat.completions.stream({ model: "acme-an", max_tokens: 50, messages }).finalChatCompletion();
    let rows = await newRows(before, 4);
    expect(rows[0]!.cost_nanos).toBeGreaterThan(0);
    expect(pick(rows[1]!)).toEqual(pick(rows[0]!));
    expect(pick(rows[3]!)).toEqual(pick(rows[2]!));

    // On the OpenAI-format key: native OpenAI client, translated Anthropic client.
    before = (await usageRows(router)).length;
    await openai.chat.completions.create({ model: "acme-oa", max_tokens: 50, messages });
    await anthropic.messages.create({ model: "acme-oa", max_tokens: 50, messages });
    await openai.chat.completions.stream({ model: "acme-oa", max_tokens: 50, messages }).finalChatCompletion();
    await anthropic.messages.stream({ model: "acme-oa", max_tokens: 50, messages }).finalMessage();
    rows = await newRows(before, 4);
    expect(rows[0]!.cost_nanos).toBeGreaterThan(0);
    expect(pick(rows[1]!)).toEqual(pick(rows[0]!));
    expect(pick(rows[3]!)).toEqual(pick(rows[2]!));
  });
});

import { describe, expect, test } from "bun:test";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { waitFor } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";
import { anthropicClient, geminiClient, openaiClient } from "../helpers/sdk.ts";

/**
 * Bodies past 32 KiB are read with their conversation left as text until something
 * needs it (src/formats/lazy-body.ts): what goes upstream, what is metered and what is
 * refused must be exactly what a fully parsed body gives.
 */

const scope = perTest();

/** A long conversation of ordinary text (with the quotes and newlines real ones have): about 60 KB. */
const conversation = () =>
  Array.from({ length: 80 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `Turn ${i}: the log says "done"\n\t${"and the retry policy doubled the backoff between the attempts. ".repeat(10)}` }));

const chatAnswer = (model: string, usage = { prompt_tokens: 9000, completion_tokens: 5, total_tokens: 9005 }) => ({
  id: "c",
  object: "chat.completion",
  created: 1,
  model,
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage,
});

describe("long conversations", () => {
  test("OpenAI SDK: the upstream gets the conversation as sent, the call is metered from its usage", async () => {
    const { router, upstream } = await scope.gateway();
    upstream.route("POST", "/v1/chat/completions", (req) => json(chatAnswer(req.json.model)));
    const messages = conversation();
    const answer = await openaiClient(router.url, router.ownerKey).chat.completions.create({ model: "gpt-4o-mini", messages: messages as never, max_tokens: 50 });
    expect(answer.choices[0]!.message.content).toBe("ok");
    const seen = upstream.requests.at(-1)!;
    expect(seen.body.length).toBeGreaterThan(32 * 1024);
    expect(seen.json).toEqual({ model: "gpt-4o-mini", messages, max_tokens: 50 });
    const row = await waitFor(async () => (await usageRows(router)).find((r) => r.prompt_tokens === 9000));
    expect(row).toMatchObject({ completion_tokens: 5, source: "upstream", status: 200 });
  });

  test("a mapped model: the upstream gets the mapped name and the same conversation, spacing and all", async () => {
    const { router, upstream } = await scope.gateway();
    await router.deps.settings.update({ MODEL_MAPPER: "alias-model=real-model" });
    upstream.route("POST", "/v1/chat/completions", (req) => json(chatAnswer(req.json.model)));
    const messages = conversation();
    // Written with spaces, as some clients write: the conversation goes upstream as written.
    const spaced = JSON.stringify(messages, null, 2);
    const body = `{"model": "alias-model", "messages": ${spaced}, "max_tokens": 50}`;
    const res = await fetch(`${router.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${router.ownerKey}`, "content-type": "application/json" }, body });
    expect(res.status).toBe(200);
    const seen = upstream.requests.at(-1)!;
    expect(seen.json).toEqual({ model: "real-model", messages, max_tokens: 50 });
    expect(seen.body).toContain(spaced);
  });

  test("a stream: usage is asked for on the client's behalf, the conversation is intact, and the usage chunk stays hidden", async () => {
    const { router, upstream } = await scope.gateway();
    const chunk = (content: string | null, extra: Record<string, unknown> = {}) => ({ id: "s", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: content === null ? [] : [{ index: 0, delta: { content }, finish_reason: null }], ...extra });
    upstream.route("POST", "/v1/chat/completions", () => sse([chunk("Hel"), chunk("lo"), chunk(null, { usage: { prompt_tokens: 9100, completion_tokens: 2, total_tokens: 9102 } })], { done: true }));
    const messages = conversation();
    const stream = await openaiClient(router.url, router.ownerKey).chat.completions.create({ model: "gpt-4o-mini", messages: messages as never, stream: true });
    let text = "";
    let sawUsage = false;
    for await (const part of stream) {
      if (part.usage) sawUsage = true;
      text += part.choices[0]?.delta?.content ?? "";
    }
    expect(text).toBe("Hello");
    expect(sawUsage).toBe(false);
    const seen = upstream.requests.at(-1)!;
    expect(seen.json).toEqual({ model: "gpt-4o-mini", messages, stream: true, stream_options: { include_usage: true } });
    const row = await waitFor(async () => (await usageRows(router)).find((r) => r.prompt_tokens === 9100));
    expect(row).toMatchObject({ completion_tokens: 2, stream: 1, source: "upstream" });
  });

  test("a conversation in other scripts, and one of tool calls and code, go upstream as sent too", async () => {
    const { router, upstream } = await scope.gateway();
    upstream.route("POST", "/v1/chat/completions", (req) => json(chatAnswer(req.json.model)));
    const client = openaiClient(router.url, router.ownerKey);
    const accented = conversation().map((turn) => ({ ...turn, content: `${turn.content} déjà vu, 日本語, ✓ 🎉` }));
    const code = Array.from({ length: 60 }, (_, i) => ({ role: "user", content: `File ${i}:\n${'     1\timport x from "y";\n     2\tconst a = {"k": [1, 2]};\n'.repeat(12)}` }));
    for (const messages of [accented, code]) {
      await client.chat.completions.create({ model: "gpt-4o-mini", messages: messages as never });
      expect(upstream.requests.at(-1)!.json.messages).toEqual(messages);
    }
  });

  test("Anthropic SDK with content blocks, and Gemini SDK: both go upstream as sent", async () => {
    const { router, upstream } = await scope.gateway();
    upstream.route("POST", "/v1/messages", (req) =>
      json({ id: "m", type: "message", role: "assistant", model: req.json.model, content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 9200, output_tokens: 3 } }),
    );
    upstream.route("POST", /generateContent$/, () => json({ candidates: [{ content: { role: "model", parts: [{ text: "ok" }] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 9300, candidatesTokenCount: 4, totalTokenCount: 9304 } }));
    const blocks = conversation().map((turn) => ({ role: turn.role as "user" | "assistant", content: [{ type: "text" as const, text: turn.content, cache_control: { type: "ephemeral" as const } }] }));
    const message = await anthropicClient(router.url, router.ownerKey).messages.create({ model: "claude-test-long", max_tokens: 50, messages: blocks });
    expect(message.content[0]).toMatchObject({ text: "ok" });
    expect(upstream.requests.at(-1)!.json.messages).toEqual(blocks);
    const contents = conversation().map((turn) => ({ role: turn.role === "assistant" ? "model" : "user", parts: [{ text: turn.content }] }));
    const answer = await geminiClient(router.url, router.ownerKey).models.generateContent({ model: "gemini-2.5-flash", contents });
    expect(answer.text).toBe("ok");
    expect(upstream.requests.at(-1)!.json.contents).toEqual(contents);
    const rows = await waitFor(async () => {
      const found = (await usageRows(router)).filter((r) => r.prompt_tokens === 9200 || r.prompt_tokens === 9300);
      return found.length === 2 ? found : undefined;
    });
    expect(rows!.map((r) => r.status)).toEqual([200, 200]);
  });

  test("translated to another format: the held conversation is read and carried over whole", async () => {
    const upstream = scope.upstream();
    const router = await scope.router();
    await addKey(router, { provider: upstream.url, config: { provider_type: "standard", formats: ["anthropic"] } });
    upstream.route("POST", "/v1/messages", (req) =>
      json({ id: "m", type: "message", role: "assistant", model: req.json.model, content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 9400, output_tokens: 2 } }),
    );
    const messages = conversation();
    const answer = await openaiClient(router.url, router.ownerKey).chat.completions.create({ model: "claude-test-long", messages: messages as never, max_tokens: 50 });
    expect(answer.choices[0]!.message.content).toBe("ok");
    const sent = upstream.requests.at(-1)!.json.messages as Array<{ role: string; content: unknown }>;
    const text = (content: unknown) => (typeof content === "string" ? content : (content as Array<{ text: string }>).map((part) => part.text).join(""));
    // Whole, but for the trailing whitespace of a last assistant turn, which Anthropic refuses in a prefill (docs/translation.md).
    const last = messages.length - 1;
    expect(sent.map((m) => [m.role, text(m.content)])).toEqual(messages.map((m, i) => [m.role, i === last && m.role === "assistant" ? m.content.trimEnd() : m.content]));
    const row = await waitFor(async () => (await usageRows(router)).find((r) => r.prompt_tokens === 9400));
    expect(row).toMatchObject({ status: 200, source: "upstream" });
  });

  test("a long body that is not JSON gets the router's 400 in the family's envelope; nothing goes upstream, nothing is metered", async () => {
    const { router, upstream } = await scope.gateway();
    const messages = JSON.stringify(conversation());
    const broken = [`{"model":"gpt-4o-mini","messages":${messages.slice(0, -2)}}`, `{"model":"gpt-4o-mini","messages":${messages}`, `{"model":"gpt-4o-mini","messages":${messages.replace("Turn 3", "Turn\u00013")}}`];
    for (const body of broken) {
      const res = await fetch(`${router.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${router.ownerKey}`, "content-type": "application/json" }, body });
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ type: "invalid_request_error", message: "Request body is not valid JSON" });
    }
    const anthropic = await fetch(`${router.url}/v1/messages`, { method: "POST", headers: { "x-api-key": router.ownerKey, "content-type": "application/json" }, body: broken[0] });
    expect(anthropic.status).toBe(400);
    expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(upstream.requests).toHaveLength(0);
    expect(await usageRows(router)).toHaveLength(0);
  });
});

describe("reservations of long conversations", () => {
  const CONTEXT = 200_000;
  const pricing = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8, ContextWindow: CONTEXT, MaxOutput: 2000 } } };
  const cost = (prompt: number, completion: number) => (prompt * 2 + completion * 8) * 1000;
  /**
   * An account whose credit holds a long body's worst case several times over, but less
   * than one call reserving the context window (the body is a long one: at least 32 KiB).
   */
  const accountBelowContextWindow = async (router: Parameters<typeof createAccount>[0], body: unknown) => {
    const bytes = new TextEncoder().encode(JSON.stringify(body)).byteLength;
    expect(bytes).toBeGreaterThan(32 * 1024);
    const grant = 3 * cost(bytes + 1024 + 200, 100);
    expect(cost(CONTEXT, 100)).toBeGreaterThan(grant);
    return createAccount(router, { CreditGranted: grant / 1e9 });
  };

  test("an image by URL at the end of a long conversation reserves the context window; the same conversation without it, its bytes", async () => {
    const { router, upstream } = await scope.gateway({ pricing });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    upstream.route("POST", "/v1/chat/completions", async () => {
      await gate;
      return json(chatAnswer("acme-chat", { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 }));
    });
    const text = { model: "acme-chat", max_tokens: 100, messages: conversation() };
    const account = await accountBelowContextWindow(router, text);
    const image = { ...text, messages: [...conversation(), { role: "user", content: [{ type: "text", text: "and this?" }, { type: "image_url", image_url: { url: "https://example.com/cat.png" } }] }] };
    const first = api(router, "/v1/chat/completions", { key: account.key, body: image });
    await waitFor(() => upstream.requests.length === 1 || undefined);
    const second = await api(router, "/v1/chat/completions", { key: account.key, body: text });
    expect(second.status).toBe(429);
    release();
    expect((await first).status).toBe(200);
    // Two text calls fit side by side: their worst cases are their bodies.
    const both = await Promise.all([api(router, "/v1/chat/completions", { key: account.key, body: text }), api(router, "/v1/chat/completions", { key: account.key, body: text })]);
    expect(both.map((r) => r.status)).toEqual([200, 200]);
  });

  test("an agent's long tool list with a server tool reserves the context window; the same tools declared only, their bytes", async () => {
    const { router, upstream } = await scope.gateway({ pricing: { ChatPricing: { "claude-acme*": { InputText: 2, OutputText: 8, ContextWindow: CONTEXT, MaxOutput: 2000 } } } });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    upstream.route("POST", "/v1/messages", async (req) => {
      await gate;
      return json({ id: "m", type: "message", role: "assistant", model: req.json.model, content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 10, output_tokens: 10 } });
    });
    // Declared tools as an agent sends them: long descriptions and schemas.
    const declared = Array.from({ length: 16 }, (_, i) => ({ name: `Tool${i}`, description: 'Reads a file from the local filesystem. Paths are "absolute".\n'.repeat(30), input_schema: { type: "object", properties: { file_path: { type: "string" } }, required: ["file_path"] } }));
    const plain = { model: "claude-acme", max_tokens: 100, system: [{ type: "text", text: "You are a coding agent.\n".repeat(400) }], tools: declared, messages: [{ role: "user", content: "hi" }] };
    const withSearch = { ...plain, tools: [...declared, { type: "web_search_20250305", name: "web_search", max_uses: 3 }] };
    const account = await accountBelowContextWindow(router, plain);
    const call = (body: unknown) => api(router, "/v1/messages", { key: account.key, body });
    const first = call(withSearch);
    await waitFor(() => upstream.requests.length === 1 || undefined);
    expect((await call(plain)).status).toBe(429);
    release();
    expect((await first).status).toBe(200);
    expect((await Promise.all([call(plain), call(plain)])).map((r) => r.status)).toEqual([200, 200]);
    expect(upstream.requests.at(-1)!.json.tools).toEqual(declared);
  });
});

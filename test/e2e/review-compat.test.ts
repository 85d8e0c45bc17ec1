import { beforeAll, describe, expect, test } from "bun:test";
import { keyPerFormat } from "../helpers/key-per-format.ts";
import type { KeyFormat } from "../../src/wire/constants.ts";
import { usageRows } from "../helpers/keys.ts";
import { json, sse } from "../helpers/mock-upstream.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { decodeSse } from "../helpers/sse-transcripts.ts";

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
  });
});

import { expect } from "bun:test";
import { nanosToCredits } from "../../src/accounts/records.ts";
import type { KeyFormat } from "../../src/wire/constants.ts";
import { keyPerFormat } from "./key-per-format.ts";
import { usageRows } from "./keys.ts";
import type { MockUpstream } from "./mock-upstream.ts";
import { api } from "./owner-ops.ts";
import { waitFor, type TestRouter } from "./router.ts";
import { decodeSse } from "./sse-transcripts.ts";

/**
 * For the review of OpenAI- and Anthropic-compatible upstreams (review-compat*.test.ts):
 * a router with one mock per key format (`<prefix>-<format>` goes to it) and a price
 * per token kind, calls that return the client's text and the call's usage row, and
 * the answer shapes those servers send.
 */

// USD per 1M tokens: 1 token of input costs 1000 nano-credits at Rates 1.
const price = { InputText: 1, OutputText: 2, CachedText: 0.25, CacheWrite: 1.25, ContextWindow: 100000, MaxOutput: 4000 };

/** nano-credits for token counts at the compat price. */
export const cost = (t: { input?: number; cached?: number; write?: number; output?: number }) => ((t.input ?? 0) * 1 + (t.cached ?? 0) * 0.25 + (t.write ?? 0) * 1.25 + (t.output ?? 0) * 2) * 1000;

export interface CompatCall {
  status: number;
  type: string;
  text: string;
  row: Record<string, any>;
  id: string;
}

/** Registers the file's router (beforeAll/afterAll) and returns the calls a test makes through it. */
export function compatRouter(prefix: string) {
  const pairs = keyPerFormat(prefix, { pricing: { ChatPricing: { [`${prefix}-*`]: price } } });
  async function call(path: string, body: Record<string, unknown>): Promise<CompatCall> {
    const router = pairs.router;
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (path === "/v1/messages") headers["anthropic-version"] = "2023-06-01";
    const res = await router.fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
    const text = await res.text();
    const id = res.headers.get("x-request-id")!;
    const row = await waitFor(async () => (await usageRows(router)).find((r) => r.request_id === id), 5000, "usage row");
    return { status: res.status, type: res.headers.get("content-type") ?? "", text, row: row!, id };
  }
  return {
    get router(): TestRouter {
      return pairs.router;
    },
    up: (format: KeyFormat): MockUpstream => pairs.ups.get(format)!,
    call,
    chat: (model: string, stream: boolean) => call("/v1/chat/completions", { model, stream, messages: [{ role: "user", content: "hi" }] }),
    messages: (model: string, stream: boolean) => call("/v1/messages", { model, stream, max_tokens: 1000, messages: [{ role: "user", content: "hi" }] }),
    /** The request log's record of a call agrees with its usage row: status, counts, source, cost. */
    async expectLogged(r: CompatCall) {
      const record = (await api(pairs.router, `/x-requests/${r.id}`)).body as Record<string, any>;
      expect(record).toMatchObject({ status: r.row.status, source: r.row.source, cost: nanosToCredits(r.row.cost_nanos), tokens: { prompt: r.row.prompt_tokens, completion: r.row.completion_tokens, cache_read: r.row.cache_read_tokens, cache_write: r.row.cache_write_tokens, reasoning: r.row.reasoning_tokens } });
    },
  };
}

export const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({ id: "chatcmpl-c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }], ...extra });
export const completion = (usage: unknown, content = "hello") => ({ id: "chatcmpl-c", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }], usage });
export const events = (text: string): any[] => decodeSse(text).map((e) => e.data);
export const chatText = (text: string) => events(text).filter((e) => e !== "[DONE]").map((e) => e.choices?.[0]?.delta?.content ?? "").join("");
export const anthropicText = (text: string) => events(text).filter((e) => e.type === "content_block_delta").map((e) => e.delta.text ?? "").join("");
export const tokens = (row: Record<string, any>) => ({ prompt: row.prompt_tokens, completion: row.completion_tokens, cache_read: row.cache_read_tokens, cache_write: row.cache_write_tokens, reasoning: row.reasoning_tokens, source: row.source, cost: row.cost_nanos });
/** One SSE event of JSON data, lines ended by `eol`. */
export const data = (o: unknown, eol = "\n") => `data: ${JSON.stringify(o)}${eol}${eol}`;

/** A body sent in exactly these pieces (strings as UTF-8), as an upstream's TCP reads may cut it. */
export function pieces(parts: Array<string | Uint8Array>, type = "text/event-stream", headers: Record<string, string> = {}): Response {
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

import { describe, expect, test } from "bun:test";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * What a call is charged when the upstream's counts are missing or cut short
 * (docs/api.md, "Usage records"): an estimate of about four bytes a token of the body
 * in and of the delivered content out, capped by the call's bounds and marked
 * `estimated`. Found by a review of the money path: each case below was charged less
 * (or nothing) before.
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8, ContextWindow: 8000, MaxOutput: 2000 } } };
const GRANT = 10; // credits

const scope = perTest();

async function start(): Promise<{ router: TestRouter; upstream: MockUpstream }> {
  return scope.gateway({ pricing: PRICING });
}

const rowsOf = async (router: TestRouter, accountId: number) => (await usageRows(router)).filter((r) => r.account_id === accountId);

describe("a stream cut midway is charged for what it delivered", () => {
  test("Anthropic stream cut after 4000 bytes of text: the output charged must not be message_start's placeholder of 1 token", async () => {
    const { router, upstream } = await start();
    const piece = "x".repeat(199) + " ";
    const events: Array<[string, unknown]> = [
      ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "acme-chat", content: [], stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } } }],
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
      ...Array.from({ length: 20 }, (): [string, unknown] => ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: piece } }]),
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 1000 } }],
      ["message_stop", { type: "message_stop" }],
    ];
    // The connection drops after the 20 text deltas: message_delta (the real output count) never comes.
    upstream.route("POST", "/v1/messages", () => sse(events, { breakAfter: 22, delayMs: 2 }));
    const account = await createAccount(router, { CreditGranted: GRANT });
    const res = await router.fetch("/v1/messages", {
      method: "POST",
      key: account.key,
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "acme-chat", max_tokens: 2000, stream: true, messages: [{ role: "user", content: "tell me a long story" }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    // The client received all 4000 characters of text before the error event.
    expect(text.split(piece).length - 1).toBe(20);
    expect(text).toContain("event: error");
    const rows = await waitFor(async () => {
      const mine = await rowsOf(router, account.id);
      return mine.length === 1 ? mine : undefined;
    });
    const row = rows![0]!;
    expect(row.status).toBe(502);
    // About 4 bytes a token of delivered content (docs/api.md "Usage records"): ~1000 output tokens were delivered.
    expect(row.completion_tokens).toBeGreaterThanOrEqual(900);
  });
});

describe("a billable answer that is not JSON", () => {
  test("gpt-4o-transcribe (token-priced in the catalog) with response_format=text: the transcription must not be free", async () => {
    const upstream = scope.upstream();
    // The shipped catalog prices gpt-4o-transcribe by tokens (ChatPricing) only.
    const router = await scope.router({ pricing: false });
    await addKey(router, { provider: `${upstream.url}/v1` });
    const transcript = "Hello, this is a transcription of a rather long recording. ".repeat(40);
    upstream.route("POST", "/v1/audio/transcriptions", () => new Response(transcript, { headers: { "content-type": "text/plain; charset=utf-8" } }));
    const account = await createAccount(router, { CreditGranted: GRANT });
    const form = new FormData();
    form.set("model", "gpt-4o-transcribe");
    form.set("response_format", "text");
    form.set("file", new File([new Uint8Array(64_000).fill(7)], "talk.mp3", { type: "audio/mpeg" }));
    const res = await router.fetch("/v1/audio/transcriptions", { method: "POST", key: account.key, body: form });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(transcript);
    const rows = await waitFor(async () => {
      const mine = await rowsOf(router, account.id);
      return mine.length === 1 ? mine : undefined;
    });
    const row = rows![0]!;
    // The provider reported no counts: the row must be an estimate (docs/api.md "Usage records"), and it must cost something.
    expect({ source: row.source, charged: row.cost_nanos > 0 }).toEqual({ source: "estimated", charged: true });
  });
});

describe("estimates of multipart calls", () => {
  test("gpt-4o-transcribe answered in JSON without usage: the input estimate must count the uploaded body, not zero", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: false });
    await addKey(router, { provider: `${upstream.url}/v1` });
    upstream.route("POST", "/v1/audio/transcriptions", () => json({ text: "Hello there." }));
    const account = await createAccount(router, { CreditGranted: GRANT });
    const form = new FormData();
    form.set("model", "gpt-4o-transcribe");
    form.set("file", new File([new Uint8Array(40_000).fill(7)], "talk.mp3", { type: "audio/mpeg" }));
    const res = await router.fetch("/v1/audio/transcriptions", { method: "POST", key: account.key, body: form });
    expect(res.status).toBe(200);
    const rows = await waitFor(async () => {
      const mine = await rowsOf(router, account.id);
      return mine.length === 1 ? mine : undefined;
    });
    const row = rows![0]!;
    expect(row.source).toBe("estimated");
    // About 4 bytes a token of the request body (docs/api.md "Usage records"): a 40 kB upload is ~10,000 input tokens
    // (within the call's input bound of 16,000, the model's ContextWindow).
    expect(row.prompt_tokens).toBeGreaterThanOrEqual(9_000);
  });
});

describe("a call whose usage the router could not meter", () => {
  test("a background response (its counts come only when it is polled, an unmetered object call) is refused before anything is sent or reserved", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", "/v1/responses", () =>
      json({
        id: "resp_1",
        object: "response",
        created_at: 1,
        status: "completed",
        model: "acme-chat",
        output: [{ type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "An essay.", annotations: [] }] }],
        usage: { input_tokens: 20, output_tokens: 200, total_tokens: 220 },
      }),
    );
    const account = await createAccount(router, { CreditGranted: GRANT });
    const refused = await api(router, "/v1/responses", { key: account.key, body: { model: "acme-chat", background: true, input: "write a long essay" } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ param: "background", code: "unsupported_parameter" });
    expect(upstream.requests).toHaveLength(0);
    // Without it, the same call goes through and is charged.
    const plain = await api(router, "/v1/responses", { key: account.key, body: { model: "acme-chat", background: false, input: "write a long essay" } });
    expect(plain.status).toBe(200);
    const rows = await waitFor(async () => {
      const mine = await rowsOf(router, account.id);
      return mine.length === 1 ? mine : undefined;
    });
    expect(rows![0]!.cost_nanos).toBe((20 * 2 + 200 * 8) * 1000);
  });
});

import { describe, expect, test } from "bun:test";
import { availableCredit, usageRows } from "../helpers/keys.ts";
import { json, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Issue 13, item 11: a call's reservation is its true worst case (output bounded by
 * max_tokens or the model's MaxOutput, input by the body or, where the body points at
 * content it does not hold, the model's ContextWindow), and a call is admitted while
 * something is left once the calls in flight are set aside. So concurrent calls end no
 * further below zero than one call's real cost, whatever they contain.
 */

const CONTEXT = 8000;
const MAX_OUTPUT = 2000;
const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8, ContextWindow: CONTEXT, MaxOutput: MAX_OUTPUT } } };

const scope = perTest();

async function start(): Promise<{ router: TestRouter; upstream: MockUpstream }> {
  const { router, upstream } = await scope.gateway({ pricing: PRICING });
  return { router, upstream };
}

/**
 * An upstream that uses everything a call could: an image by URL costs 6000 input
 * tokens (more than the body's bytes, within the context window), and every answer
 * reaches its output limit (max_tokens, else the model's maximum) for each of `n`.
 */
function greedyUpstream(upstream: MockUpstream) {
  upstream.route("POST", "/v1/chat/completions", async (req) => {
    await Bun.sleep(10 + Math.random() * 20);
    const body = req.json as { max_tokens?: number; n?: number };
    const prompt = req.body.includes("image_url") ? 6000 : 50;
    const completion = (body.max_tokens ?? MAX_OUTPUT) * (body.n ?? 1);
    return json({ id: "c", object: "chat.completion", created: 1, model: "acme-chat", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "length" }], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });
  });
}

const cost = (prompt: number, completion: number) => (prompt * 2 + completion * 8) * 1000;

describe("reservations are true upper bounds", () => {
  test("50 concurrent calls of every kind against credit for three: the balance ends no lower than minus one call's real cost", async () => {
    const { router, upstream } = await start();
    greedyUpstream(upstream);
    const bodies = [
      { model: "acme-chat", messages: [{ role: "user", content: "hi" }] },
      { model: "acme-chat", max_tokens: 500, messages: [{ role: "user", content: "hi" }] },
      { model: "acme-chat", max_tokens: 300, n: 3, messages: [{ role: "user", content: "hi" }] },
      { model: "acme-chat", messages: [{ role: "user", content: [{ type: "text", text: "what is this?" }, { type: "image_url", image_url: { url: "https://example.com/cat.png" } }] }] },
    ];
    // The dearest real call: an image (6000 in) reaching the model's maximum output.
    const dearest = cost(6000, MAX_OUTPUT);
    const grant = 3 * dearest;
    const account = await createAccount(router, { CreditGranted: grant / 1e9 });
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        await Bun.sleep(i % 7);
        return (await api(router, "/v1/chat/completions", { key: account.key, body: bodies[i % bodies.length] })).status;
      }),
    );
    const admitted = results.filter((s) => s === 200).length;
    expect(results.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(results.filter((s) => s === 429)).toHaveLength(50 - admitted);
    expect(admitted).toBeGreaterThan(0);
    const rows = await waitFor(async () => {
      const mine = (await usageRows(router)).filter((r) => r.account_id === account.id);
      return mine.length === admitted ? mine : undefined;
    });
    const charged = rows!.reduce((sum, r) => sum + r.cost_nanos, 0);
    expect(charged).toBeLessThanOrEqual(grant + dearest);
    const status = await api(router, "/dashboard/status", { key: account.key });
    expect(Math.round(status.body.balance * 1e9)).toBe(grant - charged);
    expect(grant - charged).toBeGreaterThanOrEqual(-dearest);
  });

  test("an image by URL reserves the context window: a second call waits while the first runs", async () => {
    const { router, upstream } = await start();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    upstream.route("POST", "/v1/chat/completions", async () => {
      await gate;
      return json({ id: "c", object: "chat.completion", created: 1, model: "acme-chat", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 } });
    });
    // Room for a text call's worst case several times over, but less than the context window's.
    const textWorst = cost(200 + 1024, 100);
    const imageWorst = cost(CONTEXT, 100);
    const grant = 4 * textWorst;
    expect(imageWorst).toBeGreaterThan(grant);
    const account = await createAccount(router, { CreditGranted: grant / 1e9 });
    const image = { model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/cat.png" } }] }] };
    const text = { model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
    const first = api(router, "/v1/chat/completions", { key: account.key, body: image });
    await waitFor(() => upstream.requests.length === 1 || undefined);
    const second = await api(router, "/v1/chat/completions", { key: account.key, body: text });
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toBe("1");
    release();
    expect((await first).status).toBe(200);
    // Two text calls fit side by side: their worst cases are their bodies.
    const both = await Promise.all([api(router, "/v1/chat/completions", { key: account.key, body: text }), api(router, "/v1/chat/completions", { key: account.key, body: text })]);
    expect(both.map((r) => r.status)).toEqual([200, 200]);
  });
});

describe("ContextWindow and MaxOutput in the catalog and PRICING", () => {
  test("the catalog names them per model, PRICING overrides them, and GET /x-pricing shows them", async () => {
    const { router } = await start();
    const before = await api(router, "/x-pricing");
    expect(before.body.ChatPricing["claude-opus-4-5*"]).toMatchObject({ ContextWindow: 200000, MaxOutput: 64000 });
    expect(before.body.ChatPricing["gpt-4o"]).toMatchObject({ ContextWindow: 128000, MaxOutput: 16384 });
    expect(before.body.ChatPricing["acme-*"]).toMatchObject({ ContextWindow: CONTEXT, MaxOutput: MAX_OUTPUT });
    const put = await api(router, "/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "gpt-4o": { MaxOutput: 4096 } } } } });
    expect(put.status).toBe(200);
    const after = await api(router, "/x-pricing");
    expect(after.body.ChatPricing["gpt-4o"]).toMatchObject({ InputText: 2.5, ContextWindow: 128000, MaxOutput: 4096 });
  });

  test.each([0, -1, 1.5, "8000", 1e9])("a ContextWindow of %p is refused with 400 naming PRICING, nothing written", async (value) => {
    const { router } = await start();
    const res = await api(router, "/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "acme-*": { InputText: 1, ContextWindow: value } } } } });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe("PRICING");
    expect(res.body.error.message).toContain("ContextWindow");
    expect((await api(router, "/x-pricing")).body.ChatPricing["acme-*"]).toMatchObject({ InputText: 2, ContextWindow: CONTEXT });
  });
});

describe("a call that ends without an answer releases what it held", () => {
  const GRANT = 10; // credits
  const encoder = new TextEncoder();
  const call = { model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };

  test("an upstream 4xx whose error body breaks off while it is read: the status goes back, the reservation and the key are let go", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", "/v1/chat/completions", () => {
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(encoder.encode('{"error":{"message":"bad req'));
          await Bun.sleep(50);
          controller.error(new Error("mock: connection dropped inside the error body"));
        },
      });
      return new Response(body, { status: 400, headers: { "content-type": "application/json" } });
    });
    const account = await createAccount(router, { CreditGranted: GRANT });
    const res = await api(router, "/v1/chat/completions", { key: account.key, body: call });
    // The upstream's status, in the family's envelope, with words of the router's own.
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain("broke off");
    await usageRows(router);
    expect(await availableCredit(router, account.id)).toBe(GRANT * 1e9);
    expect(router.deps.pool.all().map((key) => key.inFlight)).toEqual([0]);
  });

  test("a State that fails between admission and the answer (a key's verdict not recorded): the call fails, its reservation and the key are let go", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", "/v1/chat/completions", () => json({ error: { message: "bad request", type: "invalid_request_error" } }, 400));
    const account = await createAccount(router, { CreditGranted: GRANT });
    const pool = router.deps.pool;
    const report = pool.report.bind(pool);
    pool.report = async () => {
      throw new Error("the State stopped answering");
    };
    try {
      const res = await api(router, "/v1/chat/completions", { key: account.key, body: call });
      expect(res.status).toBe(500);
    } finally {
      pool.report = report;
    }
    const rows = await usageRows(router);
    // Recorded as a call that failed, charged nothing.
    expect(rows.map((row) => [row.status, row.cost_nanos])).toEqual([[500, 0]]);
    expect(await availableCredit(router, account.id)).toBe(GRANT * 1e9);
    expect(pool.all().map((key) => key.inFlight)).toEqual([0]);
  });
});

import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import { DEFAULT_MAX_OUTPUT_TOKENS } from "../../src/metering/billing.ts";
import { addKey, availableCredit, usageRows } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, geminiClient, openaiClient } from "../helpers/sdk.ts";

/**
 * Credit: a call is admitted while something is left of the balance once the
 * reservations of calls in flight are set aside, whatever its own worst case; that worst
 * case is then reserved before forwarding and settled to the actual cost at the end.
 *
 * Worst case (the documented reservation rule) = body bytes + 1024 input tokens (at most
 * the context window) × the dearest input price + max_tokens (or its family's
 * equivalent, else the model's maximum output) output tokens × the dearest output
 * price, all × Rates. So N concurrent calls never spend more than the balance plus one
 * call's real cost.
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8, CachedText: 0.5, CacheWrite: 2.5, ReasonText: 12 } } };
const DEAREST_IN = 2.5;
const DEAREST_OUT = 12;
const RATES = 1.5;

const worstCase = (bodyBytes: number, maxTokens: number, rates = RATES) =>
  Math.round(((bodyBytes + 1024) * DEAREST_IN + maxTokens * DEAREST_OUT) * 1000 * rates);

/** The mock's usage for non-streaming calls: 10 in, 10 out → (10 × 2 + 10 × 8) × 1000 × Rates. */
const SMALL_USAGE = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
const smallCost = (rates = RATES) => Math.round((10 * 2 + 10 * 8) * 1000 * rates);

interface Ctx {
  router: TestRouter;
  upstream: MockUpstream;
}

async function api(router: TestRouter, path: string, init: { method?: string; body?: unknown; raw?: string; key?: string | null } = {}) {
  const res = await router.fetch(path, {
    method: init.method ?? (init.body === undefined && init.raw === undefined ? "GET" : "POST"),
    key: init.key,
    headers: { "content-type": "application/json" },
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

let emails = 0;
async function createAccount(router: TestRouter, fields: Record<string, unknown>) {
  const res = await api(router, "/x-users", { body: { Email: `credit${++emails}@example.com`, ...fields } });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.ID as number, key: res.body.APIKey as string };
}

/** Balance in nano-credits, after pending usage rows reached the ledger. */
async function balanceNanos(router: TestRouter, key?: string): Promise<number> {
  await usageRows(router);
  const res = await api(router, "/dashboard/status", { key });
  expect(res.status).toBe(200);
  return Math.round(res.body.balance * 1e9);
}

function scriptMock(upstream: MockUpstream) {
  upstream.route("POST", "/v1/chat/completions", (req) =>
    json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: SMALL_USAGE }),
  );
}

async function start(options: Parameters<typeof startRouter>[0] = {}): Promise<Ctx> {
  const upstream = startMockUpstream();
  const router = await startRouter(options);
  await addKey(router, { provider: upstream.url });
  expect((await api(router, "/x-config", { method: "PUT", body: { PRICING } })).status).toBe(200);
  return { router, upstream };
}

describe("balance and the worst case", () => {
  let ctx: Ctx;
  beforeAll(async () => {
    ctx = await start();
  });
  afterAll(async () => {
    await ctx.router.stop();
    await ctx.upstream.stop();
  });
  beforeEach(() => {
    ctx.upstream.reset();
    scriptMock(ctx.upstream);
  });

  const BODY = JSON.stringify({ model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
  const W = worstCase(BODY.length, 100);

  test("any balance above zero admits a call, whatever its worst case; none or less does not, and the SDKs are told not to retry", async () => {
    expect(W).toBeGreaterThan(30 * smallCost());
    const tiny = await createAccount(ctx.router, { CreditGranted: 1e-9, Rates: RATES });
    const none = await createAccount(ctx.router, { Rates: RATES });

    const refused = await api(ctx.router, "/v1/chat/completions", { key: none.key, raw: BODY });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("insufficient_credit");
    expect(refused.body.error.type).toBe("rate_limit_error");
    expect(refused.body.error.message).toContain("credit");
    expect(refused.headers.get("x-should-retry")).toBe("false");
    expect(ctx.upstream.requests).toHaveLength(0);

    // One nano-credit left: the call runs and is charged in full, so the balance goes below zero by less than one call.
    expect((await api(ctx.router, "/v1/chat/completions", { key: tiny.key, raw: BODY })).status).toBe(200);
    expect(await balanceNanos(ctx.router, tiny.key)).toBe(1 - smallCost());
    const again = await api(ctx.router, "/v1/chat/completions", { key: tiny.key, raw: BODY });
    expect(again.status).toBe(429);
    expect(again.body.error.code).toBe("insufficient_credit");
    expect(again.headers.get("x-should-retry")).toBe("false");
    expect(ctx.upstream.requests).toHaveLength(1);
    // Refused calls leave no usage row and cost nothing.
    expect((await usageRows(ctx.router)).filter((r) => r.account_id === none.id)).toHaveLength(0);
    expect((await usageRows(ctx.router)).filter((r) => r.account_id === tiny.id)).toHaveLength(1);
  });

  test("calls succeed until the balance is used up: the last one may overshoot it by at most its own cost", async () => {
    const grant = Math.round(2.5 * smallCost());
    const acct = await createAccount(ctx.router, { CreditGranted: grant / 1e9, Rates: RATES });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await api(ctx.router, "/v1/chat/completions", { key: acct.key, raw: BODY })).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(ctx.upstream.requests).toHaveLength(3);
    expect(await balanceNanos(ctx.router, acct.key)).toBe(grant - 3 * smallCost());
  });

  test("a worst case far above the balance runs alone: a second call meanwhile waits for it (Retry-After 1)", async () => {
    const acct = await createAccount(ctx.router, { CreditGranted: 10 * smallCost() / 1e9, Rates: RATES });
    ctx.upstream.reset();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    ctx.upstream.route("POST", "/v1/chat/completions", async (req) => {
      await gate;
      return json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: SMALL_USAGE });
    });
    // No max_tokens: the default maximum output, far more than ten small calls cost.
    const none = JSON.stringify({ model: "acme-chat", messages: [{ role: "user", content: "hi" }] });
    expect(worstCase(none.length, DEFAULT_MAX_OUTPUT_TOKENS)).toBeGreaterThan(10 * smallCost());
    const first = api(ctx.router, "/v1/chat/completions", { key: acct.key, raw: none });
    await waitFor(() => ctx.upstream.requests.length === 1 || undefined, 5000, "the first call upstream");
    const second = await api(ctx.router, "/v1/chat/completions", { key: acct.key, raw: none });
    expect(second.status).toBe(429);
    expect(second.body.error.code).toBe("insufficient_credit");
    expect(second.headers.get("retry-after")).toBe("1");
    expect(second.headers.get("x-should-retry")).toBeNull();
    release();
    expect((await first).status).toBe(200);
    // Settled to its real cost: the account runs calls again.
    expect((await api(ctx.router, "/v1/chat/completions", { key: acct.key, raw: none })).status).toBe(200);
    expect(await balanceNanos(ctx.router, acct.key)).toBe(8 * smallCost());
  });

  test("the refusal is a 429 in each family's envelope, as the SDKs expect", async () => {
    const broke = await createAccount(ctx.router, { Rates: RATES });
    const anthropic = await api(ctx.router, "/v1/messages", { key: broke.key, body: { model: "acme-claude", max_tokens: 10, messages: [{ role: "user", content: "x" }] } });
    expect(anthropic.status).toBe(429);
    expect(anthropic.body).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
    expect(anthropic.body.error.message).toContain("credit");

    const gemini = await api(ctx.router, "/v1beta/models/acme-gem:generateContent", { key: broke.key, body: { contents: [{ parts: [{ text: "x" }] }] } });
    expect(gemini.status).toBe(429);
    expect(gemini.body.error).toMatchObject({ code: 429, status: "RESOURCE_EXHAUSTED" });
    expect(gemini.body.error.message).toContain("credit");

    const openaiError = await openaiClient(ctx.router.url, broke.key)
      .chat.completions.create({ model: "acme-chat", messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(openaiError.status).toBe(429);
    expect(openaiError.code).toBe("insufficient_credit");
    const anthropicError = await anthropicClient(ctx.router.url, broke.key)
      .messages.create({ model: "acme-claude", max_tokens: 10, messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(anthropicError.status).toBe(429);
    expect(ctx.upstream.requests).toHaveLength(0);
  });

  test("owners are never refused for balance, but are charged like anyone else", async () => {
    const before = await balanceNanos(ctx.router);
    const seen = (await usageRows(ctx.router)).filter((r) => r.account_id === 1).length;
    // Far beyond any balance the owner has: 1M output tokens at 12/1M.
    const body = JSON.stringify({ model: "acme-chat", max_tokens: 1_000_000, messages: [{ role: "user", content: "hi" }] });
    for (let i = 0; i < 2; i++) expect((await api(ctx.router, "/v1/chat/completions", { raw: body })).status).toBe(200);
    const rows = (await usageRows(ctx.router)).filter((r) => r.account_id === 1).slice(seen);
    expect(rows.map((r) => r.cost_nanos)).toEqual([smallCost(1), smallCost(1)]);
    const after = await balanceNanos(ctx.router);
    expect(before - after).toBe(2 * smallCost(1));
    expect(after).toBeLessThan(0);
  });
});

describe("concurrency", () => {
  let ctx: Ctx;
  beforeAll(async () => {
    ctx = await start();
  });
  afterAll(async () => {
    await ctx.router.stop();
    await ctx.upstream.stop();
  });

  test("60 concurrent streams against a balance that covers a few: overspend bounded by one call's real cost, no charge lost or doubled", async () => {
    const MAX = 1000;
    // Every stream reports 20 in and 1000 out, all reasoning: (20 × 2 + 1000 × 12) × 1000 × 1.5
    const actual = Math.round((20 * 2 + 1000 * 12) * 1000 * RATES);
    const grant = 100_000_000; // 0.1 credits: five or six calls' worth
    const acct = await createAccount(ctx.router, { CreditGranted: grant / 1e9, Rates: RATES });
    const { upstream } = ctx;
    upstream.reset();
    const chunk = (content: string | null, usage?: unknown) => ({
      id: "c",
      object: "chat.completion.chunk",
      created: 1,
      model: "acme-chat",
      choices: content === null ? [] : [{ index: 0, delta: { content }, finish_reason: null }],
      ...(usage ? { usage } : {}),
    });
    upstream.route("POST", "/v1/chat/completions", () =>
      sse(
        [
          chunk("a"),
          chunk("b"),
          chunk("c"),
          chunk(null, { prompt_tokens: 20, completion_tokens: MAX, total_tokens: 20 + MAX, completion_tokens_details: { reasoning_tokens: MAX } }),
        ],
        { done: true, delayMs: 5 },
      ),
    );
    upstream.route("POST", "/v1/messages", (req) =>
      sse([
        ["message_start", { type: "message_start", message: { id: "m", type: "message", role: "assistant", model: req.json.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 20, output_tokens: 1 } } }],
        ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
        ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "abc" } }],
        ["content_block_stop", { type: "content_block_stop", index: 0 }],
        ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: MAX, output_tokens_details: { thinking_tokens: MAX } } }],
        ["message_stop", { type: "message_stop" }],
      ], { delayMs: 5 }),
    );
    upstream.route("POST", /:streamGenerateContent$/, () =>
      sse(
        [
          { candidates: [{ content: { role: "model", parts: [{ text: "a" }] }, index: 0 }], usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 1 } },
          { candidates: [{ content: { role: "model", parts: [{ text: "b" }] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 0, thoughtsTokenCount: MAX } },
        ],
        { delayMs: 5 },
      ),
    );

    const openai = openaiClient(ctx.router.url, acct.key);
    const anthropic = anthropicClient(ctx.router.url, acct.key);
    const gemini = geminiClient(ctx.router.url, acct.key);
    const call = async (i: number): Promise<number> => {
      await Bun.sleep((i % 10) * 3);
      try {
        if (i % 3 === 0) {
          const stream = await openai.chat.completions.create({ model: "acme-chat", max_tokens: MAX, messages: [{ role: "user", content: "go" }], stream: true });
          for await (const _ of stream);
        } else if (i % 3 === 1) {
          await anthropic.messages.stream({ model: "acme-claude", max_tokens: MAX, messages: [{ role: "user", content: "go" }] }).finalMessage();
        } else {
          for await (const _ of await gemini.models.generateContentStream({ model: "acme-gem", contents: "go", config: { maxOutputTokens: MAX } }));
        }
        return 200;
      } catch (error) {
        return (error as { status?: number }).status ?? -1;
      }
    };
    const statuses = await Promise.all(Array.from({ length: 60 }, (_, i) => call(i)));
    const admitted = statuses.filter((s) => s === 200).length;
    const refused = statuses.filter((s) => s === 429).length;
    expect(admitted + refused).toBe(60);
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThan(60);
    // Refused calls never reached the upstream.
    expect(upstream.requests).toHaveLength(admitted);

    const rows = await waitFor(async () => {
      const mine = (await usageRows(ctx.router)).filter((r) => r.account_id === acct.id);
      return mine.length === admitted ? mine : undefined;
    }, 5000, "a usage row per admitted stream");
    expect(rows!.every((r) => r.status === 200 && r.cost_nanos === actual)).toBe(true);
    const charged = rows!.reduce((sum, r) => sum + r.cost_nanos, 0);
    expect(charged).toBeLessThanOrEqual(grant + actual);
    // Every charge reached the ledger exactly once.
    expect(grant - (await balanceNanos(ctx.router, acct.key))).toBe(charged);
    // And nothing is left reserved: the account can still spend what is left.
    expect(await availableCredit(ctx.router, acct.id)).toBe(grant - charged);
  });
});

describe("credit expiry", () => {
  const DAY = 86_400_000;
  const clock = createManualClock(Date.UTC(2026, 0, 10, 12));
  let ctx: Ctx;
  beforeAll(async () => {
    ctx = await start({ clock });
    scriptMock(ctx.upstream);
  });
  afterAll(async () => {
    await ctx.router.stop();
    await ctx.upstream.stop();
  });

  test("credit granted for one day is spendable that day and not two days later; charges draw from it first", async () => {
    const acct = await createAccount(ctx.router, { CreditGranted: 1, Days: 1, Rates: RATES });
    // A second grant without expiry, smaller than a call's worst case.
    expect((await api(ctx.router, `/x-users/${acct.id}`, { method: "PUT", body: { CreditGranted: 0.001 } })).status).toBe(200);
    const body = { model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
    expect((await api(ctx.router, "/v1/chat/completions", { key: acct.key, body })).status).toBe(200);
    expect(await balanceNanos(ctx.router, acct.key)).toBe(1_001_000_000 - smallCost());

    clock.advance(2 * DAY);
    // The expiring grant paid for the call; the one without expiry is whole.
    expect(await balanceNanos(ctx.router, acct.key)).toBe(1_000_000);
    // Only that is left to spend: seven calls of 150,000 (the last one overshooting it), then refusals.
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await api(ctx.router, "/v1/chat/completions", { key: acct.key, body })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 429]);
    expect(ctx.upstream.requests).toHaveLength(8);
    expect(await balanceNanos(ctx.router, acct.key)).toBe(1_000_000 - 7 * smallCost());
  });
});

import { describe, expect, test } from "bun:test";
import { addKey, heldCredit, usageRows } from "../helpers/keys.ts";
import { json, type MockUpstream, type RecordedRequest } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Money on the endpoints beside chat (docs/api.md, "Pricing and charging"): embeddings,
 * legacy completions, Gemini generateContent and embeddings, transcriptions, images.
 * A call's reservation must be an upper bound of what it is then charged, whatever the
 * endpoint: otherwise calls admitted together pass the balance by more than one call's
 * real cost. Each case below was found by a review of these endpoints.
 */

const PRICING = {
  ChatPricing: {
    "acme-embed": { InputText: 1000, OutputText: 0, ContextWindow: 512 },
    "acme-gembed": { InputText: 1000, OutputText: 0, ContextWindow: 2048 },
    "acme-text": { InputText: 0, OutputText: 1000, MaxOutput: 4000 },
    "acme-gem": { InputText: 0, OutputText: 1000, MaxOutput: 1000 },
  },
  // $1 a second of audio.
  AudioPricing: { "acme-whisper": { PerMinute: 60 } },
  ImgPricing: { "acme-img": { Sizes: { "1024x1024": 0.05 } } },
};

const scope = perTest();

const credits = (nanos: number) => nanos / 1e9;

async function start(): Promise<{ router: TestRouter; upstream: MockUpstream }> {
  return scope.gateway({ pricing: PRICING });
}

const rowsOf = async (router: TestRouter, accountId: number) => (await usageRows(router)).filter((r) => r.account_id === accountId);

async function balanceOf(router: TestRouter, key: string): Promise<number> {
  return (await api(router, "/dashboard/status", { key })).body.balance;
}

/** The account's balance once each of its `admitted` calls left its usage row. */
async function settledBalance(router: TestRouter, account: { id: number; key: string }, admitted: number): Promise<number> {
  await waitFor(async () => (await rowsOf(router, account.id)).length === admitted, 5000, "usage rows");
  return balanceOf(router, account.key);
}

/** The account's one usage row. */
async function onlyRow(router: TestRouter, accountId: number): Promise<Record<string, any>> {
  const rows = await waitFor(async () => {
    const mine = await rowsOf(router, accountId);
    return mine.length === 1 ? mine : undefined;
  });
  return rows![0]!;
}

/**
 * Three calls sent at once while the upstream holds its answers until each call was
 * either refused or reached it: the calls admitted together, as concurrent clients get
 * them. Returns their statuses once all ended.
 */
async function overlapping(upstream: MockUpstream, method: string, path: string | RegExp, answer: (req: RecordedRequest) => Response, send: () => Promise<Response>): Promise<number[]> {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  upstream.route(method, path, async (req) => {
    await gate;
    return answer(req);
  });
  let refused = 0;
  const calls = Array.from({ length: 3 }, async () => {
    const res = await send();
    if (res.status !== 200) refused++;
    await res.arrayBuffer();
    return res.status;
  });
  await waitFor(() => upstream.requests.length + refused === 3, 5000, "every call refused or upstream");
  open();
  return Promise.all(calls);
}

describe("embeddings: the context window bounds each input, not the call", () => {
  test("OpenAI embeddings of 20 inputs: calls admitted together pass the balance by no more than one call", async () => {
    const { router, upstream } = await start();
    // 20 inputs of 1500 bytes, 300 tokens each (within the model's context window of 512 per input).
    const input = Array.from({ length: 20 }, (_, i) => `${i} ${"word ".repeat(300)}`.slice(0, 1500));
    const cost = 20 * 300 * 1000 * 1000; // nano-credits: 6000 tokens at 1000 USD per 1M
    const account = await createAccount(router, { CreditGranted: credits(cost) });
    const statuses = await overlapping(
      upstream,
      "POST",
      "/v1/embeddings",
      () => json({ object: "list", data: input.map((_, index) => ({ object: "embedding", index, embedding: [0.1] })), model: "acme-embed", usage: { prompt_tokens: 6000, total_tokens: 6000 } }),
      () => router.fetch("/v1/embeddings", { method: "POST", key: account.key, headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "acme-embed", input }) }),
    );
    const admitted = statuses.filter((s) => s === 200).length;
    const balance = await settledBalance(router, account, admitted);
    // Before: each call reserved the 512 tokens of one input's context window, so all three ran (balance -2 calls).
    expect({ admitted, balanceAtLeastMinusOneCall: balance >= -credits(cost) }).toEqual({ admitted: 1, balanceAtLeastMinusOneCall: true });
  });

  test("Gemini batchEmbedContents answered without usage: the estimate counts the whole batch, not one context window", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", /batchEmbedContents$/, (req) => json({ embeddings: (req.json as { requests: unknown[] }).requests.map(() => ({ values: [0.1, 0.2] })) }));
    const text = "lorem ipsum dolor sit amet ".repeat(30).slice(0, 800);
    const requests = Array.from({ length: 50 }, () => ({ model: "models/acme-gembed", content: { parts: [{ text }] } }));
    const account = await createAccount(router, { CreditGranted: 100 });
    const res = await router.fetch("/v1beta/models/acme-gembed:batchEmbedContents", { method: "POST", key: account.key, headers: { "content-type": "application/json" }, body: JSON.stringify({ requests }) });
    expect(res.status).toBe(200);
    const row = await onlyRow(router, account.id);
    expect(row.source).toBe("estimated");
    // About 4 bytes a token of 40,000 bytes of text (docs/api.md "Usage records"); before, capped at the context window of 2048.
    expect(row.prompt_tokens).toBeGreaterThanOrEqual(50 * 800 / 4);
    expect(row.cost_nanos).toBe(row.prompt_tokens * 1000 * 1000);
  });
});

describe("legacy completions: every prompt and every candidate may reach max_tokens", () => {
  const completion = (tokens: number) => json({ id: "cmpl", object: "text_completion", created: 1, model: "acme-text", choices: [{ index: 0, text: "ok", finish_reason: "length" }], usage: { prompt_tokens: 0, completion_tokens: tokens, total_tokens: tokens } });

  test("a prompt array of four, max_tokens 500: four answers of up to 500 tokens", async () => {
    const { router, upstream } = await start();
    const cost = 2000 * 1000 * 1000;
    const account = await createAccount(router, { CreditGranted: credits(cost) });
    const statuses = await overlapping(upstream, "POST", "/v1/completions", () => completion(2000), () =>
      router.fetch("/v1/completions", { method: "POST", key: account.key, headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "acme-text", prompt: ["a", "b", "c", "d"], max_tokens: 500 }) }),
    );
    const admitted = statuses.filter((s) => s === 200).length;
    const balance = await settledBalance(router, account, admitted);
    expect({ admitted, balanceAtLeastMinusOneCall: balance >= -credits(cost) }).toEqual({ admitted: 1, balanceAtLeastMinusOneCall: true });
  });

  test("best_of 4 with max_tokens 500: the upstream generates (and bills) four candidates", async () => {
    const { router, upstream } = await start();
    const cost = 2000 * 1000 * 1000;
    const account = await createAccount(router, { CreditGranted: credits(cost) });
    const statuses = await overlapping(upstream, "POST", "/v1/completions", () => completion(2000), () =>
      router.fetch("/v1/completions", { method: "POST", key: account.key, headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "acme-text", prompt: "a", best_of: 4, n: 1, max_tokens: 500 }) }),
    );
    const admitted = statuses.filter((s) => s === 200).length;
    const balance = await settledBalance(router, account, admitted);
    expect({ admitted, balanceAtLeastMinusOneCall: balance >= -credits(cost) }).toEqual({ admitted: 1, balanceAtLeastMinusOneCall: true });
  });
});

describe("Gemini generateContent: the snake_case spelling Google's API also reads", () => {
  test("generation_config.candidate_count 4: four candidates, each up to the model's MaxOutput", async () => {
    const { router, upstream } = await start();
    const cost = 4000 * 1000 * 1000;
    const account = await createAccount(router, { CreditGranted: credits(cost) });
    const answer = () =>
      json({
        candidates: [0, 1, 2, 3].map((index) => ({ index, content: { role: "model", parts: [{ text: "ok" }] }, finishReason: "MAX_TOKENS" })),
        usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 4000, totalTokenCount: 4005 },
      });
    const statuses = await overlapping(upstream, "POST", /generateContent$/, answer, () =>
      router.fetch("/v1beta/models/acme-gem:generateContent", {
        method: "POST",
        key: account.key,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "write" }] }], generation_config: { candidate_count: 4 } }),
      }),
    );
    const admitted = statuses.filter((s) => s === 200).length;
    const balance = await settledBalance(router, account, admitted);
    expect({ admitted, balanceAtLeastMinusOneCall: balance >= -credits(cost) }).toEqual({ admitted: 1, balanceAtLeastMinusOneCall: true });
  });
});

describe("an output limit in another family's spelling", () => {
  test("a Chat call naming its limit max_output_tokens (Responses'), translated for a Gemini key that ignores it: charged no more than it reserved", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING });
    await addKey(router, { provider: upstream.url, config: { provider_type: "standard", formats: ["gemini"] } });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // Gemini's own default: without maxOutputTokens an answer may run to the model's maximum.
    upstream.route("POST", /generateContent$/, async (req) => {
      await gate;
      const limit = (req.json as { generationConfig?: { maxOutputTokens?: number } }).generationConfig?.maxOutputTokens ?? 1000;
      return json({ candidates: [{ index: 0, content: { role: "model", parts: [{ text: "ok" }] }, finishReason: "MAX_TOKENS" }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: limit, totalTokenCount: limit + 5 } });
    });
    const account = await createAccount(router, { CreditGranted: 100 });
    const call = api(router, "/v1/chat/completions", { key: account.key, body: { model: "acme-gem", max_output_tokens: 10, messages: [{ role: "user", content: "write" }] } });
    await waitFor(() => upstream.requests.length === 1);
    const reserved = await heldCredit(router, account.id);
    open();
    expect((await call).status).toBe(200);
    const row = await onlyRow(router, account.id);
    expect(row.cost_nanos).toBeGreaterThan(0);
    expect(row.cost_nanos).toBeLessThanOrEqual(reserved);
  });
});

describe("transcriptions priced per minute", () => {
  const form = (bytes: number, format?: string) => {
    const body = new FormData();
    body.set("model", "acme-whisper");
    if (format) body.set("response_format", format);
    body.set("file", new File([new Uint8Array(bytes).fill(7)], "note.ogg", { type: "audio/ogg" }));
    return body;
  };

  test("a 16 kbit/s voice note (32 kB, 16 s): calls admitted together pass the balance by no more than one call", async () => {
    const { router, upstream } = await start();
    const cost = 16 * 1e9; // 16 s at $1 a second
    const account = await createAccount(router, { CreditGranted: credits(cost) });
    const statuses = await overlapping(upstream, "POST", "/v1/audio/transcriptions", () => json({ task: "transcribe", language: "english", duration: 16, text: "hello" }), () =>
      router.fetch("/v1/audio/transcriptions", { method: "POST", key: account.key, body: form(32_000, "verbose_json") }),
    );
    const admitted = statuses.filter((s) => s === 200).length;
    const balance = await settledBalance(router, account, admitted);
    // Before: the reservation assumed 64 kbit/s (4 s), so all three ran and the balance ended at -2 calls.
    expect({ admitted, balanceAtLeastMinusOneCall: balance >= -credits(cost) }).toEqual({ admitted: 1, balanceAtLeastMinusOneCall: true });
  });

  test("a transcript asked as text reports no duration: its charge is an estimate and its row says so", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", "/v1/audio/transcriptions", () => new Response("hello there\n", { headers: { "content-type": "text/plain; charset=utf-8" } }));
    const account = await createAccount(router, { CreditGranted: 100 });
    const res = await router.fetch("/v1/audio/transcriptions", { method: "POST", key: account.key, body: form(32_000, "text") });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("hello there\n");
    const row = await onlyRow(router, account.id);
    // Charged from the upload's size (docs/api.md "Cost of a call"), not from anything the upstream reported.
    expect({ source: row.source, charged: row.cost_nanos > 0 }).toEqual({ source: "estimated", charged: true });
  });
});

describe("images priced per size", () => {
  test("a size the model's ImgPricing does not list, with no Call price, is refused as unpriced rather than served free", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", "/v1/images/generations", () => json({ created: 1, data: [{ url: "https://example.com/a.png" }] }));
    const account = await createAccount(router, { CreditGranted: 100 });
    const res = await api(router, "/v1/images/generations", { key: account.key, body: { model: "acme-img", prompt: "a cat", size: "1536x1024" } });
    expect({ status: res.status, code: res.body.error?.code, upstreamCalls: upstream.requests.length }).toEqual({ status: 400, code: "model_not_priced", upstreamCalls: 0 });
    // A listed size is served and charged its price.
    const listed = await api(router, "/v1/images/generations", { key: account.key, body: { model: "acme-img", prompt: "a cat", size: "1024x1024" } });
    expect(listed.status).toBe(200);
    const row = await onlyRow(router, account.id);
    expect(row.cost_nanos).toBe(0.05 * 1e9);
  });
});

describe("guards: access, limits and non-answers on the endpoints beside chat", () => {
  const transcription = (model: string) => {
    const body = new FormData();
    body.set("model", model);
    body.set("file", new File([new Uint8Array(8000).fill(7)], "note.ogg", { type: "audio/ogg" }));
    return body;
  };
  const gemini = (router: TestRouter, key: string) =>
    router.fetch("/v1beta/models/acme-gem:generateContent", { method: "POST", key, headers: { "content-type": "application/json" }, body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }) });

  test("AllowModels and ModelLimits hold for a model named in a form field and in a Gemini path", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", "/v1/audio/transcriptions", () => json({ text: "hi", duration: 1 }));
    upstream.route("POST", /generateContent$/, () => json({ candidates: [{ index: 0, content: { role: "model", parts: [{ text: "ok" }] } }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1 } }));
    const narrow = await createAccount(router, { CreditGranted: 100, AllowModels: "acme-gem" });
    const refused = await router.fetch("/v1/audio/transcriptions", { method: "POST", key: narrow.key, body: transcription("acme-whisper") });
    expect({ status: refused.status, code: (await refused.json()).error.code, upstreamCalls: upstream.requests.length }).toEqual({ status: 403, code: "model_not_allowed", upstreamCalls: 0 });
    const limited = await createAccount(router, { CreditGranted: 100, ModelLimits: { "acme-whisper": { rpm: 1 }, "acme-gem": { rpm: 1 } } });
    const statuses = [];
    for (let i = 0; i < 2; i++) statuses.push((await router.fetch("/v1/audio/transcriptions", { method: "POST", key: limited.key, body: transcription("acme-whisper") })).status);
    for (let i = 0; i < 2; i++) statuses.push((await gemini(router, limited.key)).status);
    expect(statuses).toEqual([200, 429, 200, 429]);
    expect(upstream.requests).toHaveLength(2);
  });

  test("a transcription the upstream refuses (400) or fails (500) is not charged, and its reservation is let go", async () => {
    const { router, upstream } = await start();
    upstream.once(() => json({ error: { message: "Invalid file format.", type: "invalid_request_error" } }, 400));
    upstream.route("POST", "/v1/audio/transcriptions", () => json({ error: { message: "boom" } }, 500));
    const account = await createAccount(router, { CreditGranted: 100 });
    expect((await router.fetch("/v1/audio/transcriptions", { method: "POST", key: account.key, body: transcription("acme-whisper") })).status).toBe(400);
    expect((await router.fetch("/v1/audio/transcriptions", { method: "POST", key: account.key, body: transcription("acme-whisper") })).status).toBe(502);
    const rows = await waitFor(async () => {
      const mine = await rowsOf(router, account.id);
      return mine.length === 2 ? mine : undefined;
    });
    expect(rows!.map((r) => [r.status, r.cost_nanos])).toEqual([
      [400, 0],
      [502, 0],
    ]);
    expect(await heldCredit(router, account.id)).toBe(0);
    expect(await balanceOf(router, account.key)).toBe(100);
  });

  test("a client that leaves a transcription before its answer: the answer that comes is charged (499), the rest let go", async () => {
    const { router, upstream } = await start();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    upstream.route("POST", "/v1/audio/transcriptions", async () => {
      await gate;
      return json({ text: "hi", duration: 3 });
    });
    const account = await createAccount(router, { CreditGranted: 100 });
    const leave = new AbortController();
    const call = router.fetch("/v1/audio/transcriptions", { method: "POST", key: account.key, body: transcription("acme-whisper"), signal: leave.signal }).catch(() => undefined);
    await waitFor(() => upstream.requests.length === 1);
    leave.abort();
    await call;
    // The router learns that a client left when the runtime sees its socket close, a
    // moment after the client's own abort; the upstream answers after that moment.
    await Bun.sleep(100);
    open();
    const row = await onlyRow(router, account.id);
    expect({ status: row.status, cost: row.cost_nanos }).toEqual({ status: 499, cost: 3 * 1e9 });
    expect(await heldCredit(router, account.id)).toBe(0);
    expect(await balanceOf(router, account.key)).toBe(97);
  });
});

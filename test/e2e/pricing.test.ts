import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { CATALOG } from "../../src/metering/pricing/price-book.ts";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, openaiClient } from "../helpers/sdk.ts";

/**
 * Issue 5, pricing: the built-in catalog, unpriced models refused, PRICING overrides
 * through /x-config (validation, effect on the next request, DELETE restoring the
 * defaults) and GET /x-pricing.
 */

let router: TestRouter;
let upstream: MockUpstream;
let account: { id: number; key: string };

async function api(path: string, init: { method?: string; body?: unknown; raw?: string; key?: string | null } = {}) {
  const res = await router.fetch(path, {
    method: init.method ?? (init.body === undefined && init.raw === undefined ? "GET" : "POST"),
    key: init.key,
    headers: { "content-type": "application/json" },
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const usage = {
  prompt_tokens: 1000,
  completion_tokens: 500,
  total_tokens: 1500,
  prompt_tokens_details: { cached_tokens: 200 },
  completion_tokens_details: { reasoning_tokens: 100 },
};

async function chargeOf(model: string): Promise<number> {
  const seen = (await usageRows(router)).filter((r) => r.account_id === account.id).length;
  const client = openaiClient(router.url, account.key);
  await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] });
  const row = await waitFor(async () => (await usageRows(router)).filter((r) => r.account_id === account.id)[seen], 5000, "usage row");
  return row!.cost_nanos;
}

/** The catalog price of the usage above for gpt-4o-mini (0.15 in, 0.075 cached, 0.6 out; no ReasonText). */
const CATALOG_COST = (800 * 0.15 + 200 * 0.075 + 500 * 0.6) * 1000;

beforeAll(async () => {
  upstream = startMockUpstream();
  // As a real deployment starts: the built-in catalog only.
  router = await startRouter({ pricing: false });
  await addKey(router, { provider: upstream.url });
  const created = await api("/x-users", { body: { Email: "pricing@example.com", CreditGranted: 50 } });
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
    json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage }),
  );
  upstream.route("POST", "/v1/messages", (req) =>
    json({ id: "m", type: "message", role: "assistant", model: req.json.model, content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } }),
  );
});

describe("unpriced models", () => {
  test("are refused with 400 saying how to price them, in each family's envelope, and never forwarded", async () => {
    const openai = await api("/v1/chat/completions", { key: account.key, body: { model: "acme-unpriced", messages: [] } });
    expect(openai.status).toBe(400);
    expect(openai.body.error.param).toBe("model");
    expect(openai.body.error.code).toBe("model_not_priced");
    expect(openai.body.error.message).toContain("acme-unpriced");
    expect(openai.body.error.message).toContain("PUT /x-config");
    expect(openai.body.error.message).toContain("PRICING");
    expect(openai.body.error.message).toContain("ChatPricing");

    const anthropic = await api("/v1/messages", { key: account.key, body: { model: "acme-unpriced", max_tokens: 5, messages: [] } });
    expect(anthropic.status).toBe(400);
    expect(anthropic.body).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(anthropic.body.error.message).toContain("PRICING");

    const gemini = await api("/v1beta/models/acme-unpriced:generateContent", { key: account.key, body: { contents: [] } });
    expect(gemini.status).toBe(400);
    expect(gemini.body.error).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
    expect(gemini.body.error.message).toContain("PRICING");

    // The owner is refused too: an unpriced model is never served free.
    const owner = await api("/v1/chat/completions", { body: { model: "acme-unpriced", messages: [] } });
    expect(owner.status).toBe(400);
    expect(upstream.requests).toHaveLength(0);
  });

  test("the SDK sees a BadRequestError", async () => {
    const client = anthropicClient(router.url, account.key);
    const error = await client.messages.create({ model: "acme-unpriced", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).catch((e) => e);
    expect(error.status).toBe(400);
    expect(String(error.message)).toContain("PRICING");
    expect(upstream.requests).toHaveLength(0);
  });
});

describe("catalog prices and PRICING overrides", () => {
  test("a catalog model is served and charged at the catalog price", async () => {
    expect(CATALOG.ChatPricing["gpt-4o-mini"]).toMatchObject({ InputText: 0.15, CachedText: 0.075, OutputText: 0.6 });
    expect(await chargeOf("gpt-4o-mini")).toBe(Math.round(CATALOG_COST));
    // A dated snapshot is priced by the catalog's pattern.
    expect(await chargeOf("gpt-4o-mini-2024-07-18")).toBe(Math.round(CATALOG_COST));
    expect(upstream.requests).toHaveLength(2);
  });

  test("PRICING changes the price on the next request; DELETE /x-config without a body restores the defaults", async () => {
    const put = await api("/x-config", {
      method: "PUT",
      body: { PRICING: { ChatPricing: { "gpt-4o-mini": { InputText: 1 }, "acme-*": { InputText: 1.5, OutputText: 6 } } } },
    });
    expect(put.status).toBe(200);
    expect(put.body.configs.PRICING).toEqual({ ChatPricing: { "gpt-4o-mini": { InputText: 1 }, "acme-*": { InputText: 1.5, OutputText: 6 } } });
    // Member-level: only InputText changed, CachedText and OutputText stay the catalog's.
    expect(await chargeOf("gpt-4o-mini")).toBe((800 * 1 + 200 * 0.075 + 500 * 0.6) * 1000);
    // A model the catalog lacks is now priced (and served): 1000 × 1.5 + 500 × 6.
    expect(await chargeOf("acme-new")).toBe((1000 * 1.5 + 500 * 6) * 1000);

    const reset = await api("/x-config", { method: "DELETE" });
    expect(reset.status).toBe(200);
    expect(reset.body.configs.PRICING).toBeUndefined();
    expect(await chargeOf("gpt-4o-mini")).toBe(Math.round(CATALOG_COST));
    const again = await api("/v1/chat/completions", { key: account.key, body: { model: "acme-new", messages: [] } });
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe("model_not_priced");
  });

  test("a model priced at zero is served free", async () => {
    expect((await api("/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "free-*": { InputText: 0, OutputText: 0 } } } } })).status).toBe(200);
    expect(await chargeOf("free-model")).toBe(0);
    expect((await api("/x-config", { method: "DELETE" })).status).toBe(200);
  });
});

describe("PRICING validation through PUT /x-config", () => {
  const refused = async (pricing: unknown, ...mentions: string[]) => {
    const before = await api("/x-config");
    const res = await api("/x-config", { method: "PUT", body: { PRICING: pricing } });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe("PRICING");
    for (const m of mentions) expect(res.body.error.message).toContain(m);
    // Nothing was written.
    expect((await api("/x-config")).body).toEqual(before.body);
    return res.body.error.message as string;
  };

  beforeAll(async () => {
    expect((await api("/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "keep-*": { InputText: 1 } } } } })).status).toBe(200);
  });
  afterAll(async () => {
    await api("/x-config", { method: "DELETE" });
  });

  test("an unknown section", async () => {
    await refused({ ChatPrices: { m: { InputText: 1 } } }, "ChatPrices");
  });

  test("an unknown member", async () => {
    await refused({ ChatPricing: { "acme-x": { InputText: 1, InputTokens: 2 } } }, 'ChatPricing["acme-x"].InputTokens');
  });

  test("a negative price", async () => {
    await refused({ ChatPricing: { "acme-x": { OutputText: -1 } } }, 'ChatPricing["acme-x"].OutputText', "non-negative");
  });

  test('a number given as a string ("1")', async () => {
    await refused({ AudioPricing: { "acme-voice": { PerMinute: "1" } } }, 'AudioPricing["acme-voice"].PerMinute');
  });

  test("Infinity (1e400 in the JSON body)", async () => {
    const res = await api("/x-config", { method: "PUT", raw: '{"PRICING":{"ChatPricing":{"acme-inf":{"InputText":1e400}}}}' });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe("PRICING");
    expect(res.body.error.message).toContain('ChatPricing["acme-inf"].InputText');
    expect(res.body.error.message).toContain("finite");
  });

  test("more than 1024 entries", async () => {
    const many = Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [`m${i}`, { InputText: 1 }]));
    await refused({ ChatPricing: many }, "1025 entries", "1024");
  });

  test("more than 128 KiB", async () => {
    const big = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`m${i}-${"x".repeat(220)}`, { InputText: 1 }]));
    await refused({ ChatPricing: big }, "128 KiB");
  });

  test("an invalid Sizes key", async () => {
    await refused({ ImgPricing: { "acme-img": { Sizes: { huge: 0.1 } } } }, 'ImgPricing["acme-img"].Sizes', "huge");
  });

  test("a string holding JSON is accepted and exported as the object", async () => {
    const text = JSON.stringify({ ChatPricing: { "str-*": { InputText: 3, OutputText: 4 } } });
    const res = await api("/x-config", { method: "PUT", body: { PRICING: text } });
    expect(res.status).toBe(200);
    expect(res.body.configs.PRICING).toEqual({ ChatPricing: { "str-*": { InputText: 3, OutputText: 4 } } });
    // And it prices on the next request.
    expect(await chargeOf("str-1")).toBe((1000 * 3 + 500 * 4) * 1000);
    // A string that is not JSON is refused.
    await refused("{not json", "JSON");
  });
});

describe("GET /x-pricing", () => {
  beforeAll(async () => {
    expect((await api("/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "gpt-4o-mini": { InputText: 1 }, "acme-*": { InputText: 2, OutputText: 8 } } } } })).status).toBe(200);
  });
  afterAll(async () => {
    await api("/x-config", { method: "DELETE" });
  });

  test("without a key: the public table, catalog plus overrides, at Rates 1", async () => {
    const res = await api("/x-pricing", { key: null });
    expect(res.status).toBe(200);
    expect(res.body.Rates).toBe(1);
    expect(res.body.ChatPricing["gpt-4o-mini"]).toEqual({ ...CATALOG.ChatPricing["gpt-4o-mini"], InputText: 1 });
    expect(res.body.ChatPricing["acme-*"]).toEqual({ InputText: 2, OutputText: 8 });
    expect(res.body.ChatPricing["gpt-4o"]).toEqual(CATALOG.ChatPricing["gpt-4o"]!);
    for (const section of ["ImgPricing", "AudioPricing", "VideoPricing", "CallPricing"]) expect(res.body[section]).toEqual((CATALOG as any)[section]);
  });

  test("a wrong key is 401, not the public table", async () => {
    const res = await api("/x-pricing", { key: "sk-not-a-real-key-0123456789" });
    expect(res.status).toBe(401);
    expect(res.body.ChatPricing).toBeUndefined();
  });

  test("with an account key: every price × the account's Rates", async () => {
    const created = await api("/x-users", { body: { Email: "rated@example.com", Rates: 2.5 } });
    expect(created.status).toBe(201);
    const res = await api("/x-pricing", { key: created.body.APIKey });
    expect(res.status).toBe(200);
    expect(res.body.Rates).toBe(2.5);
    expect(res.body.ChatPricing["acme-*"]).toEqual({ InputText: 5, OutputText: 20 });
    // Context windows and output limits are token counts, not prices: Rates leaves them.
    expect(res.body.ChatPricing["gpt-4o-mini"]).toEqual({ InputText: 2.5, CachedText: 0.1875, OutputText: 1.5, WebSearch: 0.025, FileSearch: 0.00625, ContextWindow: 128000, MaxOutput: 16384 });
    expect(res.body.ImgPricing["dall-e-3"]).toEqual({ Call: 0.1, Sizes: { "1024x1024": 0.1, "1024x1792": 0.2, "1792x1024": 0.2 } });
    expect(res.body.AudioPricing["whisper-1"]).toEqual({ PerMinute: 0.015 });
    // The owner sees its own Rates (1).
    const owner = await api("/x-pricing");
    expect(owner.body.Rates).toBe(1);
    expect(owner.body.ChatPricing["acme-*"]).toEqual({ InputText: 2, OutputText: 8 });
  });
});

import { describe, expect, test } from "bun:test";
import { usageRows } from "../helpers/keys.ts";
import { json, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import type { TestRouter } from "../helpers/router.ts";
import { anthropicClient, geminiClient } from "../helpers/sdk.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Issue 13, item 15: token counts are not usage (no request, no tokens, no charge), obey
 * access rules and request windows but not credit or token limits; an embedding never
 * has completion tokens.
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };

const scope = perTest();

async function start(): Promise<{ router: TestRouter; upstream: MockUpstream }> {
  const { router, upstream } = await scope.gateway();
  expect((await api(router, "/x-config", { method: "PUT", body: { PRICING } })).status).toBe(200);
  upstream.route("POST", "/v1/messages/count_tokens", () => json({ input_tokens: 14 }));
  upstream.route("POST", /countTokens$/, () => json({ totalTokens: 9 }));
  return { router, upstream };
}

/** An account's daily rollups summed over all days (null when it has none, as SQL's sum). */
const daily = async (router: TestRouter, accountId: number) => {
  const rows = await router.deps.store.usage.rollups({ accountId }, { start: "0000-01-01", end: "9999-12-31" });
  if (rows.length === 0) return { requests: null, tokens: null };
  return { requests: rows.reduce((n, r) => n + r.requests, 0), tokens: rows.reduce((n, r) => n + r.prompt + r.completion, 0) };
};

describe("token counts are not usage", () => {
  test("count_tokens and countTokens through the SDKs: answered, with no usage row, no request and no tokens in the rollups", async () => {
    const { router } = await start();
    const account = await createAccount(router, { CreditGranted: 1 });
    const counted = await anthropicClient(router.url, account.key).messages.countTokens({ model: "acme-claude", messages: [{ role: "user", content: "hi" }] });
    expect(counted.input_tokens).toBe(14);
    const gemini = await geminiClient(router.url, account.key).models.countTokens({ model: "acme-gem", contents: "hi" });
    expect(gemini.totalTokens).toBe(9);
    expect((await usageRows(router)).filter((r) => r.account_id === account.id)).toHaveLength(0);
    expect((await daily(router, account.id)).requests ?? 0).toBe(0);
    const status = await api(router, "/dashboard/status", { key: account.key });
    expect(status.body.balance).toBe(1);
  });

  test("with TPM and DailyLimit used up an account may still count tokens; its RPM still applies", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", "/v1/messages", () => json({ id: "m", type: "message", role: "assistant", model: "acme-claude", content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", usage: { input_tokens: 10, output_tokens: 10 } }));
    const account = await createAccount(router, { CreditGranted: 1, RPM: 3, TPM: 5, DailyLimit: 0.0001 });
    const message = () => api(router, "/v1/messages", { key: account.key, body: { model: "acme-claude", max_tokens: 5, messages: [{ role: "user", content: "hi" }] } });
    expect((await message()).status).toBe(200);
    // 20 tokens used of a TPM of 5, and today's spend is at the DailyLimit: real calls are refused (and a refusal counts in no window).
    expect((await message()).status).toBe(429);
    const count = () => api(router, "/v1/messages/count_tokens", { key: account.key, body: { model: "acme-claude", messages: [{ role: "user", content: "hi" }] } });
    expect((await count()).status).toBe(200);
    expect((await count()).status).toBe(200);
    const refused = await count();
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toContain("RPM");
    expect(upstream.requests.filter((r) => r.path === "/v1/messages/count_tokens")).toHaveLength(2);
  });

  test("a token count is refused when the model is not allowed", async () => {
    const { router } = await start();
    const limited = await createAccount(router, { CreditGranted: 1, AllowModels: "other-*" });
    const res = await api(router, "/v1/messages/count_tokens", { key: limited.key, body: { model: "acme-claude", messages: [{ role: "user", content: "hi" }] } });
    expect(res.status).toBe(403);
  });
});

describe("embeddings never have completion tokens", () => {
  test("a Gemini embedding answer without usage is estimated on its input only", async () => {
    const { router, upstream } = await start();
    const vector = Array.from({ length: 3072 }, (_, i) => i / 3072);
    // The SDK sends embedContent as batchEmbedContents.
    upstream.route("POST", /EmbedContents?$/i, () => json({ embeddings: [{ values: vector }] }));
    const result = await geminiClient(router.url, router.ownerKey).models.embedContent({ model: "acme-embed", contents: "hello" });
    expect(result.embeddings?.[0]?.values).toHaveLength(3072);
    const row = (await usageRows(router)).at(-1)!;
    expect(row).toMatchObject({ status: 200, completion_tokens: 0, source: "estimated" });
    expect(row.prompt_tokens).toBeGreaterThan(0);
  });

  test("an OpenAI-style embedding that reports completion tokens is recorded without them", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", "/v1/embeddings", () => json({ object: "list", data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }], model: "acme-embed", usage: { prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 } }));
    const res = await api(router, "/v1/embeddings", { body: { model: "acme-embed", input: "hello" } });
    expect(res.status).toBe(200);
    expect((await usageRows(router)).at(-1)).toMatchObject({ prompt_tokens: 4, completion_tokens: 0, source: "upstream" });
  });
});

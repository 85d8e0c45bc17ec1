import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

/**
 * Issue 17: calls the router refuses before any upstream attempt (access rules, a bad
 * body, limits, credit) appear in the request log with their status and error kind,
 * no attempt, no token, no cost. A call with an unknown key has no account and is not logged.
 */

let router: TestRouter;
let upstream: MockUpstream;

const PRICING = { ChatPricing: { "*": { InputText: 2, OutputText: 8 } } };

beforeAll(async () => {
  router = await startRouter({ pricing: PRICING });
  upstream = startMockUpstream().route("POST", "/v1/chat/completions", () =>
    json({ id: "c", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }),
  );
  await addKey(router, { provider: `${upstream.url}/v1`, noSleep: true });
});

afterAll(async () => {
  await upstream.stop();
  await router.stop();
});

async function post(path: string, key: string | null, body: string, headers: Record<string, string> = {}) {
  const res = await router.fetch(path, { method: "POST", key, headers: { "content-type": "application/json", "user-agent": "refused-test/1", ...headers }, body });
  const text = await res.text();
  return { status: res.status, id: res.headers.get("x-request-id")!, text };
}
const chat = (model: string) => JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] });

async function record(id: string) {
  await router.deps.usageRecorder.flush();
  const res = await api(router, `/x-requests/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

const NOTHING_USED = { attempts: [], tokens: { prompt: 0, completion: 0, cache_read: 0, cache_write: 0, reasoning: 0 }, cost: 0, source: "none", ttfb_ms: null };

describe("refused calls in the request log", () => {
  test("429 from RPM: status, error kind, account, model, family and endpoint; no attempt, tokens or cost", async () => {
    const limited = await createAccount(router, { CreditGranted: 5, RPM: 1 });
    expect((await post("/v1/chat/completions", limited.key, chat("gpt-r"))).status).toBe(200);
    const refused = await post("/v1/chat/completions", limited.key, chat("gpt-r"));
    expect(refused.status).toBe(429);
    const got = await record(refused.id);
    expect(got).toMatchObject({
      request_id: refused.id,
      account: { id: limited.id, email: limited.email },
      family: "openai",
      endpoint: "/v1/chat/completions",
      requested_model: "gpt-r",
      effective_model: "gpt-r",
      stream: false,
      status: 429,
      error: "rpm_limit_reached",
      user_agent: "refused-test/1",
      client_ip: "127.0.0.1",
      ...NOTHING_USED,
    });
    // The answered call's record names no error.
    const listed = await api(router, `/x-requests?account=${limited.id}`);
    expect(listed.body.map((r: { status: number; error: string | null }) => [r.status, r.error])).toEqual([[429, "rpm_limit_reached"], [200, null]]);
    // The account itself reads its refused call.
    expect((await api(router, `/x-requests/${refused.id}`, { key: limited.key })).status).toBe(200);
  });

  test("429 for credit: insufficient_credit", async () => {
    const broke = await createAccount(router, { CreditGranted: 0 });
    const refused = await post("/v1/chat/completions", broke.key, chat("gpt-c"));
    expect(refused.status).toBe(429);
    expect(await record(refused.id)).toMatchObject({ status: 429, error: "insufficient_credit", account: { id: broke.id }, requested_model: "gpt-c", ...NOTHING_USED });
  });

  test("403 from AllowModels and from Resources; the Resources refusal comes before the body is read, so no model", async () => {
    const narrow = await createAccount(router, { CreditGranted: 5, AllowModels: "gpt-ok*" });
    const byModel = await post("/v1/chat/completions", narrow.key, chat("claude-x"));
    expect(byModel.status).toBe(403);
    expect(await record(byModel.id)).toMatchObject({ status: 403, error: "model_not_allowed", requested_model: "claude-x", effective_model: null, ...NOTHING_USED });

    const embeddingsOnly = await createAccount(router, { CreditGranted: 5, Resources: "/v1/embeddings" });
    const byPath = await post("/v1/chat/completions", embeddingsOnly.key, chat("gpt-ok"));
    expect(byPath.status).toBe(403);
    const got = await record(byPath.id);
    expect(got).toMatchObject({ status: 403, account: { id: embeddingsOnly.id }, endpoint: "/v1/chat/completions", family: "openai", requested_model: null, ...NOTHING_USED });
    expect(typeof got.error).toBe("string");
  });

  test("400 for a body that is not JSON, in the Anthropic family", async () => {
    const refused = await post("/v1/messages", router.ownerKey, "{not json", { "anthropic-version": "2023-06-01" });
    expect(refused.status).toBe(400);
    expect(await record(refused.id)).toMatchObject({ status: 400, family: "anthropic", endpoint: "/v1/messages", error: "invalid_request", requested_model: null, ...NOTHING_USED });
  });

  test("a Gemini call (model in the path) refused by AllowModels is logged too", async () => {
    const narrow = await createAccount(router, { CreditGranted: 5, AllowModels: "gpt-*" });
    const refused = await post("/v1beta/models/gemini-2.0-flash:generateContent", narrow.key, JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }));
    expect(refused.status).toBe(403);
    expect(await record(refused.id)).toMatchObject({ status: 403, family: "gemini", error: "model_not_allowed", requested_model: "gemini-2.0-flash", ...NOTHING_USED });
  });

  test("401: a missing or unknown key has no account to file the call under, and leaves no record", async () => {
    for (const key of [null, "sk-rt-unknownkeyunknownkey"]) {
      const refused = await post("/v1/chat/completions", key, chat("gpt-x"));
      expect(refused.status).toBe(401);
      await router.deps.usageRecorder.flush();
      expect((await api(router, `/x-requests/${refused.id}`)).status).toBe(404);
    }
  });
});

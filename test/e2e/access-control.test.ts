import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

/**
 * Issue 4, access control on every request: AllowIPs (socket address, or the last
 * X-Forwarded-For entry under --trust-proxy), Resources on paths, AllowModels on the
 * requested model; each refusal a 403 in the family's envelope naming the restriction.
 */

const DEFAULT_RESOURCES = "/v1/*,/v1beta/*,/chat/completions,/responses,/embeddings,/models,/dashboard/*,/x-self,/x-pricing";
const MANAGER_RESOURCES = `${DEFAULT_RESOURCES},/x-users*,/x-dna*`;

let router: TestRouter;
let proxied: TestRouter;
let upstream: MockUpstream;
let sequence = 0;

const completion = (model: string) => ({
  id: "chatcmpl-ac",
  object: "chat.completion",
  created: 1,
  model,
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
});

beforeAll(async () => {
  upstream = startMockUpstream();
  router = await startRouter();
  proxied = await startRouter({ config: { trustProxy: true } });
  await addKey(router, { provider: `${upstream.url}/v1` });
  await addKey(proxied, { provider: `${upstream.url}/v1` });
});
afterAll(async () => {
  await router.stop();
  await proxied.stop();
  await upstream.stop();
});
beforeEach(() => {
  upstream.reset();
  upstream.route("POST", "/v1/chat/completions", (req) => json(completion(req.json.model)));
});

async function create(on: TestRouter, fields: Record<string, unknown>, key?: string): Promise<any> {
  const res = await on.fetch("/x-users", {
    method: "POST",
    key,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ Email: `ac${++sequence}@example.com`, CreditGranted: 10, ...fields }),
  });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

const update = (on: TestRouter, id: number, fields: Record<string, unknown>) =>
  on.fetch(`/x-users/${id}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(fields) });

const chat = (on: TestRouter, key: string, model = "gpt-4o-mini", headers: Record<string, string> = {}) =>
  on.fetch("/v1/chat/completions", {
    method: "POST",
    key,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });

const messages = (on: TestRouter, key: string, model = "claude-3-5-haiku", headers: Record<string, string> = {}) =>
  on.fetch("/v1/messages", {
    method: "POST",
    key,
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", ...headers },
    body: JSON.stringify({ model, max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
  });

const gemini = (on: TestRouter, key: string, model = "gemini-2.0-flash") =>
  on.fetch(`/v1beta/models/${model}:generateContent`, {
    method: "POST",
    key,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
  });

const status = (on: TestRouter, key: string, headers: Record<string, string> = {}) => on.fetch("/dashboard/status", { key, headers });

/** A 403 in the OpenAI envelope whose message names the restriction. */
async function expectOpenAi403(res: Response, restriction: string, code: string): Promise<any> {
  const body = await res.json();
  expect({ status: res.status, body }).toEqual({
    status: 403,
    body: { error: { message: expect.stringContaining(`(${restriction})`), type: "permission_error", param: null, code } },
  });
  return body;
}

async function expectAnthropic403(res: Response, restriction: string): Promise<void> {
  const body = await res.json();
  expect({ status: res.status, body }).toEqual({
    status: 403,
    body: { type: "error", error: { type: "permission_error", message: expect.stringContaining(`(${restriction})`) } },
  });
}

async function expectGemini403(res: Response, restriction: string): Promise<void> {
  const body = await res.json();
  expect({ status: res.status, body }).toEqual({
    status: 403,
    body: { error: { code: 403, message: expect.stringContaining(`(${restriction})`), status: "PERMISSION_DENIED" } },
  });
}

describe("AllowIPs", () => {
  test("a client outside the account's ranges is refused on every path, in each family's envelope", async () => {
    const account = await create(router, { AllowIPs: "10.0.0.0/8,2001:db8::/32" });
    const body = await expectOpenAi403(await status(router, account.APIKey), "AllowIPs", "ip_not_allowed");
    expect(body.error.message).toContain("127.0.0.1");
    await expectOpenAi403(await chat(router, account.APIKey), "AllowIPs", "ip_not_allowed");
    await expectOpenAi403(await router.fetch("/v1/models", { key: account.APIKey }), "AllowIPs", "ip_not_allowed");
    await expectOpenAi403(
      await router.fetch("/x-self", { method: "POST", key: account.APIKey, body: JSON.stringify({ confirm: `${router.deps.clock.businessDate()}-ROTATE-SELF` }) }),
      "AllowIPs",
      "ip_not_allowed",
    );
    await expectAnthropic403(await messages(router, account.APIKey), "AllowIPs");
    await expectGemini403(await gemini(router, account.APIKey), "AllowIPs");
    expect(upstream.requests).toHaveLength(0);
    // The refused rotation did not rotate anything: the key is still the same (refused for its IP, not unknown).
    expect((await status(router, account.APIKey)).status).toBe(403);
  });

  test("a client inside the ranges is admitted (single address, CIDR, IPv6 entries alongside)", async () => {
    for (const allow of ["127.0.0.1", "127.0.0.0/8", "::1,127.0.0.1", "10.0.0.0/8, 127.0.0.0/30", "0.0.0.0/0"]) {
      const account = await create(router, { AllowIPs: allow });
      expect((await status(router, account.APIKey)).status).toBe(200);
      expect((await chat(router, account.APIKey)).status).toBe(200);
    }
    expect(upstream.requests).toHaveLength(5);
  });

  test("without --trust-proxy, X-Forwarded-For is ignored both ways", async () => {
    const remote = await create(router, { AllowIPs: "10.0.0.0/8" });
    const local = await create(router, { AllowIPs: "127.0.0.1" });
    await expectOpenAi403(await status(router, remote.APIKey, { "x-forwarded-for": "10.1.2.3" }), "AllowIPs", "ip_not_allowed");
    await expectOpenAi403(await chat(router, remote.APIKey, "gpt-4o-mini", { "x-forwarded-for": "10.1.2.3" }), "AllowIPs", "ip_not_allowed");
    expect((await status(router, local.APIKey, { "x-forwarded-for": "10.1.2.3" })).status).toBe(200);
    expect((await status(router, local.APIKey, { "x-forwarded-for": "203.0.113.9, 10.1.2.3" })).status).toBe(200);
  });

  test("with --trust-proxy, the last X-Forwarded-For entry is the client", async () => {
    const remote = await create(proxied, { AllowIPs: "10.0.0.0/8" });
    expect((await status(proxied, remote.APIKey, { "x-forwarded-for": "10.1.2.3" })).status).toBe(200);
    expect((await status(proxied, remote.APIKey, { "x-forwarded-for": "127.0.0.1, 203.0.113.5,10.9.9.9" })).status).toBe(200);
    expect((await chat(proxied, remote.APIKey, "gpt-4o-mini", { "x-forwarded-for": "10.1.2.3" })).status).toBe(200);
    // A forged first entry does not help: only the last one counts.
    const forged = await status(proxied, remote.APIKey, { "x-forwarded-for": "10.1.2.3, 203.0.113.5" });
    expect((await expectOpenAi403(forged, "AllowIPs", "ip_not_allowed")).error.message).toContain("203.0.113.5");
    // No header: the socket address (127.0.0.1) is used.
    await expectOpenAi403(await status(proxied, remote.APIKey), "AllowIPs", "ip_not_allowed");
    const local = await create(proxied, { AllowIPs: "127.0.0.1" });
    await expectOpenAi403(await status(proxied, local.APIKey, { "x-forwarded-for": "10.1.2.3" }), "AllowIPs", "ip_not_allowed");
    expect((await status(proxied, local.APIKey)).status).toBe(200);
    // IPv6 clients behind the proxy.
    const v6 = await create(proxied, { AllowIPs: "2001:db8::/32" });
    expect((await status(proxied, v6.APIKey, { "x-forwarded-for": "2001:db8:1::7" })).status).toBe(200);
    await expectOpenAi403(await status(proxied, v6.APIKey, { "x-forwarded-for": "2001:db9::7" }), "AllowIPs", "ip_not_allowed");
  });

  test("the operation log records the client address the access check used", async () => {
    const manager = await create(proxied, { Resources: MANAGER_RESOURCES });
    const res = await proxied.fetch("/x-users", {
      method: "POST",
      key: manager.APIKey,
      headers: { "content-type": "application/json", "x-forwarded-for": "198.51.100.1, 10.20.30.40" },
      body: JSON.stringify({ Email: `ac${++sequence}@example.com` }),
    });
    expect(res.status).toBe(201);
    const created = await res.json();
    const row = (await proxied.deps.store.operations.list(0, { action: "account.create", targetId: created.ID }, 1, 1)).rows[0];
    expect(row?.ip).toBe("10.20.30.40");
  });

  test("a changed AllowIPs applies on the account's very next request", async () => {
    const account = await create(router, { AllowIPs: "127.0.0.1" });
    expect((await status(router, account.APIKey)).status).toBe(200);
    expect((await update(router, account.ID, { AllowIPs: "10.0.0.0/8" })).status).toBe(200);
    await expectOpenAi403(await status(router, account.APIKey), "AllowIPs", "ip_not_allowed");
    expect((await update(router, account.ID, { AllowIPs: null })).status).toBe(200);
    expect((await status(router, account.APIKey)).status).toBe(200);
  });
});

describe("AllowModels", () => {
  test("a model outside the list is 403 and never reaches the upstream; an allowed one does", async () => {
    const account = await create(router, { AllowModels: "gpt-4o-mini,text-embedding-*" });
    const refused = await chat(router, account.APIKey, "gpt-4o");
    const body = await expectOpenAi403(refused, "AllowModels", "model_not_allowed");
    expect(body.error.message).toContain("gpt-4o");
    await expectOpenAi403(await chat(router, account.APIKey, "gpt-4o-mini-2024-07-18"), "AllowModels", "model_not_allowed");
    expect(upstream.requests).toHaveLength(0);

    const allowed = await chat(router, account.APIKey, "gpt-4o-mini");
    expect(allowed.status).toBe(200);
    expect((await allowed.json()).choices[0].message.content).toBe("ok");
    expect(upstream.requests).toHaveLength(1);
    expect(upstream.requests[0]!.json.model).toBe("gpt-4o-mini");

    upstream.route("POST", "/v1/embeddings", () => json({ object: "list", data: [{ embedding: [0.5], index: 0 }], usage: { prompt_tokens: 1, total_tokens: 1 } }));
    const embed = await router.fetch("/v1/embeddings", { method: "POST", key: account.APIKey, body: JSON.stringify({ model: "text-embedding-3-small", input: "x" }) });
    expect(embed.status).toBe(200);
  });

  test("the Anthropic and Gemini families refuse in their own envelopes", async () => {
    const account = await create(router, { AllowModels: "gpt-*" });
    await expectAnthropic403(await messages(router, account.APIKey, "claude-3-5-haiku"), "AllowModels");
    await expectAnthropic403(await messages(router, account.APIKey, "claude-3-5-haiku", { authorization: "", "x-api-key": account.APIKey }), "AllowModels");
    await expectGemini403(await gemini(router, account.APIKey, "gemini-2.0-flash"), "AllowModels");
    const v1 = await router.fetch("/v1/models/gemini-2.0-flash:generateContent", { method: "POST", key: account.APIKey, body: "{}" });
    await expectGemini403(v1, "AllowModels");
    expect(upstream.requests).toHaveLength(0);
  });

  test("an account without AllowModels may use any model; a changed list applies at once", async () => {
    const account = await create(router, {});
    expect((await chat(router, account.APIKey, "gpt-4o")).status).toBe(200);
    expect((await update(router, account.ID, { AllowModels: "claude-*" })).status).toBe(200);
    await expectOpenAi403(await chat(router, account.APIKey, "gpt-4o"), "AllowModels", "model_not_allowed");
    expect(upstream.requests).toHaveLength(1);
  });

  test("the model list shows only allowed models", async () => {
    await router.deps.settings.update({ LEVEL_MAPPER: "gpt-4o-mini=1,gpt-4o=1,claude-3-5-haiku=1" });
    const account = await create(router, { AllowModels: "gpt-4o-mini" });
    const ids = async (key?: string) => {
      const res = await router.fetch("/v1/models", { key });
      expect(res.status).toBe(200);
      return (await res.json()).data.map((m: any) => m.id) as string[];
    };
    expect(await ids()).toEqual(["claude-3-5-haiku", "gpt-4o", "gpt-4o-mini"]);
    expect(await ids(account.APIKey)).toEqual(["gpt-4o-mini"]);
    expect((await router.fetch("/v1/models/gpt-4o", { key: account.APIKey })).status).toBe(404);
    expect((await router.fetch("/v1/models/gpt-4o-mini", { key: account.APIKey })).status).toBe(200);
  });
});

describe("Resources", () => {
  test("paths outside the account's Resources are 403 in the family's envelope", async () => {
    const account = await create(router, { Resources: "/v1/chat/completions,/dashboard/status" });
    expect((await status(router, account.APIKey)).status).toBe(200);
    expect((await chat(router, account.APIKey)).status).toBe(200);
    const info = await router.fetch("/dashboard/info", { key: account.APIKey });
    expect((await expectOpenAi403(info, "Resources", "resource_not_allowed")).error.message).toContain("/dashboard/info");
    await expectOpenAi403(
      await router.fetch("/v1/embeddings", { method: "POST", key: account.APIKey, body: JSON.stringify({ model: "text-embedding-3-small", input: "x" }) }),
      "Resources",
      "resource_not_allowed",
    );
    // The alias of an allowed endpoint is a different path, and is not allowed.
    await expectOpenAi403(
      await router.fetch("/chat/completions", { method: "POST", key: account.APIKey, body: JSON.stringify({ model: "gpt-4o-mini", messages: [] }) }),
      "Resources",
      "resource_not_allowed",
    );
    await expectOpenAi403(await router.fetch("/v1/models", { key: account.APIKey }), "Resources", "resource_not_allowed");
    await expectOpenAi403(await router.fetch("/x-self", { method: "POST", key: account.APIKey, body: "{}" }), "Resources", "resource_not_allowed");
    await expectOpenAi403(await router.fetch("/x-users", { key: account.APIKey }), "Resources", "resource_not_allowed");
    await expectAnthropic403(await messages(router, account.APIKey), "Resources");
    await expectGemini403(await gemini(router, account.APIKey), "Resources");
    expect(upstream.requests).toHaveLength(1);
  });

  test("IP is checked before Resources, and the message names only the restriction that applies", async () => {
    const account = await create(router, { Resources: "/dashboard/status", AllowIPs: "10.0.0.0/8" });
    const res = await router.fetch("/v1/embeddings", { method: "POST", key: account.APIKey, body: "{}" });
    const body = await expectOpenAi403(res, "AllowIPs", "ip_not_allowed");
    expect(body.error.message).not.toContain("Resources");
    expect(body.error.message).not.toContain(account.Email);
  });

  test("owners are unrestricted; management paths follow the granted Resources", async () => {
    expect((await router.fetch("/x-users")).status).toBe(200);
    expect((await router.fetch("/x-keys")).status).toBe(200);
    const manager = await create(router, { Resources: MANAGER_RESOURCES });
    expect((await router.fetch("/x-users", { key: manager.APIKey })).status).toBe(200);
    await expectOpenAi403(await router.fetch("/x-keys", { key: manager.APIKey }), "Resources", "resource_not_allowed");
    // /x-users* without /x-dna*: the subtree list is refused, the direct list works.
    const narrow = await create(router, { Resources: `${DEFAULT_RESOURCES},/x-users*` });
    expect((await router.fetch("/x-users", { key: narrow.APIKey })).status).toBe(200);
    await expectOpenAi403(await router.fetch("/x-dna", { key: narrow.APIKey }), "Resources", "resource_not_allowed");
  });

  test("an unknown key is 401 before any access rule, also on restricted paths", async () => {
    for (const path of ["/x-users", "/dashboard/status", "/x-keys"]) {
      const res = await router.fetch(path, { key: "sk-rt-not-a-real-key-000000000000000000000" });
      expect(res.status).toBe(401);
    }
    const res = await messages(router, "sk-rt-not-a-real-key-000000000000000000000");
    expect(res.status).toBe(401);
    expect((await res.json()).type).toBe("error");
  });
});

import { describe, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { json, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, anthropicV0Client, geminiClient, geminiV3Client, openaiClient } from "../helpers/sdk.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Issue 13, item 19: the model lists tell the truth: the models the caller can use,
 * from the mappers and from what each usable key serves (its config.models, else its
 * upstream's own list), in each family's shape, never a pattern.
 */

const scope = perTest();

const router = (): Promise<TestRouter> => scope.router();

/** An upstream whose own OpenAI-style model list holds `ids`. */
function listing(ids: string[]): MockUpstream {
  return scope.upstream().route("GET", "/v1/models", () => json({ object: "list", data: ids.map((id) => ({ id, object: "model", created: 1, owned_by: "x" })) }));
}

const ids = async (r: TestRouter, key?: string) => {
  const res = await r.fetch("/v1/models", { key });
  expect(res.status).toBe(200);
  return ((await res.json()).data as Array<{ id: string }>).map((m) => m.id);
};

/** Lists until the upstream lists fetched in the background have arrived. */
const eventually = (r: TestRouter, present: string[], key?: string) =>
  waitFor(async () => {
    const now = await ids(r, key);
    return present.every((id) => now.includes(id)) ? now : undefined;
  }, 5000, `the model list to show ${present.join(", ")}`);

describe("what a key serves", () => {
  test("a fresh install with one key lists what its upstream lists; the key's secret stays home", async () => {
    const r = await router();
    const u = listing(["acme-large", "acme-small"]);
    const { secret } = await addKey(r, { provider: `${u.url}/v1` });
    const models = await eventually(r, ["acme-large", "acme-small"]);
    expect(models).toEqual(["acme-large", "acme-small"]);
    const fetched = u.requests.find((q) => q.path === "/v1/models")!;
    expect(fetched.headers.get("authorization")).toBe(`Bearer ${secret}`);

    const client = openaiClient(r.url, r.ownerKey);
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(["acme-large", "acme-small"]);
    expect(JSON.stringify(page.data)).not.toContain(secret);
    expect(await client.models.retrieve("acme-large")).toMatchObject({ id: "acme-large", object: "model" });
    // Any model that routes to a usable key is served, listed or not.
    expect((await client.models.retrieve("acme-unlisted")).id).toBe("acme-unlisted");
  });

  test("config.models: exact names listed, patterns filter the upstream's list, never listed themselves", async () => {
    const r = await router();
    const u = listing(["m-two", "m-three", "other"]);
    await addKey(r, { provider: `${u.url}/v1`, config: { provider_type: "standard", models: ["m-one", "m-t*"] } });
    expect(await eventually(r, ["m-one", "m-three", "m-two"])).toEqual(["m-one", "m-three", "m-two"]);
  });

  test("a served model is listed only when it routes to the key's own Level; mapper names when their Level has a usable key", async () => {
    const r = await router();
    const one = listing(["alpha", "beta"]);
    const two = listing(["gamma", "delta"]);
    await addKey(r, { provider: `${one.url}/v1`, level: 1 });
    await addKey(r, { provider: `${two.url}/v1`, level: 2 });
    await r.deps.settings.update({ LEVEL_MAPPER: "gamma=2,beta=2,ghost=3,gpt-*=2", MODEL_MAPPER: "nick=alpha" });
    const models = await eventually(r, ["alpha", "gamma"]);
    // beta routes to Level 2, whose key does not serve it; delta routes to Level 1, whose key does not serve it.
    expect(models).toEqual(["alpha", "beta", "gamma", "nick"]);
    // ghost's Level has no key; gpt-* is a pattern.
    expect(models).not.toContain("ghost");
    expect(models).not.toContain("gpt-*");
  });

  test("keys that are disabled or asleep contribute nothing; AllowModels filters the list", async () => {
    const r = await router();
    const u = listing(["keep-me", "drop-me"]);
    const on = await addKey(r, { provider: `${u.url}/v1` });
    await eventually(r, ["keep-me", "drop-me"]);
    const limited = await createAccount(r, { AllowModels: "keep-*" });
    expect(await ids(r, limited.key)).toEqual(["keep-me"]);
    expect((await r.fetch("/v1/models/drop-me", { key: limited.key })).status).toBe(404);
    await r.deps.pool.setManualSleep(on.id, true);
    expect(await ids(r)).toEqual([]);
    expect((await r.fetch("/v1/models/keep-me")).status).toBe(404);
  });

  test("an upstream without a model list (a host the router does not know) lists nothing beyond mappers and config.models", async () => {
    const r = await router();
    const u = scope.upstream();
    await addKey(r, { provider: `${u.url}/v1` });
    await r.deps.settings.update({ LEVEL_MAPPER: "named-model=1" });
    expect(await ids(r)).toEqual(["named-model"]);
    // Its list was asked for (and answered 404): still only the mapper's name.
    await waitFor(() => r.logs.some((line) => line.includes("model list not available")) || undefined);
    expect(u.requests.some((q) => q.path === "/v1/models")).toBe(true);
    expect(await ids(r)).toEqual(["named-model"]);
  });

  test("an Azure key serves its deployment map without asking", async () => {
    const r = await router();
    const u = scope.upstream();
    await addKey(r, { provider: u.url, config: { provider_type: "azure", deployments: { "gpt-4o": "prod-4o", "gpt-4.1": "prod-41" } } });
    expect(await ids(r)).toEqual(["gpt-4.1", "gpt-4o"]);
    expect(u.requests).toHaveLength(0);
  });

  test("config.models is validated: 400 naming it, nothing written", async () => {
    const r = await router();
    for (const models of ["gpt-4o", [""], ["a b"], ["x,y"], [1]]) {
      const res = await api(r, "/x-keys", { body: { Provider: "https://api.example.com/v1", SecretKey: "sk-0123456789abcdefghijkl", Level: 1, Status: true, config: { provider_type: "standard", models } } });
      expect(res.status).toBe(400);
      expect(res.body.error.param).toBe("config.models");
    }
    const ok = await api(r, "/x-keys", { body: { Provider: "https://api.example.com/v1", SecretKey: "sk-0123456789abcdefghijkl", Level: 1, Status: true, config: { provider_type: "standard", models: ["gpt-4o", "o*"] } } });
    expect(ok.status).toBe(201);
    // `formats` is shown filled with the default of a host the router does not know: every format (issue 16).
    expect(ok.body.config).toEqual({ provider_type: "standard", models: ["gpt-4o", "o*"], formats: ["openai", "responses", "anthropic", "gemini"] });
  });
});

describe("each family's SDK reads its own shape", () => {
  async function served(): Promise<TestRouter> {
    const r = await router();
    const u = listing(["claude-x", "gemini-x", "gpt-x"]);
    await addKey(r, { provider: `${u.url}/v1` });
    await eventually(r, ["claude-x", "gemini-x", "gpt-x"]);
    return r;
  }

  test("Anthropic SDK 1.x and 0.x: list (paged) and retrieve; an unavailable model is 404 in Anthropic's envelope", async () => {
    const r = await served();
    const limited = await createAccount(r, { AllowModels: "claude-*" });
    for (const client of [anthropicClient(r.url, r.ownerKey), anthropicV0Client(r.url, r.ownerKey)]) {
      const all: string[] = [];
      for await (const model of client.models.list({ limit: 2 })) all.push(model.id);
      expect(all).toEqual(["claude-x", "gemini-x", "gpt-x"]);
      expect(await client.models.retrieve("claude-x")).toMatchObject({ type: "model", id: "claude-x", display_name: "claude-x" });
    }
    const error = (await anthropicClient(r.url, limited.key).models.retrieve("gpt-x").catch((e: unknown) => e)) as { status: number; error: unknown };
    expect(error.status).toBe(404);
    expect(error.error).toMatchObject({ type: "error", error: { type: "not_found_error" } });
  });

  test("Gemini SDK 2.x (/v1beta) and 3.x (/v1): list (paged) and get", async () => {
    const r = await served();
    for (const client of [geminiClient(r.url, r.ownerKey), geminiV3Client(r.url, r.ownerKey)]) {
      const names: string[] = [];
      for await (const model of await client.models.list({ config: { pageSize: 2 } })) names.push(model.name!);
      expect(names).toEqual(["models/claude-x", "models/gemini-x", "models/gpt-x"]);
      const one = await client.models.get({ model: "gemini-x" });
      expect(one.name).toBe("models/gemini-x");
      expect(one.supportedActions ?? (one as { supportedGenerationMethods?: string[] }).supportedGenerationMethods).toContain("generateContent");
    }
  });
});

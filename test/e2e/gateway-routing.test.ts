import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { geminiClient, openaiClient } from "../helpers/sdk.ts";

let router: TestRouter;
let level1: MockUpstream;
let level2: MockUpstream;
const secrets: string[] = [];

const chat = (model: string) => ({ id: "c", object: "chat.completion", created: 1, model, choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });

beforeAll(async () => {
  level1 = startMockUpstream();
  level2 = startMockUpstream();
  router = await startRouter({ config: { maxBody: 4096 } });
  secrets.push((await addKey(router, { provider: level1.url, level: 1 })).secret);
  secrets.push((await addKey(router, { provider: level2.url, level: 2 })).secret);
  await router.deps.settings.update({
    MODEL_MAPPER: "gpt-4*=gpt-4o-2024-08-06,gpt-4o-mini=gpt-4o-mini-2024-07-18,gem-alias=gemini-2.5-pro",
    LEVEL_MAPPER: "gpt-4o-2024-08-06=2,gemini-*=2,claude-*=1",
  });
});
afterAll(async () => {
  await router.stop();
  await Promise.all([level1.stop(), level2.stop()]);
});
beforeEach(() => {
  level1.reset();
  level2.reset();
  for (const mock of [level1, level2]) {
    mock.route("POST", "/v1/chat/completions", (req) => json(chat(req.json.model)));
    mock.route("POST", /:generateContent$/, () => json({ candidates: [], usageMetadata: { promptTokenCount: 1, totalTokenCount: 1 } }));
  }
});

describe("routing", () => {
  test("MODEL_MAPPER picks the effective model (exact beats pattern) and LEVEL_MAPPER its Level", async () => {
    const client = openaiClient(router.url, router.ownerKey);
    await client.chat.completions.create({ model: "gpt-4-turbo", messages: [] });
    expect(level2.requests[0]!.json.model).toBe("gpt-4o-2024-08-06");
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: [] });
    // The exact entry beats the earlier, shorter pattern; its target maps to no Level, so Level 1.
    expect(level1.requests[0]!.json.model).toBe("gpt-4o-mini-2024-07-18");
    const rows = (await usageRows(router)).slice(-2);
    expect(rows.map((r) => [r.requested_model, r.effective_model, r.level])).toEqual([
      ["gpt-4-turbo", "gpt-4o-2024-08-06", 2],
      ["gpt-4o-mini", "gpt-4o-mini-2024-07-18", 1],
    ]);
  });

  test("a Gemini model mapped to another model is rewritten in the upstream path", async () => {
    await geminiClient(router.url, router.ownerKey).models.generateContent({ model: "gem-alias", contents: "x" });
    expect(level2.requests[0]!.path).toBe("/v1beta/models/gemini-2.5-pro:generateContent");
  });

  test("a model no LEVEL_MAPPER entry matches goes to Level 1", async () => {
    await openaiClient(router.url, router.ownerKey).chat.completions.create({ model: "some-other-model", messages: [] });
    expect(level1.requests).toHaveLength(1);
    expect(level2.requests).toHaveLength(0);
  });

  test("GET /v1/models lists named models served by an enabled key, filtered by AllowModels", async () => {
    const all = await (await router.fetch("/v1/models")).json();
    expect(all.object).toBe("list");
    const ids = all.data.map((m: { id: string }) => m.id);
    expect(ids).toEqual(expect.arrayContaining(["gem-alias", "gpt-4o-mini", "gpt-4o-2024-08-06"]));
    expect(ids).not.toContain("gpt-4*");
    expect(all.data[0]).toMatchObject({ object: "model", owned_by: "router" });

    await router.deps.store.accounts.update(1, { allowModels: "gpt-*" });
    router.deps.principals.clear();
    const filtered = (await (await router.fetch("/v1/models")).json()).data.map((m: { id: string }) => m.id);
    expect(filtered.every((id: string) => id.startsWith("gpt-"))).toBe(true);
    expect((await router.fetch("/v1/models/gpt-4o-mini")).status).toBe(200);
    expect((await router.fetch("/v1/models/gem-alias")).status).toBe(404);
    await router.deps.store.accounts.update(1, { allowModels: null });
    router.deps.principals.clear();
  });
});

describe("request size limit", () => {
  const big = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "x".repeat(5000) }] });

  test("a declared body over --max-body is 413 in each family's envelope, nothing forwarded", async () => {
    const openai = await router.fetch("/v1/chat/completions", { method: "POST", body: big });
    expect(openai.status).toBe(413);
    expect((await openai.json()).error.type).toBe("request_too_large");
    const anthropic = await router.fetch("/v1/messages", { method: "POST", body: big });
    expect(anthropic.status).toBe(413);
    expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "request_too_large" } });
    const gemini = await router.fetch("/v1beta/models/gemini-2.5-pro:generateContent", { method: "POST", body: big });
    expect(gemini.status).toBe(413);
    expect((await gemini.json()).error.code).toBe(413);
    expect(level1.requests.length + level2.requests.length).toBe(0);
  });

  test("an undeclared (chunked) body is cut off while reading", async () => {
    const bytes = new TextEncoder().encode(big);
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 1000) controller.enqueue(bytes.slice(i, i + 1000));
        controller.close();
      },
    });
    const res = await router.fetch("/v1/chat/completions", { method: "POST", body, duplex: "half" } as RequestInit);
    expect(res.status).toBe(413);
    expect(level1.requests).toHaveLength(0);
  });

  test("a body just under the limit is served", async () => {
    const res = await router.fetch("/v1/chat/completions", { method: "POST", body: JSON.stringify({ model: "m", messages: [], pad: "x".repeat(3900) }) });
    expect(res.status).toBe(200);
  });
});

describe("secrets", () => {
  test("provider secrets appear in no log line, no response and no database file", async () => {
    await openaiClient(router.url, router.ownerKey).chat.completions.create({ model: "gpt-4o-mini", messages: [] });
    const logs = router.logs.join("\n");
    for (const secret of secrets) {
      expect(logs).not.toContain(secret);
      for (const name of readdirSync(router.dataDir)) {
        expect(readFileSync(join(router.dataDir, name)).includes(Buffer.from(secret))).toBe(false);
      }
    }
    const models = await (await router.fetch("/v1/models")).text();
    for (const secret of secrets) expect(models).not.toContain(secret);
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// Issue 17: GET /x-route explains how a call would be served, without making it.
let router: TestRouter;
let keys: { a: number; b: number; c: number };
beforeAll(async () => {
  router = await startRouter({ pricing: { ChatPricing: { "real-model": { InputText: 1, OutputText: 2 } } } });
  await router.deps.settings.update({ MODEL_MAPPER: "alias*=real-model", LEVEL_MAPPER: "real-*=2", SWITCH_OVER: "2=3" });
  const a = await addKey(router, { provider: "https://10.1.0.1/v1", level: 2, name: "primary-a" });
  const b = await addKey(router, { provider: "https://10.1.0.2/v1", level: 2, name: "primary-b" });
  const c = await addKey(router, { provider: "https://10.1.0.3/v1", level: 3, name: "backup-c" });
  keys = { a: a.id, b: b.id, c: c.id };
  expect((await router.fetch(`/x-keys/${b.id}/sleep`, { method: "POST" })).status).toBe(200);
});
afterAll(() => router?.stop());

const explain = async (query: string, key?: string) => {
  const res = key ? await fetch(`${router.url}/x-route?${query}`, { headers: { authorization: `Bearer ${key}` } }) : await router.fetch(`/x-route?${query}`);
  return { status: res.status, body: (await res.json()) as any };
};

describe("GET /x-route", () => {
  test("an owner sees the mapper steps, the Level chain and the keys in the order they would be tried", async () => {
    const { status, body } = await explain("model=alias-x");
    expect(status).toBe(200);
    expect(body).toMatchObject({
      object: "route",
      model: "alias-x",
      allowed: true,
      refused_by: null,
      model_mapper: { pattern: "alias*", target: "real-model" },
      effective_model: "real-model",
      level_mapper: { pattern: "real-*", level: 2 },
      level: 2,
      served: true,
      price: { InputText: 1, OutputText: 2 },
    });
    expect(body.levels.map((l: any) => [l.level, l.backup])).toEqual([[2, 3], [3, null]]);
    const [primary, backup] = body.levels;
    expect(primary.keys.map((k: any) => [k.ID, k.state, k.would_serve])).toEqual([
      [keys.a, "ready", true],
      [keys.b, "asleep", false],
    ]);
    expect(primary.keys[1].why).toContain("manual");
    expect(backup.keys).toEqual([{ ID: keys.c, Name: "backup-c", state: "ready", why: "ready", would_serve: false }]);
  });

  test("for an account whose AllowModels refuses the model, the refusing rule; its own limits are listed", async () => {
    const account = await createAccount(router, { AllowModels: "other-*", RPM: 7 });
    const { body } = await explain(`model=alias-x&account=${account.id}`);
    expect(body).toMatchObject({ account: { ID: account.id }, allowed: false, refused_by: { rule: "AllowModels" } });
    expect(body.refused_by.message).toContain("alias-x");
    expect(body.limits).toContainEqual(expect.objectContaining({ applies_to: "account", rpm: 7 }));
  });

  test("a manager asks about its subtree and sees Levels and states, not key ids or names", async () => {
    const manager = await createAccount(router, { Resources: "/x-users*,/x-dna*,/x-route,/dashboard/*" });
    const child = await createAccount(router, {}, manager.key);
    const { status, body } = await explain(`model=real-model&account=${child.id}`, manager.key);
    expect(status).toBe(200);
    expect(body.account.ID).toBe(child.id);
    for (const level of body.levels) for (const key of level.keys) expect(Object.keys(key).sort()).toEqual(["state", "why", "would_serve"]);
    // An account outside its subtree does not exist for it.
    const stranger = await createAccount(router);
    expect((await explain(`model=real-model&account=${stranger.id}`, manager.key)).status).toBe(404);
  });

  test("a plain account is refused; a missing model or an unknown family is 400 naming it", async () => {
    const plain = await createAccount(router, { Resources: "/x-route,/dashboard/*" });
    expect((await explain("model=real-model", plain.key)).status).toBe(403);
    expect((await explain("")).body.error.param).toBe("model");
    expect((await explain("model=m&family=cobol")).body.error.param).toBe("family");
  });
});

test("route explain agrees with where calls really go, translated ones included", async () => {
  const { json, startMockUpstream } = await import("../helpers/mock-upstream.ts");
  const native = startMockUpstream().route("POST", "/v1/chat/completions", (r) => json({ id: "c", object: "chat.completion", created: 1, model: r.json.model, choices: [{ index: 0, message: { role: "assistant", content: "native" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  const other = startMockUpstream().route("POST", "/v1/messages", (r) => json({ id: "m", type: "message", role: "assistant", model: r.json.model, content: [{ type: "text", text: "translated" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } }));
  try {
    // Level 7: an Anthropic-format key and, second, an OpenAI-format one; an OpenAI client prefers the native key.
    const anthropicKey = await addKey(router, { provider: other.url, level: 7, name: "an", config: { provider_type: "standard", formats: ["anthropic"] } });
    const openaiKey = await addKey(router, { provider: native.url, level: 7, name: "oa", config: { provider_type: "standard", formats: ["openai"] } });
    await router.deps.settings.update({ LEVEL_MAPPER: "real-*=2,seven-*=7", PRICING: { ChatPricing: { "real-model": { InputText: 1, OutputText: 2 }, "seven-*": { InputText: 1, OutputText: 1 } } } });
    const picked = (body: any) => body.levels[0].keys.find((k: any) => k.would_serve)?.ID;
    const chat = async () => {
      const res = await router.fetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "seven-m", messages: [{ role: "user", content: "hi" }] }) });
      return (await res.json()).choices[0].message.content;
    };
    expect(picked((await explain("model=seven-m")).body)).toBe(openaiKey.id);
    // An Anthropic client would get the Anthropic key, natively; the other is its translated fallback.
    const forAnthropic = (await explain("model=seven-m&format=anthropic")).body.levels[0].keys;
    expect(forAnthropic.map((k: any) => [k.ID, k.would_serve])).toEqual([[anthropicKey.id, true], [openaiKey.id, false]]);
    expect(forAnthropic[1].why).toContain("through a translator to openai-chat");
    expect((await explain("model=seven-m&format=cobol")).body.error.param).toBe("format");
    expect(await chat()).toBe("native");
    expect([native.requests.length, other.requests.length]).toEqual([1, 0]);
    // With the native key asleep, both the explanation and the call move to the translated one.
    expect((await router.fetch(`/x-keys/${openaiKey.id}/sleep`, { method: "POST" })).status).toBe(200);
    expect(picked((await explain("model=seven-m")).body)).toBe(anthropicKey.id);
    expect(await chat()).toBe("translated");
    expect([native.requests.length, other.requests.length]).toEqual([1, 1]);
  } finally {
    await native.stop();
    await other.stop();
  }
});

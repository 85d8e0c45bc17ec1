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

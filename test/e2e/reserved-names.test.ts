import { describe, expect, test } from "bun:test";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { perTest } from "../helpers/scoped.ts";

const scope = perTest();
const router = () => scope.router();

/** Names that exist on every plain object through Object.prototype. */
const PROTOTYPE_NAMES = ["toString", "hasOwnProperty", "valueOf", "constructor", "__proto__", "isPrototypeOf", "propertyIsEnumerable"];

/** A JSON object whose only own field is `name` (JSON.stringify would drop a "__proto__" key set through a literal). */
const bodyNamed = (name: string, value: unknown) => `{${JSON.stringify(name)}:${JSON.stringify(value)}}`;

describe("configuration item names ignore Object.prototype", () => {
  test.each(PROTOTYPE_NAMES)("PUT /x-config {%p: ...} is 400 naming the item, and nothing is written", async (name) => {
    const r = await router();
    const before = await api(r, "/x-config");
    const res = await r.fetch("/x-config", { method: "PUT", headers: { "content-type": "application/json" }, body: bodyNamed(name, "a=b") });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.message).toContain(`Unknown configuration item "${name}"`);
    expect(body.error.param).toBe(name);
    expect((await api(r, "/x-config")).body).toEqual(before.body);
    // The prototype of plain objects is untouched.
    expect(({} as Record<string, unknown>).a).toBeUndefined();
  });

  test.each(PROTOTYPE_NAMES)("DELETE /x-config {\"keys\":[%p]} is 400", async (name) => {
    const r = await router();
    const res = await api(r, "/x-config", { method: "DELETE", body: { keys: [name] } });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe(name);
  });

  test("a model named like a prototype member is an ordinary PRICING entry, not a lookup of Object.prototype", async () => {
    const r = await router();
    const pricing = `{"PRICING":{"ChatPricing":{"*":{"InputText":0,"OutputText":0},"toString":{"InputText":1,"OutputText":2},"__proto__":{"InputText":3,"OutputText":4}}}}`;
    const res = await r.fetch("/x-config", { method: "PUT", headers: { "content-type": "application/json" }, body: pricing });
    expect(res.status).toBe(200);
    const book = r.deps.settings.prices();
    expect(book.lookup("ChatPricing", "toString")).toMatchObject({ InputText: 1, OutputText: 2 });
    expect(book.lookup("ChatPricing", "__proto__")).toMatchObject({ InputText: 3, OutputText: 4 });
    expect(book.lookup("ChatPricing", "valueOf")).toMatchObject({ InputText: 0, OutputText: 0 });
  });
});

describe("names inside values ignore Object.prototype too", () => {
  test.each(PROTOTYPE_NAMES)("a PRICING section named %p is 400", async (name) => {
    const r = await router();
    const res = await r.fetch("/x-config", { method: "PUT", headers: { "content-type": "application/json" }, body: `{"PRICING":${bodyNamed(name, {})}}` });
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe("PRICING");
  });

  test.each(PROTOTYPE_NAMES)("a provider key whose config.provider_type is %p is 400", async (name) => {
    const r = await router();
    const res = await api(r, "/x-keys", { body: { Provider: "https://api.example.com", SecretKey: "sk-test-0123456789abcdef0123", Level: 1, Status: true, config: { provider_type: name } } });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe("config.provider_type");
  });
});

describe("management bodies refuse unknown fields", () => {
  test("POST /x-self with an extra field is 400 naming it, and the key still works", async () => {
    const r = await router();
    const account = await createAccount(r);
    const confirm = `${r.deps.clock.businessDate()}-ROTATE-SELF`;
    const res = await api(r, "/x-self", { key: account.key, body: { confirm, extra: 1 } });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe("extra");
    expect((await api(r, "/dashboard/status", { key: account.key })).status).toBe(200);
  });

  test.each([
    ["/x-users/batch-credit", "POST", { IDs: [1], CreditGranted: 1, extra: 1 }],
    ["/x-config", "DELETE", { keys: ["PRICING"], extra: 1 }],
    ["/x-config/test-mail", "POST", { to: "a@example.com", extra: 1 }],
    ["/x-news", "POST", { title: "t", content: "c", extra: 1 }],
    ["/x-users", "POST", { Email: "new@example.com", extra: 1 }],
    ["/x-keys", "POST", { Provider: "https://api.example.com", SecretKey: "sk-test-0123456789abcdef0123", Level: 1, Status: true, extra: 1 }],
  ] as Array<[string, string, Record<string, unknown>]>)("%s %s with an extra field is 400 naming it", async (path, method, body) => {
    const r = await router();
    const res = await api(r, path, { method, body });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe("extra");
  });
});

import { describe, expect, test } from "bun:test";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { perTest } from "../helpers/scoped.ts";

/** Issue 13, item 6: bounds on stored values; a refusal is a 400 naming the field, with nothing written. */

const scope = perTest();
const router = () => scope.router();

describe("Email", () => {
  test.each([
    ["a NUL", "a\u0000b@example.com"],
    ["a bell", "a\u0007b@example.com"],
    ["DEL", "ab\u007f@example.com"],
    ["a C1 control", "ab\u0085@example.com"],
    ["a line separator", "ab\u2028@example.com"],
    ["255 characters", `${"a".repeat(243)}@example.com`],
  ])("with %s is refused on create and update, nothing written", async (_what, email) => {
    const r = await router();
    const created = await api(r, "/x-users", { body: { Email: email } });
    expect(created.status).toBe(400);
    expect(created.body.error.param).toBe("Email");
    const account = await createAccount(r);
    const updated = await api(r, `/x-users/${account.id}`, { method: "PUT", body: { Email: email } });
    expect(updated.status).toBe(400);
    expect(updated.body.error.param).toBe("Email");
    expect((await api(r, `/x-users/${account.id}`)).body.Email).toBe(account.email);
    const billing = await api(r, `/x-users/${account.id}`, { method: "PUT", body: { BillingEmail: email } });
    expect(billing.status).toBe(400);
    expect(billing.body.error.param).toBe("BillingEmail");
  });

  test("254 characters are accepted", async () => {
    const r = await router();
    const email = `${"a".repeat(242)}@example.com`;
    expect(email).toHaveLength(254);
    expect((await api(r, "/x-users", { body: { Email: email } })).status).toBe(201);
  });
});

describe("SecretKey", () => {
  test("more than 64 KiB is refused; 64 KiB is accepted", async () => {
    const r = await router();
    const body = (secret: string) => ({ Provider: "https://api.example.com", SecretKey: secret, Level: 1, Status: true });
    const refused = await api(r, "/x-keys", { body: body("k".repeat(65_537)) });
    expect(refused.status).toBe(400);
    expect(refused.body.error.param).toBe("SecretKey");
    expect((await api(r, "/x-keys")).body.data ?? []).toHaveLength(0);
    expect((await api(r, "/x-keys", { body: body("k".repeat(65_536)) })).status).toBe(201);
  });
});

describe("numbers that would make a cost overflow", () => {
  test("Rates above 1000 is refused; 1000 is accepted", async () => {
    const r = await router();
    const account = await createAccount(r);
    const refused = await api(r, `/x-users/${account.id}`, { method: "PUT", body: { Rates: 1e308 } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.param).toBe("Rates");
    expect((await api(r, `/x-users/${account.id}`)).body.Rates).toBe(1);
    expect((await api(r, `/x-users/${account.id}`, { method: "PUT", body: { Rates: 1000 } })).status).toBe(200);
  });

  test.each(["DailyLimit", "HardLimit", "SoftLimit"])("%s above 1,000,000 credits is refused", async (field) => {
    const r = await router();
    const account = await createAccount(r);
    const refused = await api(r, `/x-users/${account.id}`, { method: "PUT", body: { [field]: 1e300 } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.param).toBe(field);
    expect((await api(r, `/x-users/${account.id}`)).body[field]).toBeNull();
  });

  test("a price above 10,000 is refused and PRICING is left as it was", async () => {
    const r = await router();
    const before = (await api(r, "/x-config")).body.PRICING;
    const refused = await api(r, "/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "big-*": { InputText: 1e308, OutputText: 1 } } } } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.param).toBe("PRICING");
    expect(refused.body.error.message).toContain("at most 10000");
    expect((await api(r, "/x-config")).body.PRICING).toEqual(before);
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { createApp } from "../../src/app.ts";
import { ProviderKeyEdit, ProviderKeyRecord } from "../../src/wire/provider-keys.ts";
import { ManagedAccount } from "../../src/wire/accounts.ts";
import { ConfigExport } from "../../src/wire/config.ts";
import { DESCRIBED_ROUTES } from "../../src/wire/openapi.ts";
import { createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import pkg from "../../package.json" with { type: "json" };

let router: TestRouter;
beforeAll(async () => {
  router = await startRouter();
});
afterAll(() => router?.stop());

/** The management routes the app serves: everything but the model APIs. */
const managementRoutes = (r: TestRouter) =>
  createApp(r.deps)
    .routes.filter((route) => !/^\/(v1|v1beta|chat|responses|embeddings|models)(\/|$)/.test(route.path))
    .map((route) => `${route.method} ${route.path}`);

describe("GET /openapi.json", () => {
  test("is served without a key, as OpenAPI 3.1 with the package version", async () => {
    const res = await fetch(`${router.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; info: { version: string }; paths: Record<string, unknown> };
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe(pkg.version);
  });

  test("describes every management path the app serves, and nothing it does not", () => {
    const served = new Set(managementRoutes(router));
    expect(served.size).toBeGreaterThan(30);
    expect([...served].filter((route) => !DESCRIBED_ROUTES.includes(route)).sort()).toEqual([]);
    expect(DESCRIBED_ROUTES.filter((route) => !served.has(route)).sort()).toEqual([]);
  });

  test("every reference resolves, and the schemas are those that check the bodies and shape the answers", async () => {
    const doc = (await (await fetch(`${router.url}/openapi.json`)).json()) as { components: { schemas: Record<string, unknown> } };
    const refs = [...JSON.stringify(doc).matchAll(/"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(30);
    for (const name of refs) expect(doc.components.schemas[name]).toBeDefined();
    // The published schemas are the wire models themselves, and the API's answers satisfy them.
    expect(doc.components.schemas.ManagedAccount).toEqual(JSON.parse(JSON.stringify(ManagedAccount)));
    expect(doc.components.schemas.ProviderKeyRecord).toEqual(JSON.parse(JSON.stringify(ProviderKeyRecord)));
    const account = await createAccount(router);
    const record = await (await router.fetch(`/x-users/${account.id}`)).json();
    expect(Value.Check(ManagedAccount, record)).toBe(true);
    const key = await (await router.fetch("/x-keys", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ Provider: "https://api.example.com/v1", SecretKey: "sk-openapi-0123456789abcdef", Level: 1, Status: true }) })).json();
    expect(Value.Check(ProviderKeyRecord, key)).toBe(true);
    // The console's edit form reads the record without its secret (fields=edit).
    expect(doc.components.schemas.ProviderKeyEdit).toEqual(JSON.parse(JSON.stringify(ProviderKeyEdit)));
    const edit = await (await router.fetch(`/x-keys/${key.ID}?fields=edit`)).json();
    expect(Value.Check(ProviderKeyEdit, edit)).toBe(true);
    expect(JSON.stringify(edit)).not.toContain("sk-openapi-0123456789abcdef");
    // The configuration export: the mapper items as their text form (spec 2.4), the others as they are.
    expect(doc.components.schemas.ConfigExport).toEqual(JSON.parse(JSON.stringify(ConfigExport)));
    const put = await router.fetch("/x-config", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ MODEL_MAPPER: { "gpt-4*": "gpt-4o" }, LEVEL_MAPPER: "claude-*=2", SWITCH_OVER: "1=2", EMAIL_PORT: 587 }) });
    expect(put.status).toBe(200);
    const exported = await put.json();
    expect(Value.Check(ConfigExport, exported)).toBe(true);
    expect(Value.Check(ConfigExport, { configs: { ...exported.configs, MODEL_MAPPER: { "gpt-4*": "gpt-4o" } } })).toBe(false);
    // No secret or default secret value sits in the description.
    expect(JSON.stringify(doc)).not.toContain("sk-openapi-0123456789abcdef");
  });
});

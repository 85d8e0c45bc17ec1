import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { api, createAccount, DEFAULT_RESOURCES, MANAGER_RESOURCES, type CreatedAccount } from "../helpers/owner-ops.ts";

/** Issue 8: RESOURCES, the system-wide API path allowlist, and its lock-out protection. */

let router: TestRouter;
let manager: CreatedAccount;
let member: CreatedAccount;

beforeAll(async () => {
  router = await startRouter();
  manager = await createAccount(router, { Resources: MANAGER_RESOURCES });
  member = await createAccount(router, { Resources: DEFAULT_RESOURCES });
});
afterAll(() => router.stop());
afterEach(async () => {
  await router.deps.settings.reset(["RESOURCES"]);
});

const setResources = (value: unknown) => api(router, "/x-config", { method: "PUT", body: { RESOURCES: value } });

function expectSystemRefusal(res: { status: number; body: any }) {
  expect(res.status).toBe(403);
  expect(res.body.error.code).toBe("resource_not_allowed");
  expect(res.body.error.message).toContain("system RESOURCES allowlist");
}

describe("RESOURCES item", () => {
  test("is stored trimmed and de-duplicated, exported as a string, and validated", async () => {
    const res = await setResources(" /v1/* , /x-config,/v1/*,/dashboard/* ");
    expect(res.status).toBe(200);
    expect(res.body.configs.RESOURCES).toBe("/v1/*,/x-config,/dashboard/*");
    // The export imports back unchanged.
    expect((await api(router, "/x-config", { method: "PUT", body: res.body.configs })).status).toBe(200);

    const bad = await setResources("/v1/*,x-keys");
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe("RESOURCES");
    expect(bad.body.error.message).toContain("x-keys");
    expect((await setResources(42)).status).toBe(400);
    expect((await setResources("/v1/*,/has space")).status).toBe(400);
    // A failed write changed nothing.
    expect((await api(router, "/x-config")).body.configs.RESOURCES).toBe("/v1/*,/x-config,/dashboard/*");
  });

  test("an array of patterns is accepted too", async () => {
    const res = await setResources(["/v1/*", "/x-keys*"]);
    expect(res.status).toBe(200);
    expect(res.body.configs.RESOURCES).toBe("/v1/*,/x-keys*");
  });
});

describe("enforcement", () => {
  test("a path outside RESOURCES is 403 even for the owner, immediately", async () => {
    expect((await api(router, "/x-keys")).status).toBe(200);
    expect((await setResources("/v1/*,/x-config,/dashboard/*")).status).toBe(200);
    expectSystemRefusal(await api(router, "/x-keys"));
    expectSystemRefusal(await api(router, "/x-users"));
    expectSystemRefusal(await api(router, "/x-users", { key: manager.key }));
    // Paths inside it still work, for the owner and for others.
    expect((await api(router, "/dashboard/status")).status).toBe(200);
    expect((await api(router, "/dashboard/status", { key: member.key })).status).toBe(200);
    expect((await api(router, "/v1/models", { key: member.key })).status).toBe(200);
  });

  test("the account's own Resources still apply inside the system allowlist", async () => {
    expect((await setResources("/v1/*,/x-config,/dashboard/*,/x-users*")).status).toBe(200);
    expect((await api(router, "/x-users", { key: manager.key })).status).toBe(200);
    const res = await api(router, "/x-users", { key: member.key });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("resource_not_allowed");
    expect(res.body.error.message).not.toContain("system RESOURCES");
  });

  test("model endpoints are refused in their family's envelope", async () => {
    expect((await setResources("/x-config,/dashboard/*")).status).toBe(200);
    const openai = await api(router, "/v1/chat/completions", { body: { model: "gpt-4o", messages: [] } });
    expectSystemRefusal(openai);
    const anthropic = await router.fetch("/v1/messages", { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect(anthropic.status).toBe(403);
    expect((await anthropic.json()).type).toBe("error");
  });

  test("/healthz and keyless /x-pricing stay open; /x-pricing with a key follows RESOURCES", async () => {
    expect((await setResources("/v1/*")).status).toBe(200);
    expect((await api(router, "/healthz", { key: null })).status).toBe(200);
    expect((await api(router, "/x-pricing", { key: null })).status).toBe(200);
    expectSystemRefusal(await api(router, "/x-pricing", { key: member.key }));
  });

  test("an empty RESOURCES means no system restriction", async () => {
    expect((await setResources("/v1/*")).status).toBe(200);
    expectSystemRefusal(await api(router, "/x-keys"));
    const res = await setResources("");
    expect(res.status).toBe(200);
    expect(res.body.configs.RESOURCES).toBe("");
    expect((await api(router, "/x-keys")).status).toBe(200);
    expect((await api(router, "/x-users", { key: manager.key })).status).toBe(200);
  });
});

describe("lock-out protection", () => {
  test("a value that leaves out /x-config is accepted, and the owner can still undo it", async () => {
    // Nothing but the model API: owners included, everything else is refused...
    expect((await setResources("/v1/*")).status).toBe(200);
    expectSystemRefusal(await api(router, "/x-keys"));
    expectSystemRefusal(await api(router, "/dashboard/live"));
    // ...except the owner's way back: every method of /x-config, and who-am-I.
    const exported = await api(router, "/x-config");
    expect(exported.status).toBe(200);
    expect(exported.body.configs.RESOURCES).toBe("/v1/*");
    expect((await api(router, "/dashboard/status")).body.isOwner).toBe(true);
    expect((await api(router, "/dashboard/info")).status).toBe(200);
    // The exception is the owner's only: other accounts are refused there.
    expectSystemRefusal(await api(router, "/dashboard/status", { key: member.key }));
    expectSystemRefusal(await api(router, "/x-config", { key: manager.key }));
    // And only /x-config itself, not its sub-paths.
    expectSystemRefusal(await api(router, "/x-config/test-mail", { body: {} }));

    // PUT changes it back...
    expect((await setResources("/v1/*,/x-keys")).status).toBe(200);
    expect((await api(router, "/x-keys")).status).toBe(200);
    expectSystemRefusal(await api(router, "/x-users"));
    // ...and DELETE removes it, restoring access everywhere.
    const reset = await api(router, "/x-config", { method: "DELETE", body: { keys: ["RESOURCES"] } });
    expect(reset.status).toBe(200);
    expect(reset.body.configs.RESOURCES).toBeUndefined();
    expect((await api(router, "/x-users")).status).toBe(200);
    expect((await api(router, "/dashboard/status", { key: member.key })).status).toBe(200);
  });

  test("a non-owner cannot change RESOURCES", async () => {
    const res = await api(router, "/x-config", { method: "PUT", body: { RESOURCES: "/v1/*" }, key: manager.key });
    expect(res.status).toBe(403);
    expect(router.deps.settings.raw("RESOURCES")).toBeUndefined();
  });

  test("the setting survives a restart and is enforced from the first request", async () => {
    expect((await setResources("/v1/*")).status).toBe(200);
    const again = await startRouter({ dataDir: router.dataDir });
    try {
      expectSystemRefusal(await api(again, "/x-keys"));
      expect((await api(again, "/x-config")).status).toBe(200);
    } finally {
      await again.stop();
    }
  });
});

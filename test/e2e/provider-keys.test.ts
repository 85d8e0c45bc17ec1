import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { hashApiKey, issueApiKey } from "../../src/accounts/api-keys.ts";
import { startRouter, tempDir, type TestRouter } from "../helpers/router.ts";

// Names are resolved when a key is written; a slow resolver costs up to 2 s per new name.
setDefaultTimeout(30_000);

/** Every secret sent in this file, checked at the end against logs and database bytes. */
const secretsUsed: string[] = [];
function secret(tag = "k"): string {
  const value = `sk-test-${tag}-${randomBytes(16).toString("hex")}`;
  secretsUsed.push(value);
  return value;
}

const SUMMARY_FIELDS = ["ID", "Name", "Level", "Provider", "PartialKey", "NoSleep", "Status", "Sleeping", "CreatedAt"];
const FULL_FIELDS = [...SUMMARY_FIELDS, "SecretKey", "config", "SleepReason", "SleepUntil", "UpdatedAt", "Health"];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function serviceAccount(projectId?: string): string {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const json = JSON.stringify({
    type: "service_account",
    ...(projectId && { project_id: projectId }),
    private_key_id: "abc123",
    private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    client_email: "router@example-project.iam.gserviceaccount.com",
  });
  secretsUsed.push(json);
  return json;
}

const json = (body: unknown): RequestInit => ({
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

function keyBody(overrides: Record<string, unknown> = {}) {
  return { Provider: "https://api.example.com/v1", SecretKey: secret(), Level: 1, Status: true, ...overrides };
}

async function create(router: TestRouter, overrides: Record<string, unknown> = {}): Promise<any> {
  const res = await router.fetch("/x-keys", { method: "POST", ...json(keyBody(overrides)) });
  expect(res.status).toBe(201);
  return res.json();
}

async function total(router: TestRouter): Promise<number> {
  const res = await router.fetch("/x-keys?fields=summary");
  expect(res.status).toBe(200);
  return Number(res.headers.get("x-total-count"));
}

/** Sends a request that must be refused with 400 naming `param`, and checks nothing was written. */
async function refused(router: TestRouter, path: string, method: string, body: unknown, param: string | null): Promise<any> {
  const before = await total(router);
  const snapshot = await router.deps.providerKeys.all();
  const res = await router.fetch(path, { method, ...json(body) });
  const payload: any = await res.json();
  expect({ status: res.status, param: payload.error?.param }).toEqual({ status: 400, param });
  expect(payload.error.type).toBe("invalid_request_error");
  expect(await total(router)).toBe(before);
  expect(await router.deps.providerKeys.all()).toEqual(snapshot);
  return payload;
}

describe("provider keys: records, access and lifecycle", () => {
  let router: TestRouter;
  beforeAll(async () => {
    router = await startRouter();
  });
  afterAll(() => router.stop());

  test("a missing key is 401; a non-owner account is 403 in the OpenAI envelope", async () => {
    expect((await router.fetch("/x-keys", { key: null })).status).toBe(401);
    const issued = issueApiKey();
    const now = Date.now();
    await router.deps.store.accounts.insert(
      {
        parentId: 1,
        depth: 2,
        isOwner: false,
        email: "child@example.com",
        name: "child-account",
        keyHash: hashApiKey(issued.key),
        keyPrefix: issued.prefix,
        createdAt: now,
        updatedAt: now,
      },
      "/1/",
    );
    for (const [method, path] of [["GET", "/x-keys"], ["POST", "/x-keys"], ["GET", "/x-keys/1"], ["DELETE", "/x-keys/1"], ["POST", "/x-keys/1/sleep"]]) {
      const res = await router.fetch(path!, { method, key: issued.key, ...(method === "POST" ? json(keyBody()) : {}) });
      expect(res.status).toBe(403);
      const body: any = await res.json();
      // The owner check, or the account's default Resources before it, refuses.
      expect(body.error.type).toBe("permission_error");
      expect(JSON.stringify(body)).not.toContain(issued.key);
    }
    expect(await total(router)).toBe(0);
  });

  test("POST creates a key (201) and answers the full record", async () => {
    const sk = secret("create");
    const res = await router.fetch("/x-keys", {
      method: "POST",
      ...json({ Provider: "https://api.example.com/v1", SecretKey: sk, Level: 1, Status: true, Name: "primary" }),
    });
    expect(res.status).toBe(201);
    const key: any = await res.json();
    expect(Object.keys(key).sort()).toEqual([...FULL_FIELDS].sort());
    expect(key).toMatchObject({
      Name: "primary",
      Level: 1,
      Provider: "https://api.example.com/v1",
      PartialKey: `…${sk.slice(-20)}`,
      NoSleep: false,
      Status: true,
      Sleeping: false,
      SecretKey: sk,
      config: { provider_type: "standard" },
      SleepReason: null,
      SleepUntil: null,
    });
    expect(key.CreatedAt).toMatch(ISO);
    expect(key.UpdatedAt).toMatch(ISO);
    expect(router.deps.pool.keysOf(1).map((k) => k.id)).toContain(key.ID);

    const again = await router.fetch(`/x-keys/${key.ID}`);
    expect(await again.json()).toEqual(key);
  });

  test("fields=summary has exactly the summary fields and a masked secret", async () => {
    const sk = secret("summary");
    const key = await create(router, { SecretKey: sk, Name: "summary", NoSleep: true });
    const res = await router.fetch(`/x-keys/${key.ID}?fields=summary`);
    const summary: any = await res.json();
    expect(Object.keys(summary).sort()).toEqual([...SUMMARY_FIELDS].sort());
    expect(summary.PartialKey).toBe(`…${sk.slice(-20)}`);
    expect(summary.NoSleep).toBe(true);
    expect(JSON.stringify(summary)).not.toContain(sk);
    const list: any[] = await (await router.fetch(`/x-keys?fields=summary&id=${key.ID}`)).json();
    expect(list).toEqual([summary]);
  });

  test("fields=overview adds the type, a Vertex key's service account and its sleep, never the secret", async () => {
    const sk = secret("overview");
    const plain = await create(router, { SecretKey: sk, Name: "overview" });
    const sa = serviceAccount("p-overview");
    const vertex = await create(router, { SecretKey: sa, Name: "vertex-overview", config: { provider_type: "vertex" } });
    const sleeping = await router.fetch(`/x-keys/${plain.ID}/sleep`, { method: "POST" });
    expect(sleeping.status).toBe(200);
    const list: any[] = await (await router.fetch(`/x-keys?fields=overview&size=100`)).json();
    const mine = list.filter((k) => k.ID === plain.ID || k.ID === vertex.ID);
    expect(mine.map((k) => Object.keys(k).sort())).toEqual([0, 1].map(() => [...SUMMARY_FIELDS, "ProviderType", "ClientEmail", "SleepReason", "SleepUntil", "Health"].sort()));
    expect(mine.find((k) => k.ID === plain.ID)).toMatchObject({ ProviderType: "standard", ClientEmail: null, Sleeping: true, SleepReason: "manual", SleepUntil: null });
    expect(mine.find((k) => k.ID === vertex.ID)).toMatchObject({ ProviderType: "vertex", ClientEmail: JSON.parse(sa).client_email, Sleeping: false, SleepReason: null });
    const text = JSON.stringify(list);
    expect(text).not.toContain(sk);
    expect(text).not.toContain("PRIVATE KEY");
    expect(await (await router.fetch(`/x-keys/${vertex.ID}?fields=overview`)).json()).toEqual(mine.find((k) => k.ID === vertex.ID));
    const bad = await router.fetch("/x-keys?fields=everything");
    expect({ status: bad.status, param: ((await bad.json()) as any).error.param }).toEqual({ status: 400, param: "fields" });
  });

  test("fields=edit is the full record without SecretKey: what the console's key form reads, never the secret", async () => {
    const sk = secret("edit");
    const plain = await create(router, { SecretKey: sk, Name: "edit" });
    const sa = serviceAccount("p-edit");
    const vertex = await create(router, { SecretKey: sa, Name: "vertex-edit", config: { provider_type: "vertex" } });
    for (const [key, secretKey] of [
      [plain, sk],
      [vertex, sa],
    ] as const) {
      const res = await router.fetch(`/x-keys/${key.ID}?fields=edit`);
      expect(res.status).toBe(200);
      const edit: any = await res.json();
      expect(Object.keys(edit).sort()).toEqual(FULL_FIELDS.filter((f) => f !== "SecretKey").sort());
      const { SecretKey, ...rest } = (await (await router.fetch(`/x-keys/${key.ID}`)).json()) as any;
      expect(SecretKey).toBe(secretKey);
      expect(edit).toEqual(rest);
      expect(JSON.stringify(edit)).not.toContain(secretKey);
      expect(JSON.stringify(edit)).not.toContain("PRIVATE KEY");
    }
    const list: any[] = await (await router.fetch(`/x-keys?fields=edit&id=${plain.ID}`)).json();
    expect(list).toEqual([await (await router.fetch(`/x-keys/${plain.ID}?fields=edit`)).json()]);
  });

  test("writes are answered in the form asked for (fields=edit or summary: no secret back); a bad form refuses the write before anything is written", async () => {
    const sk = secret("write-form");
    const post = await router.fetch("/x-keys?fields=edit", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ Provider: "https://api.example.com/v1", SecretKey: sk, Level: 1, Status: true, Name: "write-form" }),
    });
    expect(post.status).toBe(201);
    const created: any = await post.json();
    expect(created.SecretKey).toBeUndefined();
    expect(created).toMatchObject({ Name: "write-form", PartialKey: `…${sk.slice(-20)}` });
    const put = await router.fetch(`/x-keys/${created.ID}?fields=summary`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ Name: "renamed" }) });
    expect(put.status).toBe(200);
    const text = await put.text();
    expect(text).not.toContain(sk);
    expect(JSON.parse(text)).toMatchObject({ ID: created.ID, Name: "renamed" });
    for (const action of ["sleep", "wake"]) {
      const res = await router.fetch(`/x-keys/${created.ID}/${action}?fields=edit`, { method: "POST" });
      expect(res.status).toBe(200);
      expect(await res.text()).not.toContain(sk);
    }
    // Without fields, a write's answer is the full record, as the spec says.
    const full: any = await (await router.fetch(`/x-keys/${created.ID}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ Name: "full" }) })).json();
    expect(full.SecretKey).toBe(sk);
    // A form that does not exist: 400 naming fields, and the write is not made.
    const before = (await (await router.fetch("/x-keys")).json()) as any[];
    const badPost = await router.fetch("/x-keys?fields=everything", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ Provider: "https://api.example.com/v1", SecretKey: secret("never"), Level: 1, Status: true }),
    });
    expect({ status: badPost.status, param: ((await badPost.json()) as any).error.param }).toEqual({ status: 400, param: "fields" });
    const badPut = await router.fetch(`/x-keys/${created.ID}?fields=everything`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ Name: "never" }) });
    expect(badPut.status).toBe(400);
    expect((await (await router.fetch("/x-keys")).json()) as any[]).toEqual(before);
  });

  test("GET of an unknown id is 404, of a non-integer id 400", async () => {
    const missing = await router.fetch("/x-keys/99999");
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.type).toBe("not_found_error");
    for (const bad of ["abc", "1.5", "0", "-2"]) {
      const res = await router.fetch(`/x-keys/${bad}`);
      expect(res.status).toBe(400);
      expect((await res.json()).error.param).toBe("id");
    }
    expect((await router.fetch("/x-keys/1?fields=everything")).status).toBe(400);
  });

  test("PUT rotates the secret, changes flags and moves the key in the pool at once", async () => {
    const key = await create(router, { Level: 3 });
    const rotated = secret("rotated");
    const res = await router.fetch(`/x-keys/${key.ID}`, {
      method: "PUT",
      ...json({ SecretKey: rotated, Name: "renamed", NoSleep: true, Level: 4 }),
    });
    expect(res.status).toBe(200);
    const updated: any = await res.json();
    expect(updated).toMatchObject({ ID: key.ID, SecretKey: rotated, PartialKey: `…${rotated.slice(-20)}`, Name: "renamed", NoSleep: true, Level: 4 });
    expect(updated.PartialKey).not.toBe(key.PartialKey);
    expect(updated.CreatedAt).toBe(key.CreatedAt);
    expect(router.deps.pool.get(key.ID)!.secret).toBe(rotated);
    expect(router.deps.pool.keysOf(3).some((k) => k.id === key.ID)).toBe(false);
    expect(router.deps.pool.keysOf(4).map((k) => k.id)).toContain(key.ID);

    const off: any = await (await router.fetch(`/x-keys/${key.ID}`, { method: "PUT", ...json({ Status: false }) })).json();
    expect(off.Status).toBe(false);
    expect(router.deps.pool.get(key.ID)!.status).toBe(false);
    const on: any = await (await router.fetch(`/x-keys/${key.ID}`, { method: "PUT", ...json({ Status: true }) })).json();
    expect(on).toMatchObject({ Status: true, SecretKey: rotated, Name: "renamed" });
    expect(router.deps.pool.get(key.ID)!.status).toBe(true);

    expect((await router.fetch("/x-keys/99999", { method: "PUT", ...json({ Status: true }) })).status).toBe(404);
  });

  test("sleep and wake flip Sleeping in the record and in the pool", async () => {
    const key = await create(router, { Level: 5 });
    const slept: any = await (await router.fetch(`/x-keys/${key.ID}/sleep`, { method: "POST" })).json();
    expect(slept).toMatchObject({ ID: key.ID, Sleeping: true, SleepReason: "manual", SleepUntil: null, SecretKey: key.SecretKey });
    expect(router.deps.pool.get(key.ID)!.sleeping).toBe(true);
    expect(router.deps.pool.hasUsable(5)).toBe(false);

    const woke = await router.fetch(`/x-keys/${key.ID}/wake`, { method: "POST" });
    expect(woke.status).toBe(200);
    expect(await woke.json()).toMatchObject({ ID: key.ID, Sleeping: false, SleepReason: null });
    expect(router.deps.pool.get(key.ID)!.sleeping).toBe(false);
    expect((await router.fetch("/x-keys/99999/sleep", { method: "POST" })).status).toBe(404);
  });

  test("DELETE refuses the last enabled key of a routed Level unless forced", async () => {
    // Level 1 (the default Level) holds several keys by now; leave exactly one enabled.
    const level1 = (await router.deps.providerKeys.all()).filter((k) => k.level === 1);
    for (const k of level1.slice(1)) {
      expect((await router.fetch(`/x-keys/${k.id}`, { method: "DELETE" })).status).toBe(200);
    }
    const last = level1[0]!;
    const refusedRes = await router.fetch(`/x-keys/${last.id}`, { method: "DELETE" });
    expect(refusedRes.status).toBe(409);
    const error: any = (await refusedRes.json()).error;
    expect(error.type).toBe("conflict_error");
    expect(error.message).toContain("force=true");
    expect(error.message).toContain("Level 1");
    expect(await router.deps.providerKeys.get(last.id)).toBeDefined();

    const forced = await router.fetch(`/x-keys/${last.id}?force=true`, { method: "DELETE" });
    expect(forced.status).toBe(200);
    expect(await forced.json()).toEqual({ id: last.id, object: "provider_key", deleted: true });
    expect(router.deps.pool.get(last.id)).toBeUndefined();
    expect(router.deps.pool.keysOf(1)).toHaveLength(0);
    expect((await router.fetch(`/x-keys/${last.id}`)).status).toBe(404);
    expect((await router.fetch(`/x-keys/${last.id}`, { method: "DELETE" })).status).toBe(404);
  });

  test("DELETE consults LEVEL_MAPPER; unmapped Levels and disabled keys delete freely", async () => {
    const unmapped = await create(router, { Level: 7 });
    expect((await router.fetch(`/x-keys/${unmapped.ID}`, { method: "DELETE" })).status).toBe(200);
    expect(router.deps.pool.keysOf(7)).toHaveLength(0);

    await router.deps.settings.update({ LEVEL_MAPPER: "gpt-*=8" });
    const mapped = await create(router, { Level: 8 });
    const disabled = await create(router, { Level: 8, Status: false });
    expect((await router.fetch(`/x-keys/${mapped.ID}`, { method: "DELETE" })).status).toBe(409);
    expect((await router.fetch(`/x-keys/${disabled.ID}`, { method: "DELETE" })).status).toBe(200);
    const second = await create(router, { Level: 8 });
    expect((await router.fetch(`/x-keys/${mapped.ID}`, { method: "DELETE" })).status).toBe(200);
    expect(router.deps.pool.keysOf(8).map((k) => k.id)).toEqual([second.ID]);
    expect((await router.fetch(`/x-keys/${second.ID}?force=yes`, { method: "DELETE" })).status).toBe(400);
  });
});

describe("provider keys: listing", () => {
  let router: TestRouter;
  beforeAll(async () => {
    router = await startRouter();
    for (let i = 0; i < 25; i++) {
      const provider = i < 10 ? "https://alpha.example.com/v1" : "https://beta.example.net/openai";
      await create(router, { Level: (i % 3) + 1, Provider: provider, Name: `key-${i}` });
    }
  });
  afterAll(() => router.stop());

  const headers = (res: Response) =>
    ["x-total-count", "x-total-pages", "x-page", "x-per-page"].map((h) => Number(res.headers.get(h)));

  test("pages of 10 over 25 keys: 3 pages with pagination headers", async () => {
    const ids: number[] = [];
    for (const [page, length] of [[1, 10], [2, 10], [3, 5]] as const) {
      const res = await router.fetch(`/x-keys?fields=summary&size=10&page=${page}`);
      expect(res.status).toBe(200);
      expect(headers(res)).toEqual([25, 3, page, 10]);
      const body: any[] = await res.json();
      expect(Array.isArray(body)).toBe(true);
      expect(body).toHaveLength(length);
      for (const item of body) expect(Object.keys(item).sort()).toEqual([...SUMMARY_FIELDS].sort());
      ids.push(...body.map((k) => k.ID));
    }
    expect(new Set(ids).size).toBe(25);
    const beyond = await router.fetch("/x-keys?fields=summary&size=10&page=4");
    expect(await beyond.json()).toEqual([]);
    expect(headers(beyond)).toEqual([25, 3, 4, 10]);
  });

  test("defaults: page 1, size 20", async () => {
    const res = await router.fetch("/x-keys?fields=summary");
    expect(headers(res)).toEqual([25, 2, 1, 20]);
    expect(await res.json()).toHaveLength(20);
  });

  test("filters by level, provider substring and id", async () => {
    const level2 = await router.fetch("/x-keys?fields=summary&level=2&size=100");
    const byLevel: any[] = await level2.json();
    expect(byLevel.length).toBe(8);
    expect(byLevel.every((k) => k.Level === 2)).toBe(true);
    expect(level2.headers.get("x-total-count")).toBe("8");

    const beta: any[] = await (await router.fetch("/x-keys?fields=summary&provider=beta.example&size=100")).json();
    expect(beta).toHaveLength(15);
    expect(beta.every((k) => k.Provider.includes("beta.example"))).toBe(true);

    const combined = await router.fetch("/x-keys?fields=summary&provider=alpha&level=1");
    expect(combined.headers.get("x-total-count")).toBe("4");

    const one: any[] = await (await router.fetch(`/x-keys?fields=summary&id=${beta[0].ID}`)).json();
    expect(one.map((k) => k.ID)).toEqual([beta[0].ID]);
    const none = await router.fetch("/x-keys?fields=summary&id=99999");
    expect(await none.json()).toEqual([]);
    expect(headers(none)).toEqual([0, 0, 1, 20]);
  });

  test("without fields=summary the list carries full records", async () => {
    const body: any[] = await (await router.fetch("/x-keys?size=1")).json();
    expect(Object.keys(body[0]).sort()).toEqual([...FULL_FIELDS].sort());
  });

  test("page and size outside their ranges, or not integers, are 400 naming the parameter", async () => {
    for (const [query, param] of [
      ["page=0", "page"],
      ["page=-1", "page"],
      ["page=1.5", "page"],
      ["page=abc", "page"],
      ["size=0", "size"],
      ["size=101", "size"],
      ["size=2e1", "size"],
      ["level=x", "level"],
      ["id=1.0", "id"],
    ]) {
      const res = await router.fetch(`/x-keys?fields=summary&${query}`);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect((await res.json()).error.param).toBe(param);
    }
    expect((await router.fetch("/x-keys?fields=summary&size=100")).status).toBe(200);
  });
});

describe("provider keys: validation writes nothing", () => {
  let router: TestRouter;
  let port: number;
  let existing: any;
  beforeAll(async () => {
    router = await startRouter({ config: { baseUrl: "https://router.example.org" } });
    port = Number(new URL(router.url).port);
    existing = await create(router, { Level: 2 });
  });
  afterAll(() => router.stop());

  test("Provider must be https, a URL, and not this router", async () => {
    await refused(router, "/x-keys", "POST", keyBody({ Provider: "http://api.example.com/v1" }), "Provider");
    await refused(router, "/x-keys", "POST", keyBody({ Provider: "not a url" }), "Provider");
    await refused(router, "/x-keys", "POST", keyBody({ Provider: "ftp://api.example.com" }), "Provider");
    await refused(router, "/x-keys", "POST", keyBody({ Provider: 42 }), "Provider");
    await refused(router, "/x-keys", "POST", keyBody({ Provider: "https://user:pw@api.example.com" }), "Provider");
    await refused(router, "/x-keys", "POST", keyBody({ Provider: router.url.replace("http:", "https:") + "/v1" }), "Provider");
    await refused(router, "/x-keys", "POST", keyBody({ Provider: `https://localhost:${port}/v1` }), "Provider");
    await refused(router, "/x-keys", "POST", keyBody({ Provider: `https://[::ffff:127.0.0.1]:${port}` }), "Provider");
    await refused(router, "/x-keys", "POST", keyBody({ Provider: "https://router.example.org/v1" }), "Provider");
    await refused(router, "/x-keys", "POST", keyBody({ Provider: "https://ROUTER.example.org:443" }), "Provider");
    await refused(router, `/x-keys/${existing.ID}`, "PUT", { Provider: `https://127.0.0.1:${port}` }, "Provider");
    // The same host on another port, or the base URL's host on another port, is someone else.
    await create(router, { Provider: "https://127.0.0.1:1/v1", Level: 9 });
    await create(router, { Provider: "https://router.example.org:8443/v1", Level: 9 });
  });

  test("SecretKey, Level, Status, Name and NoSleep have their types and ranges", async () => {
    const short = "sk-short-secret-1234";
    const body = await refused(router, "/x-keys", "POST", keyBody({ SecretKey: short.slice(0, 19) }), "SecretKey");
    expect(body.error.message).not.toContain(short.slice(0, 19));
    await refused(router, "/x-keys", "POST", keyBody({ SecretKey: 12345678901234567890 }), "SecretKey");
    await refused(router, "/x-keys", "POST", keyBody({ SecretKey: `${secret("nl")}\n` }), "SecretKey");
    for (const level of [0, -1, 1.5, "1", null]) {
      await refused(router, "/x-keys", "POST", keyBody({ Level: level }), "Level");
    }
    await refused(router, "/x-keys", "POST", { Provider: "https://api.example.com", SecretKey: secret(), Level: 1 }, "Status");
    await refused(router, "/x-keys", "POST", { Provider: "https://api.example.com", Level: 1, Status: true }, "SecretKey");
    await refused(router, "/x-keys", "POST", { SecretKey: secret(), Level: 1, Status: true }, "Provider");
    await refused(router, "/x-keys", "POST", keyBody({ Status: "true" }), "Status");
    await refused(router, "/x-keys", "POST", keyBody({ NoSleep: 1 }), "NoSleep");
    await refused(router, "/x-keys", "POST", keyBody({ Name: "x".repeat(101) }), "Name");
    await refused(router, `/x-keys/${existing.ID}`, "PUT", { Level: 0 }, "Level");
    await refused(router, `/x-keys/${existing.ID}`, "PUT", { SecretKey: "too-short" }, "SecretKey");
  });

  test("unknown fields are refused by name, with everything else valid", async () => {
    await refused(router, "/x-keys", "POST", keyBody({ Secret: "x" }), "Secret");
    await refused(router, `/x-keys/${existing.ID}`, "PUT", { Status: false, sleeping: true }, "sleeping");
  });

  test("config: type, azure members and vertex service accounts", async () => {
    await refused(router, "/x-keys", "POST", keyBody({ config: "azure" }), "config");
    await refused(router, "/x-keys", "POST", keyBody({ config: { provider_type: "bedrock" } }), "config.provider_type");
    await refused(router, "/x-keys", "POST", keyBody({ config: { provider_type: "standard", deployments: {} } }), "config.deployments");
    await refused(router, "/x-keys", "POST", keyBody({ config: { provider_type: "azure", endpoint: "x" } }), "config.endpoint");
    await refused(router, "/x-keys", "POST", keyBody({ config: { provider_type: "azure", deployments: { "gpt-4o": "" } } }), "config.deployments");
    await refused(router, "/x-keys", "POST", keyBody({ config: { provider_type: "azure", api_versions: ["x"] } }), "config.api_versions");

    const notSa = secret("vertex");
    const body = await refused(router, "/x-keys", "POST", keyBody({ SecretKey: notSa, config: { provider_type: "vertex", project_id: "p-1" } }), "SecretKey");
    expect(body.error.message).toContain("service account");
    expect(body.error.message).not.toContain(notSa);
    await refused(router, "/x-keys", "POST", keyBody({ SecretKey: serviceAccount(), config: { provider_type: "vertex" } }), "config.project_id");
    await refused(router, "/x-keys", "POST", keyBody({ SecretKey: serviceAccount("p"), config: { provider_type: "vertex", location: "US_CENTRAL1" } }), "config.location");
    await refused(router, "/x-keys", "POST", keyBody({ SecretKey: serviceAccount("p"), config: { provider_type: "vertex", base_url: "http://x.example" } }), "config.base_url");
    await refused(router, "/x-keys", "POST", keyBody({ SecretKey: serviceAccount("p"), config: { provider_type: "vertex", token_uri: `https://localhost:${port}/token` } }), "config.token_uri");

    const azure = await create(router, { config: { provider_type: "azure", deployments: { "gpt-4o": "prod-4o" }, api_versions: { "gpt-4o": "2024-10-21" } } });
    // The record shows `formats` filled with the provider type's default (issue 16).
    expect(azure.config).toEqual({ provider_type: "azure", deployments: { "gpt-4o": "prod-4o" }, api_versions: { "gpt-4o": "2024-10-21" }, formats: ["openai", "responses"] });

    const sa = serviceAccount("my-project");
    const vertex = await create(router, { Provider: "https://aiplatform.googleapis.com", SecretKey: sa, config: { provider_type: "vertex", location: "us-central1" } });
    expect(vertex.SecretKey).toBe(sa);
    expect(vertex.config).toEqual({ provider_type: "vertex", location: "us-central1", formats: ["gemini", "anthropic", "openai"] });
    expect((await create(router, { SecretKey: serviceAccount(), config: { provider_type: "vertex", project_id: "other-project" } })).config.project_id).toBe("other-project");

    // A vertex key's new secret must still be a service account; a config change is checked against the stored secret.
    await refused(router, `/x-keys/${vertex.ID}`, "PUT", { SecretKey: secret("not-sa") }, "SecretKey");
    await refused(router, `/x-keys/${existing.ID}`, "PUT", { config: { provider_type: "vertex", project_id: "p" } }, "SecretKey");
    const rotatedSa = serviceAccount("my-project");
    const updated: any = await (await router.fetch(`/x-keys/${vertex.ID}`, { method: "PUT", ...json({ SecretKey: rotatedSa }) })).json();
    expect(updated.SecretKey).toBe(rotatedSa);
  });

  test("bodies that are not JSON objects are 400 without echoing them", async () => {
    const sk = secret("unquoted");
    for (const raw of [`{"SecretKey": ${sk}}`, "[]", "", "null"]) {
      const before = await total(router);
      const res = await router.fetch("/x-keys", { method: "POST", ...json(raw) });
      expect(res.status).toBe(400);
      expect(await res.text()).not.toContain(sk.slice(8));
      expect(await total(router)).toBe(before);
    }
  });

  test("no secret appears in the logs or in the database files", async () => {
    const logs = router.logs.join("\n");
    const files = ["router.db", "router.db-wal"].map((f) => join(router.dataDir, f)).filter(existsSync);
    expect(files.length).toBeGreaterThan(0);
    const bytes = files.map((f) => readFileSync(f));
    expect(secretsUsed.length).toBeGreaterThan(10);
    for (const sk of secretsUsed) {
      expect(logs).not.toContain(sk);
      for (const b of bytes) expect(b.includes(Buffer.from(sk))).toBe(false);
    }
    // The masked tail is shown by design (spec 2.1), never logged whole, and stored only sealed.
    for (const sk of secretsUsed) expect(logs).not.toContain(sk.slice(0, -20));
    for (const sk of secretsUsed) for (const b of bytes) expect(b.includes(Buffer.from(sk.slice(-20)))).toBe(false);
  });
});

/** The bytes of the router's database files (what a copy or a backup holds). */
function databaseBytes(r: TestRouter): Buffer[] {
  return ["router.db", "router.db-wal"].map((f) => join(r.dataDir, f)).filter(existsSync).map((f) => readFileSync(f));
}

describe("provider keys: the partial key at rest", () => {
  test("a 20-character SecretKey (the minimum allowed) is shown whole as PartialKey, as the spec words it, and is nowhere in the database in clear", async () => {
    const r = await startRouter();
    try {
      // Spec 2.1 words PartialKey as "an ellipsis followed by the last 20 characters" and
      // spec 8 allows SecretKey from 20 characters: the API shows such a secret whole
      // (docs/api.md says to use long secrets), so the stored tail is sealed like the secret.
      const SECRET = "Az7kQ2mVx9pL4rT8wN3b"; // 20 characters: accepted
      expect(SECRET.length).toBe(20);
      const created = await r.fetch("/x-keys", { method: "POST", ...json({ Provider: "https://api.example.com/v1", SecretKey: SECRET, Level: 1, Status: true }) });
      expect(created.status).toBe(201);
      const id = ((await created.json()) as any).ID;
      const summary: any = await (await r.fetch(`/x-keys/${id}?fields=summary`)).json();
      const overview: any[] = await (await r.fetch("/x-keys?fields=overview")).json();
      expect(summary.PartialKey).toBe(`…${SECRET}`);
      expect(overview.find((k) => k.ID === id).PartialKey).toBe(`…${SECRET}`);
      // The secret exists only sealed in the database: neither as the secret nor as its tail.
      const bytes = databaseBytes(r);
      expect(bytes.length).toBeGreaterThan(0);
      for (const b of bytes) expect(b.includes(Buffer.from(SECRET))).toBe(false);
      // A rotation seals the new tail too.
      const ROTATED = "Rq4-rotated-secret-0123456789";
      expect((await r.fetch(`/x-keys/${id}`, { method: "PUT", ...json({ SecretKey: ROTATED }) })).status).toBe(200);
      expect(((await (await r.fetch(`/x-keys/${id}?fields=summary`)).json()) as any).PartialKey).toBe(`…${ROTATED.slice(-20)}`);
      for (const b of databaseBytes(r)) expect(b.includes(Buffer.from(ROTATED.slice(-20)))).toBe(false);
    } finally {
      await r.stop();
    }
  });

  test("partial keys an older router stored in clear are shown as they are, and sealed at the next start (UpdatedAt kept)", async () => {
    const dataDir = tempDir();
    const first = await startRouter({ dataDir });
    const SECRET = "sk-before-sealing-0123456789abcdefghij";
    const tail = `…${SECRET.slice(-20)}`;
    let id: number;
    let updatedAt: string;
    try {
      const created: any = await (await first.fetch("/x-keys", { method: "POST", ...json({ Provider: "https://api.example.com/v1", SecretKey: SECRET, Level: 1, Status: true }) })).json();
      id = created.ID;
      updatedAt = created.UpdatedAt;
      // As a router before sealing wrote it: the tail in clear (written through the store, as it did).
      expect(await first.deps.store.providerKeys.replacePartialKey(id, (await first.deps.store.providerKeys.get(0, id))!.partialKey, tail)).toBe(true);
      expect(((await (await first.fetch(`/x-keys/${id}?fields=summary`)).json()) as any).PartialKey).toBe(tail);
      expect(((await (await first.fetch(`/x-keys/${id}`)).json()) as any).PartialKey).toBe(tail);
    } finally {
      await first.stop();
    }
    const second = await startRouter({ dataDir });
    try {
      const stored = (await second.deps.store.providerKeys.storedPartialKeys()).find((row) => row.id === id)!;
      expect(stored.partialKey).not.toContain(SECRET.slice(-20));
      expect(second.deps.sealer.isSealed(stored.partialKey)).toBe(true);
      expect(second.logs.join("\n")).toContain("partial keys stored in clear are now sealed");
      const record: any = await (await second.fetch(`/x-keys/${id}`)).json();
      expect({ PartialKey: record.PartialKey, SecretKey: record.SecretKey, UpdatedAt: record.UpdatedAt }).toEqual({ PartialKey: tail, SecretKey: SECRET, UpdatedAt: updatedAt });
    } finally {
      await second.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("provider keys: a router bound to every address", () => {
  let router: TestRouter;
  beforeAll(async () => {
    router = await startRouter({ config: { host: "0.0.0.0" } });
  });
  afterAll(() => router.stop());

  test("any local address on the bound port is the router; a remote one is not", async () => {
    const port = router.server.port;
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "[::1]", "0.0.0.0"]) {
      await refused(router, "/x-keys", "POST", keyBody({ Provider: `https://${host}:${port}/v1` }), "Provider");
    }
    await create(router, { Provider: `https://203.0.113.7:${port}/v1` });
  });
});

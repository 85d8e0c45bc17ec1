import { join } from "node:path";
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import { createHash } from "node:crypto";
import { startRouter, type TestRouter } from "../helpers/router.ts";

/** The router's database file as another process sees it (at-rest checks of the embedded store). */
const databaseFile = (router: TestRouter) => new Database(join(router.dataDir, "router.db"));


/**
 * Issue 4 through HTTP: creating accounts, least privilege, scoped grants, subtree
 * isolation, lists, key rotation, deletion, the operation log and the dashboard.
 */

let router: TestRouter;

beforeAll(async () => {
  router = await startRouter();
});
afterAll(() => router.stop());

/** The documented least-privilege default (docs/api.md). */
const DEFAULT_RESOURCES = "/v1/*,/v1beta/*,/chat/completions,/responses,/embeddings,/models,/dashboard/*,/x-self,/x-pricing";
const MANAGER_RESOURCES = `${DEFAULT_RESOURCES},/x-users*,/x-dna*`;
const LIMIT_FIELDS = ["RPM", "RPH", "RPD", "TPM", "TPH", "TPD", "DailyLimit", "HardLimit", "SoftLimit"] as const;

interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

/** One request; `body` is sent as JSON (a string as is). `key` defaults to the owner's. */
async function api(
  path: string,
  init: { method?: string; body?: unknown; key?: string | null; headers?: Record<string, string>; on?: TestRouter } = {},
): Promise<Reply> {
  const target = init.on ?? router;
  const res = await target.fetch(path, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    key: init.key,
    headers: { "content-type": "application/json", ...init.headers },
    body: init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: res.status, body, headers: res.headers };
}

let sequence = 0;
const freshEmail = (tag = "user") => `${tag}${++sequence}@example.com`;

/** Creates an account as `key` (owner by default) and returns the 201 body (record + APIKey). */
async function createAccount(fields: Record<string, unknown> = {}, key?: string, on?: TestRouter): Promise<any> {
  const res = await api("/x-users", { body: { Email: freshEmail(), ...fields }, key, on });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A request that must be refused with `status`, naming `param` in the OpenAI envelope. */
function expectError(res: Reply, status: number, param?: string | null): void {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  expect(typeof res.body?.error?.message).toBe("string");
  if (param !== undefined) expect(res.body.error.param).toBe(param);
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * A POST whose body arrives only when `release` is called: the router authenticates it
 * first and then waits for the body, which opens the window between a request's
 * authentication and its write.
 */
async function heldPost(path: string, key: string, body: unknown): Promise<{ release: () => void; reply: Promise<Reply> }> {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const text = JSON.stringify(body);
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(new TextEncoder().encode(text.slice(0, 1)));
      await gate;
      controller.enqueue(new TextEncoder().encode(text.slice(1)));
      controller.close();
    },
  });
  const reply = fetch(router.url + path, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: stream, duplex: "half" } as RequestInit).then(
    async (res) => ({ status: res.status, body: await res.json(), headers: res.headers }),
  );
  // Give the router time to authenticate the held request. Too short a pause only
  // makes this test unable to fail, never flaky: the held request is refused either way.
  await Bun.sleep(50);
  return { release, reply };
}

describe("creating accounts", () => {
  test("Email is required and must be a valid address", async () => {
    expectError(await api("/x-users", { body: {} }), 400, "Email");
    expectError(await api("/x-users", { body: { Name: "no-email" } }), 400, "Email");
    for (const bad of ["not-an-email", "a@", "@example.com", "a b@example.com", "a@@example.com", "", 42, null]) {
      expectError(await api("/x-users", { body: { Email: bad } }), 400, "Email");
    }
  });

  test("an Email already used is 409, also in another case", async () => {
    const email = freshEmail("taken");
    await createAccount({ Email: email });
    expectError(await api("/x-users", { body: { Email: email } }), 409, "Email");
    expectError(await api("/x-users", { body: { Email: email.toUpperCase() } }), 409, "Email");
    expectError(await api("/x-users", { body: { Email: `  ${email.replace("taken", "TaKeN")} ` } }), 409, "Email");
    // The owner's own address counts too.
    expectError(await api("/x-users", { body: { Email: "Owner@LocalHost" } }), 409, "Email");
  });

  test("a Name is generated when omitted: 4 to 63 characters with a letter, unique", async () => {
    const names = new Set<string>();
    for (const email of ["x@example.com", "12@example.com", `${"a".repeat(64)}@example.com`, "x.y+z@example.com"]) {
      const account = await createAccount({ Email: email });
      expect(account.Name.length).toBeGreaterThanOrEqual(4);
      expect(account.Name.length).toBeLessThanOrEqual(63);
      expect(account.Name).toMatch(/[A-Za-z]/);
      expect(account.Name).toMatch(/^[A-Za-z0-9._-]+$/);
      expect(account.Name).not.toMatch(/^\d+$/);
      names.add(account.Name);
    }
    expect(names.size).toBe(4);
  });

  test("an explicit Name follows the rules and must be unused (409)", async () => {
    // Spec 8: 4 to 63 characters with at least one letter; an identifier cannot hold @ (read
    // as an email), / or \ (a path segment), controls, or space at either end.
    for (const bad of ["abc", "a".repeat(64), "1234", "12345678", "with@at", "a/bcd", "a\\bcd", "tab\tname", " lead", "trail ", "", 7]) {
      expectError(await api("/x-users", { body: { Email: freshEmail(), Name: bad } }), 400, "Name");
    }
    // Any script's letters, spaces inside and punctuation are names like any other.
    for (const good of ["team alpha", "Équipe-1", "東京チーム", "o'brien & co", "a".repeat(63)]) {
      const created = await createAccount({ Name: good });
      expect(created.Name).toBe(good);
      expect((await api(`/x-users/${encodeURIComponent(good)}`)).body.ID).toBe(created.ID);
    }
    const ok = await createAccount({ Name: "alice.2-x" });
    expect(ok.Name).toBe("alice.2-x");
    const four = await createAccount({ Name: "a123" });
    expect(four.Name).toBe("a123");
    const long = await createAccount({ Name: `b${"1".repeat(62)}` });
    expect(long.Name).toHaveLength(63);
    const email = freshEmail();
    expectError(await api("/x-users", { body: { Email: email, Name: "alice.2-x" } }), 409, "Name");
    // The refused creation did not take the email.
    await createAccount({ Email: email });
  });

  test("an unknown field is 400 naming it", async () => {
    expectError(await api("/x-users", { body: { Email: freshEmail(), Nmae: "typo-name" } }), 400, "Nmae");
    expectError(await api("/x-users", { body: { Email: freshEmail(), APIKey: "sk-rt-chosen" } }), 400, "APIKey");
    expectError(await api("/x-users", { body: { Email: freshEmail(), ParentID: 5 } }), 400, "ParentID");
    expectError(await api("/x-users", { body: "[1,2]" }), 400);
    expectError(await api("/x-users", { body: "{" }), 400);
  });

  test("the API key is returned once and never again: not in reads, lists, updates or the database", async () => {
    const created = await createAccount({ Alias: "Key Holder" });
    expect(created.APIKey).toMatch(/^sk-rt-[0-9A-Za-z]{43}$/);
    expect(created.KeyPrefix).toBe(created.APIKey.slice(0, 10));
    expect(created).toMatchObject({ object: "account", ParentID: 1, Level: 2, IsOwner: false, Balance: 0 });
    const me = await api("/dashboard/status", { key: created.APIKey });
    expect(me.body.id).toBe(created.ID);

    const replies = [
      await api(`/x-users/${created.ID}`),
      await api(`/x-dna/${created.ID}`),
      await api(`/x-users?size=100&order=-id`),
      await api(`/x-dna?size=100&order=-id`),
      await api(`/x-users/${created.ID}`, { method: "PUT", body: { Alias: "Renamed" } }),
      await api("/dashboard/info", { key: created.APIKey }),
      await api("/dashboard/status", { key: created.APIKey }),
    ];
    for (const reply of replies) {
      expect(reply.status).toBe(200);
      const text = JSON.stringify(reply.body);
      expect(text).toContain(String(created.ID));
      expect(text).not.toContain(created.APIKey);
      expect(text).not.toContain(sha256(created.APIKey));
      expect(text).not.toContain("APIKey");
    }
    const file = databaseFile(router);
    const stored = file.query<{ n: number }, [string]>("SELECT count(*) AS n FROM accounts WHERE key_hash = ?").get(sha256(created.APIKey));
    expect(stored?.n).toBe(1);
    const plain = file.query<{ n: number }, [string, string]>("SELECT count(*) AS n FROM accounts WHERE key_hash = ? OR key_prefix = ?").get(created.APIKey, created.APIKey);
    expect(plain?.n).toBe(0);
    file.close();
  });

  test("concurrent creations with one email: exactly one succeeds, the others are 409", async () => {
    const email = freshEmail("race");
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => api("/x-users", { body: { Email: i % 2 ? email : email.toUpperCase() } })));
    expect(replies.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    const list = await api(`/x-users?email=${encodeURIComponent(email)}`);
    expect(list.body).toHaveLength(1);
  });

  test("PUT checks Name and Email like creation: valid, and 409 when another account has them", async () => {
    const first = await createAccount({ Name: "put-first" });
    const second = await createAccount();
    expectError(await api(`/x-users/${second.ID}`, { method: "PUT", body: { Name: "put-first" } }), 409, "Name");
    expectError(await api(`/x-users/${second.ID}`, { method: "PUT", body: { Email: first.Email.toUpperCase() } }), 409, "Email");
    expectError(await api(`/x-users/${second.ID}`, { method: "PUT", body: { Name: "123" } }), 400, "Name");
    expectError(await api(`/x-users/${second.ID}`, { method: "PUT", body: { Email: "broken" } }), 400, "Email");
    expectError(await api(`/x-users/${second.ID}`, { method: "PUT", body: { Email: null } }), 400, "Email");
    // Its own values are not a conflict.
    const same = await api(`/x-users/${second.ID}`, { method: "PUT", body: { Name: second.Name, Email: second.Email } });
    expect(same.status).toBe(200);
    const renamed = await api(`/x-users/${second.ID}`, { method: "PUT", body: { Name: "put-second", Email: "Put.Second@Example.com" } });
    expect(renamed.body).toMatchObject({ Name: "put-second", Email: "put.second@example.com" });
    expect((await api("/x-dna/put-second")).body.ID).toBe(second.ID);
    expect((await api("/x-dna/put.second@example.com")).body.ID).toBe(second.ID);
    expectError(await api(`/x-dna/${second.Name}`), 404);
  });

  test("Level is the depth in the hierarchy (owner = 1)", async () => {
    const a = await createAccount({ Resources: MANAGER_RESOURCES });
    const b = await createAccount({ Resources: MANAGER_RESOURCES }, a.APIKey);
    const c = await createAccount({}, b.APIKey);
    expect([a.Level, b.Level, c.Level]).toEqual([2, 3, 4]);
    expect([a.ParentID, b.ParentID, c.ParentID]).toEqual([1, a.ID, b.ID]);
    expect((await api("/dashboard/status", { key: c.APIKey })).body.level).toBe(4);
    expect((await api(`/x-dna/${c.ID}`)).body.Level).toBe(4);
    expect((await api("/dashboard/status")).body.level).toBe(1);
  });

  test("Alias, BillingEmail and the update-only fields are accepted at creation", async () => {
    const account = await createAccount({
      Alias: "Team A",
      BillingEmail: "Billing@Example.com",
      AllowIPs: "127.0.0.1, 10.0.0.0/8",
      AllowModels: "gpt-*",
      Resources: "/v1/*,/dashboard/*",
      Days: 30,
      CreditGranted: 0,
    });
    expect(account).toMatchObject({
      Alias: "Team A",
      BillingEmail: "billing@example.com",
      AllowIPs: "127.0.0.1,10.0.0.0/8",
      AllowModels: "gpt-*",
      Resources: "/v1/*,/dashboard/*",
      Balance: 0,
    });
    expectError(await api("/x-users", { body: { Email: freshEmail(), BillingEmail: "nope" } }), 400, "BillingEmail");
    expectError(await api("/x-users", { body: { Email: freshEmail(), AllowIPs: "127.0.0.1,999.1.1.1" } }), 400, "AllowIPs");
    const malformed = await api("/x-users", { body: { Email: freshEmail(), AllowIPs: "10.0.0.0/33" } });
    expectError(malformed, 400, "AllowIPs");
    expect(malformed.body.error.message).toContain("10.0.0.0/33");
    expectError(await api("/x-users", { body: { Email: freshEmail(), Resources: "v1/*" } }), 400, "Resources");
    expectError(await api("/x-users", { body: { Email: freshEmail(), AllowModels: "gpt 4" } }), 400, "AllowModels");
    expectError(await api("/x-users", { body: { Email: freshEmail(), Rates: 0 } }), 400, "Rates");
    expectError(await api("/x-users", { body: { Email: freshEmail(), RPM: -1 } }), 400, "RPM");
    expectError(await api("/x-users", { body: { Email: freshEmail(), RPM: 1.5 } }), 400, "RPM");
    expectError(await api("/x-users", { body: { Email: freshEmail(), Days: 0 } }), 400, "Days");
    expectError(await api("/x-users", { body: { Email: freshEmail(), CreditGranted: "5" } }), 400, "CreditGranted");
    expectError(await api("/x-users", { body: { Email: freshEmail(), ModelLimits: { "gpt-*": { rpm: -1 } } } }), 400, "ModelLimits");
    expectError(await api("/x-users", { body: { Email: freshEmail(), ModelLimits: [] } }), 400, "ModelLimits");
  });
});

describe("least privilege by default", () => {
  test("a new account may use the model endpoints and /dashboard but not manage anything", async () => {
    const account = await createAccount();
    expect(account.Resources).toBe(DEFAULT_RESOURCES);
    const status = await api("/dashboard/status", { key: account.APIKey });
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ object: "account_status", id: account.ID, manage: false, isOwner: false, level: 2 });
    expect((await api("/dashboard/info", { key: account.APIKey })).status).toBe(200);
    expect((await api("/v1/models", { key: account.APIKey })).status).toBe(200);
    for (const [method, path] of [
      ["GET", "/x-users"],
      ["POST", "/x-users"],
      ["GET", `/x-users/${account.ID}`],
      ["GET", "/x-dna"],
      ["GET", "/x-dna/1"],
      ["PUT", `/x-users/${account.ID}`],
      ["DELETE", `/x-users/${account.ID}`],
      ["POST", "/x-users/batch-credit"],
      ["GET", "/x-keys"],
      ["POST", "/x-keys"],
    ] as const) {
      const res = await api(path, { method, key: account.APIKey, body: method === "GET" || method === "DELETE" ? undefined : {} });
      expectError(res, 403);
      expect(res.body.error.type).toBe("permission_error");
    }
  });

  test("granting /x-users* and /x-dna* makes manage true, limited to its own subtree", async () => {
    const sibling = await createAccount();
    const account = await createAccount();
    const granted = await api(`/x-users/${account.ID}`, { method: "PUT", body: { Resources: MANAGER_RESOURCES } });
    expect(granted.status).toBe(200);
    expect(granted.body.Resources).toBe(MANAGER_RESOURCES);
    expect((await api("/dashboard/status", { key: account.APIKey })).body.manage).toBe(true);

    const child = await createAccount({}, account.APIKey);
    expect(child.ParentID).toBe(account.ID);
    const mine = await api("/x-users?size=100", { key: account.APIKey });
    expect(mine.status).toBe(200);
    expect(mine.body.map((r: any) => r.ID)).toEqual([child.ID]);
    expect((await api("/x-dna?size=100", { key: account.APIKey })).body.map((r: any) => r.ID)).toEqual([child.ID]);
    expect((await api(`/x-users/${child.ID}`, { key: account.APIKey })).status).toBe(200);
    // Not its sibling, not its parent, not itself.
    for (const id of [sibling.ID, 1, account.ID]) {
      expectError(await api(`/x-users/${id}`, { key: account.APIKey }), 404);
      expectError(await api(`/x-dna/${id}`, { key: account.APIKey }), 404);
      expectError(await api(`/x-users/${id}`, { method: "PUT", key: account.APIKey, body: { Alias: "x" } }), 404);
    }
    // Its child got the default, not its own management paths.
    expect(child.Resources).toBe(DEFAULT_RESOURCES);
    expect((await api("/dashboard/status", { key: child.APIKey })).body.manage).toBe(false);

    // Revoking management takes effect on the next request.
    await api(`/x-users/${account.ID}`, { method: "PUT", body: { Resources: DEFAULT_RESOURCES } });
    expect((await api("/dashboard/status", { key: account.APIKey })).body.manage).toBe(false);
    expectError(await api("/x-users", { key: account.APIKey }), 403);
  });
});

describe("grants never exceed the caller's own scope", () => {
  const LIMITS = { RPM: 100, RPH: 1000, RPD: 5000, TPM: 10_000, TPH: 100_000, TPD: 1_000_000, DailyLimit: 10, HardLimit: 100, SoftLimit: 50 };
  // Partial on purpose: the members it leaves unset are bounded by the account-level limits.
  const OWN_MODEL = { rpm: 10, tpm: 1000 };
  /** A ModelLimits entry that keeps the caller's own model-level members. */
  const entry = (overrides: Record<string, number> = {}) => ({ ...OWN_MODEL, ...overrides });
  let manager: any;
  let child: any;

  beforeAll(async () => {
    manager = await createAccount({
      ...LIMITS,
      Rates: 1.5,
      ModelLimits: { "gpt-4o*": OWN_MODEL },
      AllowModels: "gpt-*,claude-*",
      AllowIPs: "127.0.0.0/24",
      Resources: MANAGER_RESOURCES,
    });
    child = await createAccount({}, manager.APIKey);
  });

  const create = (fields: Record<string, unknown>) => api("/x-users", { key: manager.APIKey, body: { Email: freshEmail("esc"), ...fields } });
  const update = (fields: Record<string, unknown>) => api(`/x-users/${child.ID}`, { method: "PUT", key: manager.APIKey, body: fields });

  test("omitted limits are inherited, so a limited caller's child is limited too; Rates default to the caller's", () => {
    expect(child).toMatchObject({
      ...LIMITS,
      Rates: 1.5,
      ModelLimits: { "gpt-4o*": OWN_MODEL },
      AllowModels: "gpt-*,claude-*",
      AllowIPs: "127.0.0.0/24",
      Resources: DEFAULT_RESOURCES,
      ParentID: manager.ID,
      Level: 3,
    });
  });

  test.each(LIMIT_FIELDS)("%s above the caller's is 400 on create and update; equal or below is accepted", async (field) => {
    const own = LIMITS[field];
    const above = field === "DailyLimit" || field === "HardLimit" || field === "SoftLimit" ? own + 0.5 : own + 1;
    const refusedCreate = await create({ [field]: above });
    expectError(refusedCreate, 400, field);
    expect(refusedCreate.body.error.message).toContain(field);
    expectError(await update({ [field]: above }), 400, field);
    expectError(await update({ [field]: 1e12 }), 400, field);
    const equal = await create({ [field]: own });
    expect(equal.status).toBe(201);
    expect(equal.body[field]).toBe(own);
    const lower = await update({ [field]: Math.floor(own / 2) });
    expect(lower.status).toBe(200);
    expect(lower.body[field]).toBe(Math.floor(own / 2));
  });

  test.each(LIMIT_FIELDS)("%s: null (unlimited) from a limited caller is 400 on create and update", async (field) => {
    expectError(await create({ [field]: null }), 400, field);
    expectError(await update({ [field]: null }), 400, field);
    const record = await api(`/x-users/${child.ID}`, { key: manager.APIKey });
    expect(record.body[field]).not.toBeNull();
  });

  test("the owner may grant unlimited (null) and any value up to the stored bounds", async () => {
    const free = await createAccount({ RPM: null, HardLimit: 1e6 });
    expect(free).toMatchObject({ RPM: null, HardLimit: 1e6 });
    const updated = await api(`/x-users/${manager.ID}`, { method: "PUT", body: { RPM: LIMITS.RPM } });
    expect(updated.body.RPM).toBe(LIMITS.RPM);
  });

  test("a ModelLimits member above the caller's own model limit is 400", async () => {
    expectError(await create({ ModelLimits: { "gpt-4o*": entry({ rpm: 11 }) } }), 400, "ModelLimits");
    expectError(await update({ ModelLimits: { "gpt-4o*": entry({ tpm: 1001 }) } }), 400, "ModelLimits");
    // A more specific pattern is still governed by the caller's gpt-4o* entry.
    expectError(await create({ ModelLimits: { "gpt-4o*": entry(), "gpt-4o-mini": entry({ rpm: 11 }) } }), 400, "ModelLimits");
    // A member the caller limits per model may not be left unset (that would lift it to the account limit).
    expectError(await create({ ModelLimits: { "gpt-4o*": { rpm: 1 } } }), 400, "ModelLimits");
    expectError(await update({ ModelLimits: { "gpt-4o*": { tpm: 1 } } }), 400, "ModelLimits");
    const ok = await create({ ModelLimits: { "gpt-4o*": entry({ rpm: 5 }), "gpt-4o-mini": entry({ rpm: 2 }) } });
    expect(ok.status).toBe(201);
    expect(ok.body.ModelLimits).toEqual({ "gpt-4o*": entry({ rpm: 5 }), "gpt-4o-mini": entry({ rpm: 2 }) });
    const updated = await update({ ModelLimits: { "gpt-4o*": entry({ tpm: 999 }) } });
    expect(updated.status).toBe(200);
    expect(updated.body.ModelLimits).toEqual({ "gpt-4o*": entry({ tpm: 999 }) });
  });

  test("a ModelLimits member above the caller's account-level limit is 400", async () => {
    const own = { "gpt-4o*": entry() };
    expectError(await create({ ModelLimits: { ...own, "claude-*": { rpm: 101 } } }), 400, "ModelLimits");
    expectError(await update({ ModelLimits: { ...own, "claude-*": { tpd: 1_000_001 } } }), 400, "ModelLimits");
    // Members the caller's model entry leaves unset are bounded by its account limits.
    expectError(await create({ ModelLimits: { "gpt-4o*": entry({ rph: 1001 }) } }), 400, "ModelLimits");
    expectError(await create({ ModelLimits: { "*": { tph: 100_001 } , ...own } }), 400, "ModelLimits");
    const ok = await create({ ModelLimits: { ...own, "claude-*": { rpm: 100, tpd: 5 } } });
    expect(ok.status).toBe(201);
    expect(ok.body.ModelLimits).toEqual({ ...own, "claude-*": { rpm: 100, tpd: 5 } });
  });

  test("a limited caller cannot drop its own model limits from a child (create or update)", async () => {
    for (const modelLimits of [null, {}, { "claude-*": { rpm: 1 } }, { "gpt-4o": entry() }]) {
      expectError(await create({ ModelLimits: modelLimits }), 400, "ModelLimits");
      expectError(await update({ ModelLimits: modelLimits }), 400, "ModelLimits");
    }
    expect((await api(`/x-users/${child.ID}`, { key: manager.APIKey })).body.ModelLimits).toHaveProperty("gpt-4o*");
  });

  test("unknown ModelLimits members and malformed values are 400", async () => {
    expectError(await create({ ModelLimits: { "gpt-4o*": { ...entry(), rpx: 1 } } }), 400, "ModelLimits");
    expectError(await update({ ModelLimits: { "gpt-4o*": { ...entry(), rpx: 1 } } }), 400, "ModelLimits");
    expectError(await create({ ModelLimits: { "gpt-4o*": { ...entry(), rpm: 1.5 } } }), 400, "ModelLimits");
    expectError(await create({ ModelLimits: { "gpt-4o*": { ...entry(), rpm: -1 } } }), 400, "ModelLimits");
    expectError(await create({ ModelLimits: { "gpt-4o*": { ...entry(), rpm: "5" } } }), 400, "ModelLimits");
    expectError(await create({ ModelLimits: { "gpt-4o*": 5 } }), 400, "ModelLimits");
    const res = await api("/x-users", { body: { Email: freshEmail(), ModelLimits: { "*": { rpm: 1, RPM: 2 } } } });
    expectError(res, 400, "ModelLimits");
    expect(res.body.error.message).toContain("RPM");
  });

  test("AllowModels outside the caller's patterns is 400; inside is accepted", async () => {
    for (const bad of ["gemini-*", "*", "gpt*", "gpt-4o,mistral-large", null, ""]) {
      expectError(await create({ AllowModels: bad }), 400, "AllowModels");
      expectError(await update({ AllowModels: bad }), 400, "AllowModels");
    }
    const ok = await create({ AllowModels: "gpt-4o,claude-3-*" });
    expect(ok.status).toBe(201);
    expect(ok.body.AllowModels).toBe("gpt-4o,claude-3-*");
    expect((await update({ AllowModels: "gpt-4o-mini" })).body.AllowModels).toBe("gpt-4o-mini");
  });

  test("AllowIPs outside the caller's ranges is 400; a /28 inside its /24 is accepted", async () => {
    for (const bad of ["10.0.0.0/8", "127.0.0.0/16", "127.0.1.1", "::1", "0.0.0.0/0", null, ""]) {
      expectError(await create({ AllowIPs: bad }), 400, "AllowIPs");
      expectError(await update({ AllowIPs: bad }), 400, "AllowIPs");
    }
    const ok = await create({ AllowIPs: "127.0.0.0/28,127.0.0.200" });
    expect(ok.status).toBe(201);
    expect(ok.body.AllowIPs).toBe("127.0.0.0/28,127.0.0.200");
    expect((await update({ AllowIPs: "127.0.0.1" })).body.AllowIPs).toBe("127.0.0.1");
  });

  test("Resources that are not a subset of the caller's are 400", async () => {
    for (const bad of ["/x-keys*", "*", "/v1/*,/x-config*", "/x-*"]) {
      expectError(await create({ Resources: bad }), 400, "Resources");
      expectError(await update({ Resources: bad }), 400, "Resources");
    }
    const ok = await create({ Resources: "/v1/chat/completions,/x-users*" });
    expect(ok.status).toBe(201);
    expect(ok.body.Resources).toBe("/v1/chat/completions,/x-users*");
  });

  test("Rates below the caller's are 400; equal or above is accepted", async () => {
    expectError(await create({ Rates: 1.2 }), 400, "Rates");
    expectError(await update({ Rates: 1.49 }), 400, "Rates");
    expect((await create({ Rates: 1.5 })).body.Rates).toBe(1.5);
    expect((await update({ Rates: 2 })).body.Rates).toBe(2);
    // The owner's multiplier is 1: it may go below the manager's for its own children.
    expect((await createAccount({ Rates: 1 })).Rates).toBe(1);
  });

  test("a refused update changes nothing", async () => {
    const before = (await api(`/x-users/${child.ID}`, { key: manager.APIKey })).body;
    expectError(await update({ Alias: "changed", RPM: 101 }), 400, "RPM");
    expectError(await update({ Alias: "changed", Rates: 1 }), 400, "Rates");
    expectError(await update({ Alias: "changed", Unknown: 1 }), 400, "Unknown");
    const after = (await api(`/x-users/${child.ID}`, { key: manager.APIKey })).body;
    expect(after).toEqual(before);
  });
});

describe("accounts outside the caller's subtree do not exist for it", () => {
  let a: any;
  let b: any;
  let a1: any;
  let b1: any;
  let b1child: any;

  beforeAll(async () => {
    a = await createAccount({ Resources: MANAGER_RESOURCES });
    b = await createAccount({ Resources: MANAGER_RESOURCES });
    a1 = await createAccount({ Resources: MANAGER_RESOURCES, Name: "sub-a-one" }, a.APIKey);
    b1 = await createAccount({ Resources: MANAGER_RESOURCES, Name: "sub-b-one", Alias: "B1" }, b.APIKey);
    b1child = await createAccount({}, b1.APIKey);
  });

  /** The message for `identifier` with the identifier itself replaced, for comparing with a missing account's. */
  const shape = (res: Reply, identifier: string) => ({
    status: res.status,
    type: res.body.error.type,
    code: res.body.error.code,
    param: res.body.error.param,
    message: res.body.error.message.replace(identifier, "<id>"),
  });

  test("by ID, name or email: GET, PUT and DELETE are 404 exactly like a missing account", async () => {
    const cases: Array<[string, string]> = [
      [String(b1.ID), "999999"],
      [b1.Name, "no-such-name"],
      [b1.Email, "nobody@example.com"],
      [String(b1child.ID), "999998"],
      [b1child.Email, "nobody2@example.com"],
    ];
    for (const [hidden, missing] of cases) {
      for (const [method, base] of [
        ["GET", "/x-users/"],
        ["GET", "/x-dna/"],
        ["PUT", "/x-users/"],
        ["DELETE", "/x-users/"],
      ] as const) {
        const body = method === "PUT" ? { Alias: "hijacked" } : undefined;
        const seen = await api(base + hidden, { method, key: a.APIKey, body });
        const unknown = await api(base + missing, { method, key: a.APIKey, body });
        expectError(seen, 404);
        expect(shape(seen, hidden)).toEqual(shape(unknown, missing));
        expect(seen.body.error.message).not.toContain(b1.Name === hidden ? b1.Email : b1.Name);
      }
    }
    // Nothing happened to B's accounts.
    const still = await api(`/x-dna/${b1.ID}`, { key: b.APIKey });
    expect(still.status).toBe(200);
    expect(still.body.Alias).toBe("B1");
    expect((await api(`/x-dna/${b1child.ID}`, { key: b.APIKey })).status).toBe(200);
  });

  test("lists and filters never show another subtree", async () => {
    for (const query of [`id=${b1.ID}`, `email=${b1.Email}`, "name=sub-b", "level=3", "size=100"]) {
      const list = await api(`/x-dna?${query}`, { key: a.APIKey });
      expect(list.status).toBe(200);
      expect(list.body.map((r: any) => r.ID)).not.toContain(b1.ID);
      expect(list.body.map((r: any) => r.ID)).not.toContain(b1child.ID);
    }
    const all = await api("/x-dna?size=100", { key: a.APIKey });
    expect(all.body.map((r: any) => r.ID)).toEqual([a1.ID]);
  });

  test("a manager cannot reach its parent, its sibling or itself", async () => {
    for (const id of [b.ID, 1, a.ID]) {
      expectError(await api(`/x-dna/${id}`, { key: a.APIKey }), 404);
      expectError(await api(`/x-users/${id}`, { method: "DELETE", key: a.APIKey }), 404);
    }
    expectError(await api(`/x-users/${b1.ID}`, { key: a1.APIKey }), 404);
  });

  test("GET /x-users/{id} finds direct accounts only; GET /x-dna/{id} any descendant", async () => {
    for (const identifier of [String(b1.ID), b1.Name, b1.Email]) {
      expectError(await api(`/x-users/${identifier}`), 404);
      const dna = await api(`/x-dna/${identifier}`);
      expect(dna.status).toBe(200);
      expect(dna.body.ID).toBe(b1.ID);
      expect((await api(`/x-users/${identifier}`, { key: b.APIKey })).body.ID).toBe(b1.ID);
    }
    expectError(await api(`/x-users/${b1child.ID}`, { key: b.APIKey }), 404);
    expect((await api(`/x-dna/${b1child.ID}`, { key: b.APIKey })).body.ID).toBe(b1child.ID);
    // PUT reaches any descendant.
    const put = await api(`/x-users/${b1child.ID}`, { method: "PUT", key: b.APIKey, body: { Alias: "grandchild" } });
    expect(put.status).toBe(200);
    expect(put.body.Alias).toBe("grandchild");
    // An email identifier is matched case-insensitively.
    expect((await api(`/x-dna/${b1.Email.toUpperCase()}`)).body.ID).toBe(b1.ID);
  });
});

describe("lists", () => {
  let lister: any;
  let children: any[];
  let grandchild: any;

  beforeAll(async () => {
    lister = await createAccount({ Resources: MANAGER_RESOURCES });
    children = [];
    for (let i = 0; i < 25; i++) {
      const name = `lst-${String((i * 7) % 25).padStart(2, "0")}-${i % 2 ? "odd" : "even"}`;
      children.push(await createAccount({ Name: name, Email: `z${(i * 11) % 25}-list${sequence++}@example.com`, Resources: i === 0 ? MANAGER_RESOURCES : undefined }, lister.APIKey));
    }
    grandchild = await createAccount({ Name: "lst-grandchild" }, children[0].APIKey);
  });

  const list = (path: string) => api(path, { key: lister.APIKey });
  const ids = (res: Reply) => res.body.map((r: any) => r.ID);

  test("pagination headers, default size 20, pages", async () => {
    const first = await list("/x-users");
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(20);
    expect(first.headers.get("x-total-count")).toBe("25");
    expect(first.headers.get("x-total-pages")).toBe("2");
    expect(first.headers.get("x-page")).toBe("1");
    expect(first.headers.get("x-per-page")).toBe("20");
    const second = await list("/x-users?page=2");
    expect(second.body).toHaveLength(5);
    expect(second.headers.get("x-page")).toBe("2");
    expect([...ids(first), ...ids(second)]).toEqual(children.map((c) => c.ID));
    const beyond = await list("/x-users?page=3");
    expect(beyond.status).toBe(200);
    expect(beyond.body).toEqual([]);
    expect(beyond.headers.get("x-total-count")).toBe("25");
    const small = await list("/x-users?size=7&page=4");
    expect(ids(small)).toEqual(children.slice(21).map((c) => c.ID));
    expect(small.headers.get("x-total-pages")).toBe("4");
    expect(small.headers.get("x-per-page")).toBe("7");
    const max = await list("/x-users?size=100");
    expect(max.body).toHaveLength(25);
    expect(max.headers.get("x-total-pages")).toBe("1");
    for (const record of max.body) {
      expect(record).toMatchObject({ object: "account", ParentID: lister.ID, Level: 3, Balance: 0 });
      expect(record).not.toHaveProperty("APIKey");
    }
  });

  test("size above 100, size 0, page 0 and non-numbers are 400 naming the parameter", async () => {
    expectError(await list("/x-users?size=101"), 400, "size");
    expectError(await list("/x-dna?size=101"), 400, "size");
    expectError(await list("/x-users?size=0"), 400, "size");
    expectError(await list("/x-users?page=0"), 400, "page");
    expectError(await list("/x-dna?page=-1"), 400, "page");
    expectError(await list("/x-users?page=abc"), 400, "page");
    expectError(await list("/x-users?id=x"), 400, "id");
    expectError(await list("/x-users?level=0"), 400, "level");
  });

  test("/x-users lists direct accounts only; /x-dna all descendants", async () => {
    const direct = await list("/x-users?size=100");
    expect(ids(direct)).not.toContain(grandchild.ID);
    expect(direct.headers.get("x-total-count")).toBe("25");
    const all = await list("/x-dna?size=100");
    expect(ids(all)).toContain(grandchild.ID);
    expect(all.headers.get("x-total-count")).toBe("26");
    // The owner sees the lister among its direct accounts, and the grandchildren only in /x-dna.
    const ownerDirect = await api("/x-users?size=100&order=-id");
    expect(ids(ownerDirect)).toContain(lister.ID);
    expect(ids(ownerDirect)).not.toContain(children[0].ID);
  });

  test("filters: id, name (substring), email, level", async () => {
    const byId = await list(`/x-users?id=${children[5].ID}`);
    expect(ids(byId)).toEqual([children[5].ID]);
    expect(byId.headers.get("x-total-count")).toBe("1");
    expect((await list(`/x-users?id=${grandchild.ID}`)).body).toEqual([]);
    expect(ids(await list(`/x-dna?id=${grandchild.ID}`))).toEqual([grandchild.ID]);

    const odd = await list("/x-users?size=100&name=odd");
    expect(ids(odd)).toEqual(children.filter((c) => c.Name.includes("odd")).map((c) => c.ID));
    expect(odd.body).toHaveLength(12);
    expect(ids(await list("/x-users?name=LST-03"))).toEqual(children.filter((c) => c.Name.startsWith("lst-03")).map((c) => c.ID));
    expect(ids(await list("/x-dna?name=grand"))).toEqual([grandchild.ID]);

    const byEmail = await list(`/x-users?email=${encodeURIComponent(children[3].Email)}`);
    expect(ids(byEmail)).toEqual([children[3].ID]);
    expect(ids(await list(`/x-users?email=${encodeURIComponent(children[3].Email.toUpperCase())}`))).toEqual([children[3].ID]);

    expect(ids(await list("/x-dna?size=100&level=4"))).toEqual([grandchild.ID]);
    expect(await list("/x-dna?size=100&level=3").then((r) => r.body.length)).toBe(25);
    expect((await list("/x-users?level=4")).body).toEqual([]);
    const combined = await list(`/x-dna?level=3&name=even&id=${children[0].ID}`);
    expect(ids(combined)).toEqual([children[0].ID]);
  });

  test("order: id, -id, name, -name, email, -email, created, -created, level, -level; others 400", async () => {
    const everyone = (await list("/x-dna?size=100")).body as any[];
    const by = (key: (r: any) => string | number, dir: 1 | -1) =>
      [...everyone]
        .sort((x, y) => {
          const a = key(x);
          const b = key(y);
          if (a < b) return -dir;
          if (a > b) return dir;
          return dir * (x.ID - y.ID);
        })
        .map((r) => r.ID);
    const expected: Record<string, number[]> = {
      id: by((r) => r.ID, 1),
      "-id": by((r) => r.ID, -1),
      name: by((r) => r.Name, 1),
      "-name": by((r) => r.Name, -1),
      email: by((r) => r.Email, 1),
      "-email": by((r) => r.Email, -1),
      created: by((r) => r.CreatedAt, 1),
      "-created": by((r) => r.CreatedAt, -1),
      level: by((r) => r.Level, 1),
      "-level": by((r) => r.Level, -1),
    };
    for (const [order, want] of Object.entries(expected)) {
      const res = await list(`/x-dna?size=100&order=${order}`);
      expect(res.status).toBe(200);
      expect({ order, ids: ids(res) }).toEqual({ order, ids: want });
    }
    // The orders are not all the same sequence, so the checks above are meaningful.
    expect(expected.name).not.toEqual(expected.id);
    expect(expected.email).not.toEqual(expected.name);
    expect(expected["-level"]![0]).toBe(grandchild.ID);
    for (const bad of ["ID", "balance", "name,id", "constructor", "__proto__", "toString", "-"]) {
      expectError(await list(`/x-users?order=${encodeURIComponent(bad)}`), 400, "order");
    }
  });
});

describe("rotating one's own key: POST /x-self", () => {
  const today = () => router.deps.clock.businessDate();
  const shift = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

  test("a wrong, missing or outdated confirm is 400 and the old key keeps working", async () => {
    const account = await createAccount();
    const refusals: unknown[] = [
      {},
      { confirm: null },
      { confirm: 20250101 },
      { confirm: "ROTATE-SELF" },
      { confirm: `${shift(today(), -1)}-ROTATE-SELF` },
      { confirm: `${shift(today(), 1)}-ROTATE-SELF` },
      { confirm: `${today()}-rotate-self` },
      { confirm: `${today()}-ROTATE-SELF ` },
      { confirm: `${today().replaceAll("-", "/")}-ROTATE-SELF` },
    ];
    for (const body of refusals) {
      expectError(await api("/x-self", { key: account.APIKey, body }), 400, "confirm");
      expect((await api("/dashboard/status", { key: account.APIKey })).status).toBe(200);
    }
    expectError(await api("/x-self", { key: account.APIKey, body: "" }), 400);
    const info = await api("/dashboard/info", { key: account.APIKey });
    expect(info.body.KeyPrefix).toBe(account.APIKey.slice(0, 10));
  });

  test("the right confirm returns a new key once; the old key is 401 on its very next request", async () => {
    const account = await createAccount();
    // Warm every cache with the old key first.
    expect((await api("/dashboard/status", { key: account.APIKey })).status).toBe(200);
    const res = await api("/x-self", { key: account.APIKey, body: { confirm: `${today()}-ROTATE-SELF` } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: "api_key", ID: account.ID, APIKey: expect.stringMatching(/^sk-rt-[0-9A-Za-z]{43}$/), KeyPrefix: expect.any(String) });
    expect(res.body.APIKey).not.toBe(account.APIKey);
    expect(res.body.KeyPrefix).toBe(res.body.APIKey.slice(0, 10));
    const old = await api("/dashboard/status", { key: account.APIKey });
    expectError(old, 401);
    expect(old.body.error.code).toBe("invalid_api_key");
    expectError(await api("/x-self", { key: account.APIKey, body: { confirm: `${today()}-ROTATE-SELF` } }), 401);
    const fresh = await api("/dashboard/status", { key: res.body.APIKey });
    expect(fresh.status).toBe(200);
    expect(fresh.body.id).toBe(account.ID);
    const record = await api(`/x-users/${account.ID}`);
    expect(record.body.KeyPrefix).toBe(res.body.KeyPrefix);
    expect(JSON.stringify(record.body)).not.toContain(res.body.APIKey);
  });

  test("a rotation authenticated with the old key just before another rotation is 401, never a dead key", async () => {
    const account = await createAccount();
    const held = await heldPost("/x-self", account.APIKey, { confirm: `${today()}-ROTATE-SELF` });
    const first = await api("/x-self", { key: account.APIKey, body: { confirm: `${today()}-ROTATE-SELF` } });
    expect(first.status).toBe(200);
    held.release();
    const second = await held.reply;
    expectError(second, 401);
    // The key handed out is the one that works.
    expect((await api("/dashboard/status", { key: first.body.APIKey })).body.id).toBe(account.ID);
    expect((await api(`/x-users/${account.ID}`)).body.KeyPrefix).toBe(first.body.KeyPrefix);
  });

  test("owners rotate too, and a manager's rotation keeps its subtree", async () => {
    const manager = await createAccount({ Resources: MANAGER_RESOURCES });
    const child = await createAccount({}, manager.APIKey);
    const rotated = await api("/x-self", { key: manager.APIKey, body: { confirm: `${today()}-ROTATE-SELF` } });
    expect(rotated.status).toBe(200);
    expect((await api(`/x-users/${child.ID}`, { key: rotated.body.APIKey })).status).toBe(200);
    expect((await api("/dashboard/status", { key: child.APIKey })).status).toBe(200);

    const other = await startRouter();
    try {
      const res = await api("/x-self", { on: other, key: other.ownerKey, body: { confirm: `${other.deps.clock.businessDate()}-ROTATE-SELF` } });
      expect(res.status).toBe(200);
      expectError(await api("/dashboard/status", { on: other, key: other.ownerKey }), 401);
      expect((await api("/dashboard/status", { on: other, key: res.body.APIKey })).body).toMatchObject({ id: 1, isOwner: true });
    } finally {
      await other.stop();
    }
  });

  test("the confirm date is the business date of the configured zone, not UTC", async () => {
    // 12:00 UTC on 2025-06-15 is already 02:00 on 2025-06-16 in Kiritimati (UTC+14).
    setSystemTime(new Date(Date.UTC(2025, 5, 15, 12, 0, 0)));
    const kiritimati = await startRouter({ config: { timeZone: "Pacific/Kiritimati" } });
    try {
      expect(kiritimati.deps.clock.businessDate()).toBe("2025-06-16");
      const key = kiritimati.ownerKey;
      expectError(await api("/x-self", { on: kiritimati, key, body: { confirm: "2025-06-15-ROTATE-SELF" } }), 400, "confirm");
      expect((await api("/dashboard/status", { on: kiritimati, key })).status).toBe(200);
      const res = await api("/x-self", { on: kiritimati, key, body: { confirm: "2025-06-16-ROTATE-SELF" } });
      expect(res.status).toBe(200);
      expectError(await api("/dashboard/status", { on: kiritimati, key }), 401);
    } finally {
      setSystemTime();
      await kiritimati.stop();
    }
  });
});

describe("deleting an account", () => {
  test("refused with 409 while it has descendants; allowed bottom-up", async () => {
    const parent = await createAccount({ Resources: MANAGER_RESOURCES });
    const child = await createAccount({ Resources: MANAGER_RESOURCES }, parent.APIKey);
    const grandchild = await createAccount({}, child.APIKey);
    const refused = await api(`/x-users/${parent.ID}`, { method: "DELETE" });
    expectError(refused, 409);
    expect(refused.body.error.type).toBe("conflict_error");
    expectError(await api(`/x-users/${child.ID}`, { method: "DELETE", key: parent.APIKey }), 409);
    expect((await api("/dashboard/status", { key: parent.APIKey })).status).toBe(200);
    expect((await api("/dashboard/status", { key: child.APIKey })).status).toBe(200);
    // A deep descendant can be deleted by any ancestor.
    expect((await api(`/x-users/${grandchild.ID}`, { method: "DELETE" })).status).toBe(200);
    expect((await api(`/x-users/${child.ID}`, { method: "DELETE", key: parent.APIKey })).status).toBe(200);
    expect((await api(`/x-users/${parent.Email}`, { method: "DELETE" })).body).toMatchObject({ ID: parent.ID, deleted: true });
  });

  test("the key stops at once, unexpired credit returns to the parent, the email is free, usage rows stay", async () => {
    const parent = await createAccount({ Resources: MANAGER_RESOURCES, CreditGranted: 10 });
    const leaf = await createAccount({ CreditGranted: 4 }, parent.APIKey);
    expect(leaf.Balance).toBe(4);
    expect((await api("/dashboard/status", { key: parent.APIKey })).body.balance).toBe(6);
    // Warm the caches with the leaf's key.
    expect((await api("/dashboard/status", { key: leaf.APIKey })).body.balance).toBe(4);
    await router.deps.store.usage.insert([
      { requestId: "req_fake_for_delete_test", accountId: leaf.ID, day: router.deps.clock.businessDate(), createdAt: Date.now(), endpoint: "/v1/chat/completions", status: 200, source: "upstream", latencyMs: 5, costNanos: 1234 },
    ]);

    const res = await api(`/x-users/${leaf.ID}`, { method: "DELETE", key: parent.APIKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: "account", ID: leaf.ID, deleted: true, CreditReturned: 4 });
    expectError(await api("/dashboard/status", { key: leaf.APIKey }), 401);
    expect((await api("/dashboard/status", { key: parent.APIKey })).body.balance).toBe(10);
    expectError(await api(`/x-dna/${leaf.ID}`, { key: parent.APIKey }), 404);
    expectError(await api(`/x-users/${leaf.ID}`, { method: "DELETE", key: parent.APIKey }), 404);
    expect((await api("/x-dna?size=100", { key: parent.APIKey })).body).toEqual([]);

    const rows = (await router.deps.store.usage.events(0, 1_000_000)).filter((row) => row.accountId === leaf.ID);
    expect(rows).toHaveLength(1);

    const again = await createAccount({ Email: leaf.Email.toUpperCase(), Name: leaf.Name }, parent.APIKey);
    expect(again.ID).not.toBe(leaf.ID);
    expect(again.Email).toBe(leaf.Email);
    expect(again.Balance).toBe(0);
  });

  test("a write authenticated just before its caller was deleted is 401 and writes nothing", async () => {
    const manager = await createAccount({ Resources: MANAGER_RESOURCES, CreditGranted: 2 });
    const sibling = await createAccount({ Resources: MANAGER_RESOURCES });
    const email = freshEmail("orphan");
    const held = await heldPost("/x-users", manager.APIKey, { Email: email, CreditGranted: 1 });
    const heldBatch = await heldPost("/x-users/batch-credit", manager.APIKey, { IDs: [sibling.ID], CreditGranted: 1 });
    expect((await api(`/x-users/${manager.ID}`, { method: "DELETE" })).body).toMatchObject({ deleted: true, CreditReturned: 2 });
    held.release();
    heldBatch.release();
    expectError(await held.reply, 401);
    expectError(await heldBatch.reply, 401);
    expectError(await api(`/x-dna/${email}`), 404);
    expect((await createAccount({ Email: email })).Email).toBe(email);
  });

  test("credit of an account deleted by the owner goes to its own parent, not to the owner", async () => {
    const parent = await createAccount({ Resources: MANAGER_RESOURCES, CreditGranted: 5 });
    const leaf = await createAccount({ CreditGranted: 3 }, parent.APIKey);
    const ownerBefore = (await api("/dashboard/status")).body.balance;
    const res = await api(`/x-users/${leaf.Name}`, { method: "DELETE" });
    expect(res.body).toMatchObject({ deleted: true, CreditReturned: 3 });
    expect((await api("/dashboard/status", { key: parent.APIKey })).body.balance).toBe(5);
    expect((await api("/dashboard/status")).body.balance).toBe(ownerBefore);
  });
});

describe("operation log", () => {
  test("create, update, delete, batch credit and rotation are logged with actor, target and IP, without keys", async () => {
    const manager = await createAccount({ Resources: MANAGER_RESOURCES, CreditGranted: 20 });
    const logged = async () => (await router.deps.store.operations.list(0, {}, 1, 10_000)).rows.reverse();
    const start = (await logged()).at(-1)?.id ?? 0;
    const child = await createAccount({ CreditGranted: 2 }, manager.APIKey);
    const other = await createAccount({}, manager.APIKey);
    expect((await api(`/x-users/${child.ID}`, { method: "PUT", key: manager.APIKey, body: { Alias: "logged", RPM: 5, CreditGranted: 1 } })).status).toBe(200);
    const batch = await api("/x-users/batch-credit", { key: manager.APIKey, body: { IDs: [child.ID, other.ID, 999999], CreditGranted: 1.5 } });
    expect(batch.body.summary.applied).toBe(2);
    const dry = await api("/x-users/batch-credit", { key: manager.APIKey, body: { IDs: [child.ID], CreditGranted: 1, DryRun: true } });
    expect(dry.status).toBe(200);
    expect((await api(`/x-users/${other.ID}`, { method: "DELETE", key: manager.APIKey })).status).toBe(200);
    const rotated = await api("/x-self", { key: manager.APIKey, body: { confirm: `${router.deps.clock.businessDate()}-ROTATE-SELF` } });
    expect(rotated.status).toBe(200);

    const rows = (await logged()).filter((r) => r.id > start);
    const mine = rows.filter((r) => r.actorId === manager.ID);
    const summary = mine.map((r) => [r.action, r.targetId]);
    expect(summary).toEqual([
      ["account.create", child.ID],
      ["account.create", other.ID],
      ["account.update", child.ID],
      ["account.batch_credit", child.ID],
      ["account.batch_credit", other.ID],
      ["account.delete", other.ID],
      ["account.rotate_key", manager.ID],
    ]);
    for (const row of mine) {
      expect(row.ip).toBe("127.0.0.1");
      expect(row.at).toBeGreaterThan(0);
      expect(() => JSON.parse(row.details)).not.toThrow();
    }
    const update = mine.find((r) => r.action === "account.update")!;
    expect(JSON.parse(update.details)).toMatchObject({ fields: expect.arrayContaining(["alias", "rpm"]), credit: 1 });
    const remove = mine.find((r) => r.action === "account.delete")!;
    expect(JSON.parse(remove.details)).toMatchObject({ creditReturned: 1.5 });

    const keys = [manager.APIKey, child.APIKey, other.APIKey, rotated.body.APIKey, router.ownerKey];
    const everything = JSON.stringify(rows);
    for (const key of keys) {
      expect(everything).not.toContain(key);
      expect(everything).not.toContain(sha256(key));
      expect(everything).not.toContain(key.slice(10));
    }
    expect(everything).not.toMatch(/sk-rt-[0-9A-Za-z]{20,}/);
  });
});

describe("dashboard reports the real account", () => {
  test("status: balance, level, manage; info: limits and access lists, and both follow updates", async () => {
    const account = await createAccount({ Alias: "Dash", CreditGranted: 7.5, RPM: 60, TPD: 5000, HardLimit: 20, ModelLimits: { "gpt-*": { rpm: 3 } }, AllowModels: "gpt-*", AllowIPs: "127.0.0.1" });
    const status = await api("/dashboard/status", { key: account.APIKey });
    expect(status.body).toEqual({
      object: "account_status",
      id: account.ID,
      name: account.Name,
      email: account.Email,
      alias: "Dash",
      isOwner: false,
      level: 2,
      balance: 7.5,
      manage: false,
      timeZone: "UTC",
    });
    const info = await api("/dashboard/info", { key: account.APIKey });
    const { object, Balance, APIKey, ...record } = account;
    expect(info.body).toEqual({ object: "account_info", ...record });
    expect(info.body).not.toHaveProperty("Balance");
    expect(info.body).toMatchObject({ RPM: 60, TPD: 5000, HardLimit: 20, RPH: null, ModelLimits: { "gpt-*": { rpm: 3 } }, AllowModels: "gpt-*", AllowIPs: "127.0.0.1" });

    await api(`/x-users/${account.ID}`, { method: "PUT", body: { RPM: 30, Resources: MANAGER_RESOURCES, CreditGranted: 2.5 } });
    const after = await api("/dashboard/status", { key: account.APIKey });
    expect(after.body).toMatchObject({ balance: 10, manage: true });
    const infoAfter = await api("/dashboard/info", { key: account.APIKey });
    expect(infoAfter.body).toMatchObject({ RPM: 30, Resources: MANAGER_RESOURCES });
  });

  test("owners: manage true, Resources *", async () => {
    expect((await api("/dashboard/status")).body).toMatchObject({ id: 1, isOwner: true, manage: true, level: 1 });
    expect((await api("/dashboard/info")).body).toMatchObject({ ID: 1, IsOwner: true, Resources: "*", ParentID: null });
  });
});

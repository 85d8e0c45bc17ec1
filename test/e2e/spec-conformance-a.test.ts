import { describe, expect, test } from "bun:test";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { startPostgres } from "../helpers/postgres-server.ts";
import type { TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Conformance with the interface specification, sections 1 to 4.2 (provider keys,
 * accounts, usage records, configuration items, notices and the operation log, key
 * states): what a review of those sections found wrong (each failed before its fix)
 * and the requirements it relies on that no other test held.
 */

const scope = perTest();

const keyBody = (overrides: Record<string, unknown> = {}) => ({
  Provider: "https://api.example.com/v1",
  SecretKey: `sk-conformance-${Math.random().toString(36).slice(2)}-0123456789`,
  Level: 7,
  Status: true,
  ...overrides,
});

async function createKey(r: TestRouter, overrides: Record<string, unknown> = {}): Promise<any> {
  const res = await api(r, "/x-keys", { body: keyBody(overrides) });
  if (res.status !== 201) throw new Error(`create key: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const oplogRows = async (r: TestRouter): Promise<Array<{ action: string }>> => (await api(r, "/dashboard/logs?size=100")).body.logs;

describe("2.2 account records", () => {
  // "Account record fields in responses: not shown beyond those named in the usage
  // ranking" (id, name, alias, email), and "Filter parameters on account queries also
  // show an account level": a client reads those names from every account record.
  test("every account answer carries id, name, alias, email and level, beside the creation fields", async () => {
    const r = await scope.router();
    const manager = await createAccount(r, { Name: "manager-one", Alias: "The manager", Resources: "/x-users*,/x-dna*,/dashboard/*" });
    const child = await createAccount(r, { Name: "child-one" }, manager.key);
    const identity = (id: number, name: string, email: string, alias: string | null, level: number) => ({ id, name, email, alias, level, ID: id, Name: name, Email: email, Alias: alias, Level: level });
    const managerIdentity = identity(manager.id, "manager-one", manager.email, "The manager", 2);
    const childIdentity = identity(child.id, "child-one", child.email, null, 3);

    const created = await api(r, "/x-users", { body: { Email: "fresh@example.com", Name: "fresh-one" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject(identity(created.body.ID, "fresh-one", "fresh@example.com", null, 2));
    expect((await api(r, `/x-users/${manager.id}`)).body).toMatchObject(managerIdentity);
    expect((await api(r, `/x-dna/${child.id}`)).body).toMatchObject(childIdentity);
    expect((await api(r, `/x-users?id=${manager.id}`)).body).toMatchObject([managerIdentity]);
    expect((await api(r, `/x-dna?level=3`)).body).toMatchObject([childIdentity]);
    const updated = await api(r, `/x-users/${child.id}`, { method: "PUT", body: { Alias: "Kid" } });
    expect(updated.body).toMatchObject({ ...childIdentity, alias: "Kid", Alias: "Kid" });
  });
});

describe("4.2 batch credit", () => {
  // "Batch credit entries that cannot be applied are reported as skipped in a 2xx-style
  // result list rather than as a request error" (7.4): IDs is an array of integers, and
  // 0 or a negative one names no account, like an unknown ID.
  test("an ID that can name no account (0, negative) is a skipped entry; the others apply", async () => {
    const r = await scope.router();
    const child = await createAccount(r);
    const res = await api(r, "/x-users/batch-credit", { body: { IDs: [child.id, 0, -3], CreditGranted: 2 } });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { ID: child.id, status: "applied", BalanceBefore: 0, BalanceAfter: 2 },
      { ID: 0, status: "skipped", reason: "unknown account or not manageable by you" },
      { ID: -3, status: "skipped", reason: "unknown account or not manageable by you" },
    ]);
    expect(res.body.summary).toMatchObject({ applied: 1, skipped: 2 });
    // Still an array of integers: anything else is a malformed body.
    for (const IDs of [[1.5], ["2"], [null]]) {
      const bad = await api(r, "/x-users/batch-credit", { body: { IDs, CreditGranted: 1 } });
      expect({ IDs, status: bad.status, param: bad.body.error?.param }).toEqual({ IDs, status: 400, param: "IDs" });
    }
  });
});

describe("4.1 provider keys", () => {
  // PUT takes "any subset of the fields of section 2.1": the empty subset changes nothing,
  // answered as the other management writes that change nothing are (docs/api.md).
  test("PUT with {} answers 200 with the key unchanged and writes nothing", async () => {
    const r = await scope.router();
    const key = await createKey(r);
    const rows = (await oplogRows(r)).length;
    const res = await api(r, `/x-keys/${key.ID}`, { method: "PUT", body: {} });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(key);
    expect((await api(r, `/x-keys/${key.ID}`)).body.UpdatedAt).toBe(key.UpdatedAt);
    expect((await oplogRows(r)).length).toBe(rows);
    // The key still has to exist, and a bad form is still refused.
    expect((await api(r, "/x-keys/999", { method: "PUT", body: {} })).status).toBe(404);
    expect((await api(r, `/x-keys/${key.ID}?fields=nope`, { method: "PUT", body: {} })).status).toBe(400);
  });

  // `provider` filters by "a substring of the URL" (docs/api.md): characters that are
  // wildcards to SQL LIKE are ordinary characters of a URL, on either store.
  const providerFilter = async (r: TestRouter) => {
    const underscored = await createKey(r, { Provider: "https://api.example.com/team_a/v1" });
    await createKey(r, { Provider: "https://api.example.com/teamxa/v1" });
    await createKey(r, { Provider: "https://api.example.com/teama/v1" });
    const percent = await createKey(r, { Provider: "https://api.example.com/100%25/v1" });
    const ids = async (provider: string) => ((await api(r, `/x-keys?fields=summary&provider=${encodeURIComponent(provider)}`)).body as any[]).map((k) => k.ID);
    expect(await ids("team_a")).toEqual([underscored.ID]);
    expect(await ids("100%25")).toEqual([percent.ID]);
    expect(await ids("%")).toEqual([percent.ID]);
    expect(await ids("API.EXAMPLE.COM/TEAM_A")).toEqual([underscored.ID]);
  };
  test("the provider filter matches a substring holding _ or % literally", async () => providerFilter(await scope.router()));
  test("PostgreSQL: the provider filter matches a substring holding _ or % literally", async () => {
    const postgres = await startPostgres();
    scope.later(() => postgres.stop());
    await providerFilter(await scope.router({ config: { database: postgres.url(await postgres.createDatabase()) } }));
  });
});

describe("3 key states", () => {
  // "A Provider Key has two independent flags": sleep and wake from any state leave
  // Status as it is; a PUT that succeeds leaves flags it does not set unchanged.
  test("Status and Sleeping are independent: each write changes only the flag it names", async () => {
    const r = await scope.router();
    const key = await createKey(r);
    const flags = (body: any) => ({ Status: body.Status, Sleeping: body.Sleeping });
    const step = async (path: string, method: string, body?: unknown) => {
      const res = await api(r, `/x-keys/${key.ID}${path}`, { method, body });
      expect(res.status).toBe(200);
      expect(flags((await api(r, `/x-keys/${key.ID}?fields=summary`)).body)).toEqual(flags(res.body));
      return flags(res.body);
    };
    expect(await step("/sleep", "POST")).toEqual({ Status: true, Sleeping: true });
    expect(await step("", "PUT", { Name: "renamed", NoSleep: true })).toEqual({ Status: true, Sleeping: true });
    expect(await step("", "PUT", { Status: false })).toEqual({ Status: false, Sleeping: true });
    expect(await step("/wake", "POST")).toEqual({ Status: false, Sleeping: false });
    expect(await step("/sleep", "POST")).toEqual({ Status: false, Sleeping: true });
    expect(await step("", "PUT", { Status: true, SecretKey: "sk-conformance-rotated-0123456789" })).toEqual({ Status: true, Sleeping: true });
    expect(await step("/wake", "POST")).toEqual({ Status: true, Sleeping: false });
  });
});

describe("2.4 configuration items", () => {
  // MODEL_MAPPER, LEVEL_MAPPER and SWITCH_OVER are "<left>=<right> entries,
  // comma-separated": a value written in that form reads back in that form.
  test("2.4: GET /x-config shows the mapper items in their format, comma-separated <left>=<right> entries", async () => {
    const r = await scope.router();
    const put = await api(r, "/x-config", { method: "PUT", body: { MODEL_MAPPER: "gpt-4*=gpt-4o", LEVEL_MAPPER: "claude-*=2", SWITCH_OVER: "1=2" } });
    expect(put.status).toBe(200);
    const { configs } = (await api(r, "/x-config")).body;
    expect(configs).toMatchObject({ MODEL_MAPPER: "gpt-4*=gpt-4o", LEVEL_MAPPER: "claude-*=2", SWITCH_OVER: "1=2" });
  });
});

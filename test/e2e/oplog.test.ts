import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { hashApiKey } from "../../src/accounts/api-keys.ts";
import { createManualClock } from "../../src/core/clock.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { api, createAccount, MANAGER_RESOURCES, type CreatedAccount } from "../helpers/owner-ops.ts";

/** Issue 8: `GET /dashboard/logs`, the operation log. */

// 2025-04-01 10:00 UTC; the router's business zone is Asia/Tokyo (UTC+9) for the date filters.
const START = Date.UTC(2025, 3, 1, 10, 0, 0);
const clock = createManualClock(START, "Asia/Tokyo");
const MAIL_PASSWORD = "mail-pass-Hx7-never-shown";

let router: TestRouter;
let manager: CreatedAccount;
let created: CreatedAccount[] = [];
const issuedKeys: string[] = [];

interface LogRow {
  id: number;
  time: string;
  action: string;
  operator_id: number | null;
  target_id: number | null;
  details: Record<string, unknown>;
  ip: string | null;
}

const logs = async (query = "", key?: string) => {
  const res = await api(router, `/dashboard/logs${query}`, { key });
  return res as { status: number; body: { logs: LogRow[]; total: number; page: number; size: number; has_more: boolean; error?: any } };
};

beforeAll(async () => {
  router = await startRouter({ clock, config: { timeZone: "Asia/Tokyo" } });
  manager = await createAccount(router, { Resources: MANAGER_RESOURCES });
  issuedKeys.push(manager.key);
  // 30 account.create entries, one second apart, on 2025-04-01 (UTC and Tokyo).
  for (let i = 0; i < 30; i++) {
    clock.advance(1000);
    const account = await createAccount(router, {}, i % 2 === 0 ? undefined : manager.key);
    created.push(account);
    issuedKeys.push(account.key);
  }
});
afterAll(() => router.stop());

describe("GET /dashboard/logs", () => {
  test("24 rows a page by default, newest first, with has_more", async () => {
    const first = await logs();
    expect(first.status).toBe(200);
    expect(first.body.size).toBe(24);
    expect(first.body.page).toBe(1);
    expect(first.body.logs).toHaveLength(24);
    expect(first.body.total).toBeGreaterThanOrEqual(31);
    expect(first.body.has_more).toBe(true);
    const ids = first.body.logs.map((l) => l.id);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
    const times = first.body.logs.map((l) => l.time);
    expect([...times].sort().reverse()).toEqual(times);
    // The newest entry is the last account created.
    expect(first.body.logs[0]!.action).toBe("account.create");
    expect(first.body.logs[0]!.target_id).toBe(created.at(-1)!.id);

    const last = await logs(`?page=${Math.ceil(first.body.total / 24)}`);
    expect(last.body.has_more).toBe(false);
    expect(last.body.logs.length).toBe(first.body.total - 24 * (last.body.page - 1));
    expect(last.body.logs.at(-1)!.id).toBeLessThan(ids.at(-1)!);
    expect((await logs("?page=99")).body).toMatchObject({ logs: [], has_more: false, page: 99 });
  });

  test("the row shape", async () => {
    const row = (await logs(`?target=${created[1]!.id}`)).body.logs[0]!;
    expect(row).toEqual({
      id: expect.any(Number),
      time: new Date(START + 2000).toISOString(),
      action: "account.create",
      operator_id: manager.id,
      target_id: created[1]!.id,
      details: expect.objectContaining({ email: created[1]!.email, name: created[1]!.name }),
      ip: expect.any(String),
    });
    expect(row.ip).toMatch(/127\.0\.0\.1|::1/);
  });

  test("size up to 100 and page are checked", async () => {
    const big = await logs("?size=100");
    expect(big.body.size).toBe(100);
    expect(big.body.logs.length).toBe(Math.min(100, big.body.total));
    for (const query of ["?size=101", "?size=0", "?page=0", "?page=x", "?target=abc"]) {
      expect((await logs(query)).status).toBe(400);
    }
  });

  test("filters: action exact or with *, target", async () => {
    const exact = await logs("?action=account.create&size=100");
    expect(exact.body.total).toBe(31);
    expect(exact.body.logs.every((l) => l.action === "account.create")).toBe(true);
    // A new kind of account entry shows up under the prefix but not under the exact name.
    expect((await api(router, `/x-users/${created[0]!.id}`, { method: "PUT", body: { Alias: "renamed" } })).status).toBe(200);
    const prefix = await logs("?action=account.*&size=100");
    expect(prefix.body.total).toBe(32);
    expect(prefix.body.logs[0]!.action).toBe("account.update");
    expect((await logs("?action=account.create")).body.total).toBe(31);
    expect((await logs("?action=account")).body.total).toBe(0);
    expect((await logs("?action=*.update")).body.logs.every((l) => l.action.endsWith(".update"))).toBe(true);

    const target = await logs(`?target=${created[0]!.id}`);
    expect(target.body.logs.map((l) => l.action)).toEqual(["account.update", "account.create"]);
    expect(target.body.logs.every((l) => l.target_id === created[0]!.id)).toBe(true);
  });

  test("filters: since and until, inclusive, dates in the business time zone", async () => {
    // 2025-04-03 20:00 UTC is 2025-04-04 05:00 in Tokyo.
    clock.set(Date.UTC(2025, 3, 3, 20, 0, 0));
    const late = await createAccount(router);
    issuedKeys.push(late.key);
    clock.set(Date.UTC(2025, 3, 10, 1, 0, 0));

    const day4 = await logs("?since=2025-04-04&until=2025-04-04");
    expect(day4.body.logs.map((l) => l.target_id)).toEqual([late.id]);
    expect((await logs("?since=2025-04-03&until=2025-04-03")).body.total).toBe(0);
    expect((await logs("?until=2025-04-01&size=100")).body.total).toBe(32);
    expect((await logs("?since=2025-04-02")).body.total).toBe(1);

    // Datetimes are instants, inclusive at both ends.
    const at = new Date(Date.UTC(2025, 3, 3, 20, 0, 0)).toISOString();
    expect((await logs(`?since=${at}&until=${at}`)).body.total).toBe(1);
    expect((await logs("?since=2025-04-03T20:00:00.001Z")).body.total).toBe(0);
    expect((await logs("?until=2025-04-04T04:59:59%2B09:00&action=account.create")).body.total).toBe(31);
    // Combined with other filters.
    expect((await logs(`?since=2025-04-04&target=${late.id}`)).body.total).toBe(1);
    expect((await logs(`?since=2025-04-04&target=${created[0]!.id}`)).body.total).toBe(0);

    for (const query of ["?since=yesterday", "?until=2025-02-30", "?since=2025-04-05&until=2025-04-04", "?since=2025-04-04T25:00Z"]) {
      const res = await logs(query);
      expect(res.status).toBe(400);
    }
  });

  test("owner only", async () => {
    const res = await logs("", manager.key);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("owner_only");
  });
});

describe("configuration changes", () => {
  const put = (body: Record<string, unknown>) => api(router, "/x-config", { method: "PUT", body });

  test("one row per changed item with before and after; EMAIL_PASS masked", async () => {
    const since = new Date(clock.now()).toISOString();
    expect((await put({ XAI_MAIL: "ops@example.com", EMAIL_PASS: MAIL_PASSWORD, MODEL_MAPPER: "a=b" })).status).toBe(200);
    let rows = (await logs(`?action=config.*&since=${since}`)).body.logs;
    const byItem = Object.fromEntries(rows.map((r) => [r.details.item, r]));
    expect(rows).toHaveLength(3);
    expect(byItem.XAI_MAIL!.details).toEqual({ item: "XAI_MAIL", before: null, after: "ops@example.com" });
    expect(byItem.EMAIL_PASS!.details).toEqual({ item: "EMAIL_PASS", before: null, after: "********" });
    expect(byItem.MODEL_MAPPER!.details).toEqual({ item: "MODEL_MAPPER", before: null, after: "a=b" });
    for (const row of rows) {
      expect(row.action).toBe("config.update");
      expect(row.operator_id).toBe(1);
      expect(row.target_id).toBeNull();
      expect(row.ip).toMatch(/127\.0\.0\.1|::1/);
    }

    // Rewriting the same values (and the exported mask) logs nothing.
    clock.advance(1000);
    const again = new Date(clock.now()).toISOString();
    expect((await put({ XAI_MAIL: "ops@example.com", EMAIL_PASS: "********" })).status).toBe(200);
    expect((await logs(`?action=config.*&since=${again}`)).body.total).toBe(0);

    // A new password is a change, shown masked on both sides.
    expect((await put({ EMAIL_PASS: `${MAIL_PASSWORD}-2`, XAI_MAIL: "ops2@example.com" })).status).toBe(200);
    rows = (await logs(`?action=config.update&since=${again}`)).body.logs;
    expect(rows.map((r) => r.details).sort((a, b) => String(a.item).localeCompare(String(b.item)))).toEqual([
      { item: "EMAIL_PASS", before: "********", after: "********" },
      { item: "XAI_MAIL", before: "ops@example.com", after: "ops2@example.com" },
    ]);
  });

  test("DELETE writes config.reset rows for the items that were set", async () => {
    clock.advance(1000);
    const since = new Date(clock.now()).toISOString();
    const res = await api(router, "/x-config", { method: "DELETE", body: { keys: ["EMAIL_PASS", "MODEL_MAPPER", "SWITCH_OVER"] } });
    expect(res.status).toBe(200);
    const rows = (await logs(`?since=${since}`)).body.logs;
    expect(rows.every((r) => r.action === "config.reset")).toBe(true);
    expect(rows.map((r) => r.details).sort((a, b) => String(a.item).localeCompare(String(b.item)))).toEqual([
      { item: "EMAIL_PASS", before: "********", after: null },
      { item: "MODEL_MAPPER", before: "a=b", after: null },
    ]);
  });

  test("a refused write logs nothing", async () => {
    clock.advance(1000);
    const since = new Date(clock.now()).toISOString();
    expect((await put({ XAI_MAIL: "x@example.com", EMAIL_PORT: 0 })).status).toBe(400);
    expect((await logs(`?since=${since}`)).body.total).toBe(0);
  });
});

describe("no secrets", () => {
  test("no API key, key hash or mail password in any details", async () => {
    // Rotation issues a key: it must not reach the log either.
    const rotated = await api(router, "/x-self", { body: { confirm: `${clock.businessDate()}-ROTATE-SELF` }, key: created[2]!.key });
    expect(rotated.status).toBe(200);
    issuedKeys.push(rotated.body.APIKey);
    const all = await logs("?size=100");
    const pages = [all.body.logs];
    for (let page = 2; page <= Math.ceil(all.body.total / 100); page++) pages.push((await logs(`?size=100&page=${page}`)).body.logs);
    const text = JSON.stringify(pages);
    expect(text).toContain("account.rotate_key");
    for (const key of [router.ownerKey, ...issuedKeys]) {
      expect(text).not.toContain(key);
      expect(text).not.toContain(key.slice(10));
      expect(text).not.toContain(hashApiKey(key));
    }
    expect(text).not.toContain(MAIL_PASSWORD);
    expect(text).not.toMatch(/sk-rt-[A-Za-z0-9]{12,}/);
  });
});

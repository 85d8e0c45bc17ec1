import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { api, createAccount, DEFAULT_RESOURCES, MANAGER_RESOURCES, type CreatedAccount } from "../helpers/owner-ops.ts";

/**
 * Issue 8: broadcast notices. The tree used throughout:
 *
 *   owner ─┬─ managerA ─┬─ childA1 ── grandA1
 *          │            └─ childA2
 *          ├─ managerB
 *          └─ member (default Resources, not a manager)
 */

const START = Date.UTC(2025, 2, 1, 12, 0, 0);
const DAY = 86_400_000;
const clock = createManualClock(START);

let router: TestRouter;
let managerA: CreatedAccount;
let childA1: CreatedAccount;
let grandA1: CreatedAccount;
let childA2: CreatedAccount;
let managerB: CreatedAccount;
let member: CreatedAccount;
let newsOnly: CreatedAccount;

beforeAll(async () => {
  router = await startRouter({ clock });
  managerA = await createAccount(router, { Resources: MANAGER_RESOURCES });
  childA1 = await createAccount(router, { Resources: MANAGER_RESOURCES }, managerA.key);
  grandA1 = await createAccount(router, {}, childA1.key);
  childA2 = await createAccount(router, {}, managerA.key);
  managerB = await createAccount(router, { Resources: MANAGER_RESOURCES });
  member = await createAccount(router, { Resources: DEFAULT_RESOURCES });
  newsOnly = await createAccount(router, { Resources: `${DEFAULT_RESOURCES},/x-news*` });
});
afterAll(() => router.stop());

const post = (body: Record<string, unknown>, key?: string) => api(router, "/x-news", { body, key });
const feed = async (key?: string): Promise<string[]> => {
  const res = await api(router, "/dashboard/news", { key });
  expect(res.status).toBe(200);
  expect(res.body.object).toBe("list");
  return res.body.data.map((n: { title: string }) => n.title);
};
const remove = (id: number, key?: string) => api(router, `/x-news/${id}`, { method: "DELETE", key });

describe("POST /x-news validation", () => {
  test("title at most 100 characters, content at most 1000", async () => {
    expect((await post({ title: "t".repeat(100), content: "c".repeat(1000) })).status).toBe(201);
    const longTitle = await post({ title: "t".repeat(101), content: "c" });
    expect(longTitle.status).toBe(400);
    expect(longTitle.body.error.param).toBe("title");
    const longContent = await post({ title: "t", content: "c".repeat(1001) });
    expect(longContent.status).toBe(400);
    expect(longContent.body.error.param).toBe("content");
    // Characters, not UTF-16 units: 100 emoji are 100 characters.
    expect((await post({ title: "📣".repeat(100), content: "c" })).status).toBe(201);
    expect((await post({ title: "📣".repeat(101), content: "c" })).status).toBe(400);
  });

  test("title and content are required; unknown fields, bad days and bad targets are refused", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ content: "c" }, "title"],
      [{ title: "   ", content: "c" }, "title"],
      [{ title: 5, content: "c" }, "title"],
      [{ title: "t" }, "content"],
      [{ title: "t", content: "" }, "content"],
      [{ title: "t", content: "c", days: 0 }, "days"],
      [{ title: "t", content: "c", days: 366 }, "days"],
      [{ title: "t", content: "c", days: 1.5 }, "days"],
      [{ title: "t", content: "c", days: "7" }, "days"],
      [{ title: "t", content: "c", target: true }, "target"],
      [{ title: "t", content: "c", color: "red" }, "color"],
    ];
    for (const [body, param] of cases) {
      const res = await post(body);
      expect(res.status).toBe(400);
      expect(res.body.error.param).toBe(param);
    }
  });

  test("the record, with a default expiry of 30 days", async () => {
    const res = await post({ title: "  Maintenance  ", content: "Tonight at 22:00" });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      object: "notice",
      id: expect.any(Number),
      title: "Maintenance",
      content: "Tonight at 22:00",
      target_id: null,
      author_id: 1,
      created_at: new Date(clock.now()).toISOString(),
      expires_at: new Date(clock.now() + 30 * DAY).toISOString(),
    });
    const custom = await post({ title: "week", content: "c", days: 7, target: managerA.name });
    expect(custom.body.expires_at).toBe(new Date(clock.now() + 7 * DAY).toISOString());
    expect(custom.body.target_id).toBe(managerA.id);
  });
});

describe("who may publish", () => {
  test("system-wide notices are for owners only", async () => {
    const res = await post({ title: "all", content: "c" }, managerA.key);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("owner_only");
  });

  test("targeted notices need management access and a target in the subtree", async () => {
    // No /x-news in Resources: refused by the account's own Resources.
    const member403 = await post({ title: "t", content: "c", target: member.email }, member.key);
    expect(member403.status).toBe(403);
    expect(member403.body.error.code).toBe("resource_not_allowed");
    // /x-news but not /x-users: not a manager.
    const notManager = await post({ title: "t", content: "c", target: newsOnly.id }, newsOnly.key);
    expect(notManager.status).toBe(403);
    expect(notManager.body.error.code).toBe("manage_not_allowed");
    // Outside the caller's subtree (a sibling manager, or the caller's parent): it does not exist.
    for (const target of [managerB.id, managerB.email, 1, "999999"]) {
      const res = await post({ title: "t", content: "c", target }, managerA.key);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("account_not_found");
    }
    expect((await post({ title: "t", content: "c", target: grandA1.name }, managerA.key)).status).toBe(201);
  });
});

describe("visibility", () => {
  test("a targeted notice reaches the target and its descendants only", async () => {
    const res = await post({ title: "to A1 subtree", content: "c", target: childA1.email }, managerA.key);
    expect(res.status).toBe(201);
    expect(res.body.target_id).toBe(childA1.id);
    expect(await feed(childA1.key)).toContain("to A1 subtree");
    expect(await feed(grandA1.key)).toContain("to A1 subtree");
    // Not the sibling, not the author itself, not another branch, not the owner.
    expect(await feed(childA2.key)).not.toContain("to A1 subtree");
    expect(await feed(managerA.key)).not.toContain("to A1 subtree");
    expect(await feed(managerB.key)).not.toContain("to A1 subtree");
    expect(await feed()).not.toContain("to A1 subtree");
  });

  test("a manager targeting itself reaches its whole subtree", async () => {
    expect((await post({ title: "to all of A", content: "c", target: String(managerA.id) }, managerA.key)).status).toBe(201);
    for (const account of [managerA, childA1, grandA1, childA2]) expect(await feed(account.key)).toContain("to all of A");
    for (const account of [managerB, member]) expect(await feed(account.key)).not.toContain("to all of A");
  });

  test("a system-wide notice reaches every account", async () => {
    expect((await post({ title: "to everyone", content: "c" })).status).toBe(201);
    for (const account of [managerA, childA1, grandA1, childA2, managerB, member, newsOnly]) {
      expect(await feed(account.key)).toContain("to everyone");
    }
    expect(await feed()).toContain("to everyone");
  });

  test("newest first", async () => {
    clock.advance(1000);
    expect((await post({ title: "older", content: "c", target: childA2.id }, managerA.key)).status).toBe(201);
    clock.advance(1000);
    expect((await post({ title: "newer", content: "c", target: childA2.id }, managerA.key)).status).toBe(201);
    const titles = await feed(childA2.key);
    expect(titles.slice(0, 2)).toEqual(["newer", "older"]);
    const res = await api(router, "/dashboard/news", { key: childA2.key });
    const times = res.body.data.map((n: { created_at: string }) => n.created_at);
    expect([...times].sort().reverse()).toEqual(times);
  });

  test("an expired notice leaves the feed but stays listed for its author", async () => {
    const res = await post({ title: "one day", content: "c", target: childA2.id, days: 1 }, managerA.key);
    expect(await feed(childA2.key)).toContain("one day");
    clock.advance(DAY - 1);
    expect(await feed(childA2.key)).toContain("one day");
    clock.advance(1);
    expect(await feed(childA2.key)).not.toContain("one day");
    const listed = await api(router, "/x-news?size=100", { key: managerA.key });
    expect(listed.body.map((n: { id: number }) => n.id)).toContain(res.body.id);
  });
});

describe("GET /x-news and DELETE /x-news/{id}", () => {
  test("lists what the caller published; owners also every system-wide notice", async () => {
    const mine = await api(router, "/x-news?size=100", { key: managerA.key });
    expect(mine.status).toBe(200);
    expect(mine.body.length).toBeGreaterThan(0);
    expect(mine.body.every((n: { author_id: number }) => n.author_id === managerA.id)).toBe(true);
    expect((await api(router, "/x-news", { key: managerB.key })).body).toEqual([]);

    const owner = await api(router, "/x-news?size=100");
    expect(owner.body.some((n: { target_id: number | null }) => n.target_id === null)).toBe(true);
    expect(owner.body.every((n: { author_id: number; target_id: number | null }) => n.author_id === 1 || n.target_id === null)).toBe(true);
  });

  test("is paginated with the four headers, newest first", async () => {
    const total = (await api(router, "/x-news?size=100", { key: managerA.key })).body.length;
    const page = await api(router, "/x-news?size=2&page=2", { key: managerA.key });
    expect(page.status).toBe(200);
    expect(page.body).toHaveLength(2);
    expect(page.headers.get("x-total-count")).toBe(String(total));
    expect(page.headers.get("x-total-pages")).toBe(String(Math.ceil(total / 2)));
    expect(page.headers.get("x-page")).toBe("2");
    expect(page.headers.get("x-per-page")).toBe("2");
    const first = await api(router, "/x-news?size=2", { key: managerA.key });
    expect(first.body[0].id).toBeGreaterThan(page.body[0].id);
    expect((await api(router, "/x-news?size=101", { key: managerA.key })).status).toBe(400);
  });

  test("only the author or an owner deletes; others see 404", async () => {
    const a = (await post({ title: "del-a", content: "c", target: childA1.id }, managerA.key)).body;
    const b = (await post({ title: "del-b", content: "c", target: grandA1.id }, childA1.key)).body;
    const sys = (await post({ title: "del-sys", content: "c" })).body;

    // Not the author, not an owner: a 404 (also for the author's own manager).
    expect((await remove(a.id, managerB.key)).status).toBe(404);
    expect((await remove(b.id, managerA.key)).status).toBe(404);
    expect((await remove(sys.id, managerA.key)).status).toBe(404);
    expect(await feed(grandA1.key)).toContain("del-b");

    const byAuthor = await remove(a.id, managerA.key);
    expect(byAuthor.status).toBe(200);
    expect(byAuthor.body).toEqual({ object: "notice", id: a.id, deleted: true });
    expect((await remove(a.id, managerA.key)).status).toBe(404);
    expect(await feed(childA1.key)).not.toContain("del-a");

    expect((await remove(b.id)).status).toBe(200);
    expect((await remove(sys.id)).status).toBe(200);
    expect(await feed(grandA1.key)).not.toContain("del-b");
    expect(await feed(member.key)).not.toContain("del-sys");
    expect((await remove(0)).status).toBe(404);
    expect((await api(router, "/x-news/abc", { method: "DELETE" })).status).toBe(404);
  });

  test("writes go to the operation log", async () => {
    const created = (await post({ title: "logged", content: "secret-free", target: childA2.id }, managerA.key)).body;
    expect((await remove(created.id, managerA.key)).status).toBe(200);
    const logs = (await api(router, "/dashboard/logs?action=news.*&size=2")).body.logs;
    expect(logs.map((l: { action: string }) => l.action)).toEqual(["news.delete", "news.create"]);
    for (const log of logs) {
      expect(log.operator_id).toBe(managerA.id);
      expect(log.target_id).toBe(childA2.id);
      expect(log.details.id).toBe(created.id);
    }
  });
});

import { join } from "node:path";
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import type { Usage } from "../../src/formats/usage.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";

const MANAGER = "/v1/*,/dashboard/*,/x-self,/x-pricing,/x-users*,/x-dna*,/x-bill";
const NOW = Date.UTC(2026, 2, 10, 12); // 2026-03-10 12:00 UTC
const DAY = 86_400_000;
const GPT = "gpt-4o";
const CLAUDE = "claude-sonnet-4";
const GEMINI = "gemini-2.5-flash";

interface Created {
  id: number;
  key: string;
  name: string;
  email: string;
}

let requestNo = 0;

/** Reports one finished call straight to the recorder (what the relay does). */
function record(router: TestRouter, accountId: number, model: string, usage: Partial<Usage>, costNanos: number, at = NOW, status = 200) {
  router.deps.usageRecorder.record({
    requestId: `req-${++requestNo}`,
    accountId,
    endpoint: "/v1/chat/completions",
    requestedModel: model,
    effectiveModel: model,
    level: 1,
    keyId: 1,
    status,
    stream: false,
    usage: { prompt: 0, completion: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, ...usage },
    source: "upstream",
    latencyMs: 5,
    at,
    costNanos,
  });
}

async function create(router: TestRouter, key: string, fields: Record<string, unknown>): Promise<Created> {
  const res = await router.fetch("/x-users", { method: "POST", key, body: JSON.stringify(fields), headers: { "content-type": "application/json" } });
  const body = await res.json();
  expect({ status: res.status, body }).toMatchObject({ status: 201 });
  return { id: body.ID, key: body.APIKey, name: body.Name, email: body.Email };
}

async function get(router: TestRouter, path: string, key?: string) {
  const res = await router.fetch(path, { key });
  return { status: res.status, body: await res.json() };
}

async function expectRefusal(router: TestRouter, path: string, status: number, param?: string, key?: string) {
  const { status: actual, body } = await get(router, path, key);
  expect({ path, status: actual }).toEqual({ path, status });
  expect(body.error).toBeDefined();
  if (param !== undefined) expect(body.error.param).toBe(param);
  return body.error;
}

describe("usage reports", () => {
  let router: TestRouter;
  let manager: Created;
  let alice: Created; // child of manager, manages aliceJr
  let aliceJr: Created; // grandchild
  let bob: Created; // default Resources, free requests only
  let carol: Created; // no usage at all
  let dave: Created; // used credit, then deleted
  let outsider: Created; // sibling of manager

  beforeAll(async () => {
    router = await startRouter({ clock: createManualClock(NOW, "UTC") });
    manager = await create(router, router.ownerKey, { Email: "manager@example.com", Name: "manager", Resources: MANAGER, CreditGranted: 100 });
    outsider = await create(router, router.ownerKey, { Email: "outsider@example.com", Name: "outsider" });
    alice = await create(router, manager.key, { Email: "alice@example.com", Name: "alice", Alias: "Alice A.", Resources: MANAGER, CreditGranted: 10 });
    bob = await create(router, manager.key, { Email: "bob@example.com", Name: "bobby" });
    carol = await create(router, manager.key, { Email: "carol@example.com", Name: "carol" });
    dave = await create(router, manager.key, { Email: "dave@example.com", Name: "dave" });
    aliceJr = await create(router, alice.key, { Email: "alice.jr@example.com", Name: "alice-jr" });

    // The manager's own call never appears in its /x-bill.
    record(router, manager.id, GPT, { prompt: 100 }, 1_000_000_000);
    // alice: one cached, reasoning call today, two cheap calls two days ago, one last month, one failed attempt.
    record(router, alice.id, GPT, { prompt: 1000, completion: 200, cacheRead: 300, cacheWrite: 100, reasoning: 50 }, 2_500_000_000);
    record(router, alice.id, CLAUDE, { prompt: 10, completion: 5 }, 250_000_000, NOW - 2 * DAY);
    record(router, alice.id, CLAUDE, { prompt: 10, completion: 5 }, 250_000_000, NOW - 2 * DAY);
    record(router, alice.id, GPT, { prompt: 7, completion: 3 }, 100_000_000, Date.UTC(2026, 1, 20, 8));
    record(router, alice.id, GPT, {}, 0, NOW, 502);
    record(router, aliceJr.id, CLAUDE, { prompt: 50, completion: 10 }, 250_000_000);
    record(router, aliceJr.id, CLAUDE, { prompt: 50, completion: 10 }, 250_000_000);
    for (let i = 0; i < 3; i++) record(router, bob.id, GEMINI, { prompt: 10 }, 0, NOW - DAY);
    record(router, dave.id, GPT, { prompt: 100, completion: 20 }, 1_000_000_000);
    record(router, outsider.id, GPT, { prompt: 5000 }, 7_000_000_000);
    await router.deps.usageRecorder.flush();
    const removed = await router.fetch(`/x-users/${dave.id}`, { method: "DELETE", key: manager.key });
    expect(removed.status).toBe(200);
  });
  afterAll(() => router.stop());

  describe("GET /dashboard/live", () => {
    test("today's and this month's totals with a per-model breakdown; last month and failed attempts left out", async () => {
      const { status, body } = await get(router, "/dashboard/live", alice.key);
      expect(status).toBe(200);
      expect(body).toEqual({
        object: "live_usage",
        account: { id: alice.id, name: "alice", email: "alice@example.com", alias: "Alice A.", level: 3, isOwner: false, balance: 6.9 },
        daily_usage: {
          Requests: 1,
          Prompt: 1000,
          Completion: 200,
          Reasoning: 50,
          CreditUsed: 2.5,
          ModelUsage: { [GPT]: { Requests: 1, Prompt: 1000, Completion: 200, Reasoning: 50, CreditUsed: 2.5 } },
        },
        monthly_usage: {
          Requests: 3,
          Prompt: 1020,
          Completion: 210,
          Reasoning: 50,
          CreditUsed: 3,
          ModelUsage: {
            [CLAUDE]: { Requests: 2, Prompt: 20, Completion: 10, Reasoning: 0, CreditUsed: 0.5 },
            [GPT]: { Requests: 1, Prompt: 1000, Completion: 200, Reasoning: 50, CreditUsed: 2.5 },
          },
        },
      });
    });

    test("an account without usage sees zeros", async () => {
      const { body } = await get(router, "/dashboard/live", carol.key);
      const zero = { Requests: 0, Prompt: 0, Completion: 0, Reasoning: 0, CreditUsed: 0, ModelUsage: {} };
      expect(body.daily_usage).toEqual(zero);
      expect(body.monthly_usage).toEqual(zero);
      expect(body.account).toMatchObject({ id: carol.id, level: 3, balance: 0 });
    });

    test("a finished call shows within one second without an explicit flush", async () => {
      const before = (await get(router, "/dashboard/live", carol.key)).body.daily_usage.Requests;
      record(router, carol.id, GPT, { prompt: 1 }, 0);
      const started = Date.now();
      await waitFor(async () => (await get(router, "/dashboard/live", carol.key)).body.daily_usage.Requests === before + 1, 1000, "live usage");
      expect(Date.now() - started).toBeLessThan(1000);
      // Leave carol without usage in the window the other tests read.
      const file = new Database(join(router.dataDir, "router.db"));
      file.run("DELETE FROM usage_daily WHERE account_id = ?", [carol.id]);
      file.close();
    });
  });

  describe("GET /dashboard/bill", () => {
    const gptToday = { requests: 1, prompt: 1000, completion: 200, reasoning: 50, cached_input: 300, cache_write: 100 };
    const claudeMonday = { requests: 2, prompt: 20, completion: 10, reasoning: 0, cached_input: 0, cache_write: 0 };

    test("without parameters: today only", async () => {
      const { status, body } = await get(router, "/dashboard/bill", alice.key);
      expect(status).toBe(200);
      expect(body).toEqual({
        object: "bill_info",
        daily_costs: [
          { date: "2026-03-10", total_requests: 1, total_prompt: 1000, total_completion: 200, total_credit_used: 2.5, line_items: [{ name: GPT, cost: 2.5, usage: gptToday }] },
        ],
        usage_summary: { [GPT]: { ...gptToday, cost: 2.5 } },
        total_requests: 1,
        total_prompt: 1000,
        total_completion: 200,
        total_reasoning: 50,
        total_credit_used: 2.5,
        token_summary: { cached_input: 300, uncached_input: 600, cache_write: 100, input_total: 1000, output_total: 200, processed_total: 1200 },
      });
    });

    test("days=3: one entry per day, empty days with zeros, ascending, exact totals", async () => {
      const { body } = await get(router, "/dashboard/bill?days=3", alice.key);
      expect(body.daily_costs).toEqual([
        { date: "2026-03-08", total_requests: 2, total_prompt: 20, total_completion: 10, total_credit_used: 0.5, line_items: [{ name: CLAUDE, cost: 0.5, usage: claudeMonday }] },
        { date: "2026-03-09", total_requests: 0, total_prompt: 0, total_completion: 0, total_credit_used: 0, line_items: [] },
        { date: "2026-03-10", total_requests: 1, total_prompt: 1000, total_completion: 200, total_credit_used: 2.5, line_items: [{ name: GPT, cost: 2.5, usage: gptToday }] },
      ]);
      expect(body.usage_summary).toEqual({ [GPT]: { ...gptToday, cost: 2.5 }, [CLAUDE]: { ...claudeMonday, cost: 0.5 } });
      expect(Object.keys(body.usage_summary)).toEqual([GPT, CLAUDE]);
      expect(body).toMatchObject({ total_requests: 3, total_prompt: 1020, total_completion: 210, total_reasoning: 50, total_credit_used: 3 });
      // uncached = prompt − cache reads − cache writes; processed = input + output.
      expect(body.token_summary).toEqual({ cached_input: 300, uncached_input: 620, cache_write: 100, input_total: 1020, output_total: 210, processed_total: 1230 });
    });

    test("date= one past day, start/end inclusive across a month end", async () => {
      const feb = (await get(router, "/dashboard/bill?date=2026-02-20", alice.key)).body;
      expect(feb.daily_costs).toEqual([
        {
          date: "2026-02-20",
          total_requests: 1,
          total_prompt: 7,
          total_completion: 3,
          total_credit_used: 0.1,
          line_items: [{ name: GPT, cost: 0.1, usage: { requests: 1, prompt: 7, completion: 3, reasoning: 0, cached_input: 0, cache_write: 0 } }],
        },
      ]);
      const range = (await get(router, "/dashboard/bill?start=2026-02-20&end=2026-03-10", alice.key)).body;
      expect(range.daily_costs.map((d: { date: string }) => d.date)).toHaveLength(19);
      expect(range.daily_costs[0].date).toBe("2026-02-20");
      expect(range.daily_costs.at(-1).date).toBe("2026-03-10");
      expect(range).toMatchObject({ total_requests: 4, total_prompt: 1027, total_completion: 213, total_credit_used: 3.1 });
      expect(range.usage_summary[GPT]).toMatchObject({ requests: 2, cost: 2.6 });
      const empty = (await get(router, "/dashboard/bill?date=2026-03-09", alice.key)).body;
      expect(empty).toMatchObject({ daily_costs: [{ date: "2026-03-09", total_requests: 0, line_items: [] }], usage_summary: {}, total_credit_used: 0 });
      expect(empty.token_summary).toEqual({ cached_input: 0, uncached_input: 0, cache_write: 0, input_total: 0, output_total: 0, processed_total: 0 });
    });

    test("every malformed or conflicting parameter is a 400 naming it", async () => {
      const cases: Array<[string, string]> = [
        ["date=2026-02-30", "date"],
        ["date=2026-3-1", "date"],
        ["date=today", "date"],
        ["start=2026-03-05&end=2026-03-01", "start"],
        ["start=2026-03-11", "start"],
        ["start=2026-02-31&end=2026-03-01", "start"],
        ["start=2026-03-01&end=20260302", "end"],
        ["end=2026-03-01", "end"],
        ["date=2026-03-01&start=2026-03-01&end=2026-03-02", "date"],
        ["date=2026-03-01&days=2", "date"],
        ["days=2&start=2026-03-01", "days"],
        ["days=0", "days"],
        ["days=-3", "days"],
        ["days=2.5", "days"],
        ["days=367", "days"],
        ["start=2025-03-09&end=2026-03-10", "start"],
      ];
      for (const [query, param] of cases) {
        const error = await expectRefusal(router, `/dashboard/bill?${query}`, 400, param, alice.key);
        expect(error.type).toBe("invalid_request_error");
        await expectRefusal(router, `/x-bill?${query}`, 400, param, manager.key);
      }
      expect((await get(router, "/dashboard/bill?start=2025-03-10&end=2026-03-10", alice.key)).body.daily_costs).toHaveLength(366);
    });
  });

  describe("GET /x-bill", () => {
    test("line items across descendants are ordered by cost, then name", async () => {
      const { body } = await get(router, "/x-bill?date=2026-03-10", manager.key);
      expect(body.daily_costs[0].line_items.map((item: { name: string; cost: number }) => [item.name, item.cost])).toEqual([
        [GPT, 3.5],
        [CLAUDE, 0.5],
      ]);
    });

    test("covers descendants (grandchildren and deleted accounts included), never the caller or outsiders", async () => {
      const { status, body } = await get(router, "/x-bill?days=3", manager.key);
      expect(status).toBe(200);
      expect(body.object).toBe("bill_info");
      // alice 3 + alice-jr 2 + bob 3 + dave 1; the manager's and the outsider's calls are not here.
      expect(body).toMatchObject({ total_requests: 9, total_prompt: 1020 + 100 + 30 + 100, total_completion: 210 + 20 + 20, total_reasoning: 50, total_credit_used: 4.5 });
      expect(body.daily_costs.map((d: { date: string; total_requests: number }) => [d.date, d.total_requests])).toEqual([
        ["2026-03-08", 2],
        ["2026-03-09", 3],
        ["2026-03-10", 4],
      ]);
      expect(body.usage_summary[GEMINI]).toEqual({ requests: 3, prompt: 30, completion: 0, reasoning: 0, cached_input: 0, cache_write: 0, cost: 0 });
      expect(body.usage_users).toEqual([
        {
          id: alice.id,
          name: "alice",
          alias: "Alice A.",
          email: "alice@example.com",
          top_cost_model: GPT,
          top_request_model: CLAUDE,
          total_requests: 3,
          total_prompt: 1020,
          total_completion: 210,
          total_reasoning: 50,
          total_credit_used: 3,
          usage_analysis: { request_percentage: 33.33, cost_percentage: 66.67 },
        },
        {
          id: dave.id,
          name: "dave",
          alias: null,
          email: "dave@example.com",
          top_cost_model: GPT,
          top_request_model: GPT,
          total_requests: 1,
          total_prompt: 100,
          total_completion: 20,
          total_reasoning: 0,
          total_credit_used: 1,
          usage_analysis: { request_percentage: 11.11, cost_percentage: 22.22 },
        },
        expect.objectContaining({ id: aliceJr.id, name: "alice-jr", total_requests: 2, total_credit_used: 0.5, usage_analysis: { request_percentage: 22.22, cost_percentage: 11.11 } }),
        // Free calls: counted as requests, no cost model.
        expect.objectContaining({ id: bob.id, top_cost_model: null, top_request_model: GEMINI, total_requests: 3, total_credit_used: 0, usage_analysis: { request_percentage: 33.33, cost_percentage: 0 } }),
      ]);
      // carol made no request in the range, and the caller is never ranked.
      const ids = body.usage_users.map((u: { id: number }) => u.id);
      expect(ids).not.toContain(carol.id);
      expect(ids).not.toContain(manager.id);
      expect(ids).not.toContain(outsider.id);
    });

    test("the owner sees its whole tree, its own usage excluded", async () => {
      const { body } = await get(router, "/x-bill");
      // Today: manager 1 + alice 1 + alice-jr 2 + dave 1 + outsider 1.
      expect(body.total_requests).toBe(6);
      expect(body.total_credit_used).toBe(12);
      expect(body.usage_users[0]).toMatchObject({ id: outsider.id, total_credit_used: 7, usage_analysis: { cost_percentage: 58.33 } });
    });

    test("user= selects one descendant and its subtree, by id, name or email", async () => {
      for (const user of [String(alice.id), "alice", "alice@example.com", "ALICE@example.com"]) {
        const { status, body } = await get(router, `/x-bill?days=3&user=${encodeURIComponent(user)}`, manager.key);
        expect(status).toBe(200);
        expect(body).toMatchObject({ total_requests: 5, total_credit_used: 3.5 });
        expect(body.usage_users.map((u: { id: number; usage_analysis: unknown }) => [u.id, u.usage_analysis])).toEqual([
          [alice.id, { request_percentage: 60, cost_percentage: 85.71 }],
          [aliceJr.id, { request_percentage: 40, cost_percentage: 14.29 }],
        ]);
      }
      const leaf = (await get(router, `/x-bill?user=${bob.id}&date=2026-03-09`, manager.key)).body;
      expect(leaf).toMatchObject({ total_requests: 3, usage_users: [{ id: bob.id, usage_analysis: { request_percentage: 100, cost_percentage: 0 } }] });
      // A grandchild from its grandparent's point of view.
      expect((await get(router, `/x-bill?user=alice-jr`, manager.key)).body.usage_users.map((u: { id: number }) => u.id)).toEqual([aliceJr.id]);
    });

    test("user= outside the subtree, the caller itself, a deleted or unknown account: 404", async () => {
      for (const user of [String(outsider.id), "outsider", "manager", String(manager.id), String(dave.id), "nobody@example.com", "999999"]) {
        const error = await expectRefusal(router, `/x-bill?user=${encodeURIComponent(user)}`, 404, undefined, manager.key);
        expect(error.type).toBe("not_found_error");
      }
      // alice manages only alice-jr.
      await expectRefusal(router, `/x-bill?user=bobby`, 404, undefined, alice.key);
    });

    test("without management access: 403 in the OpenAI envelope", async () => {
      const denied = await expectRefusal(router, "/x-bill", 403, undefined, bob.key);
      expect(denied).toMatchObject({ type: "permission_error", param: null });
      const billOnly = await create(router, manager.key, { Email: "billonly@example.com", Resources: "/dashboard/*,/x-bill" });
      const error = await expectRefusal(router, "/x-bill", 403, undefined, billOnly.key);
      expect(error).toMatchObject({ type: "permission_error", code: "manage_not_allowed" });
      // Their own bill stays available.
      expect((await get(router, "/dashboard/bill", billOnly.key)).status).toBe(200);
      await expectRefusal(router, "/x-bill", 401, undefined, null as unknown as string);
    });
  });
});

describe("business dates follow the configured zone", () => {
  let router: TestRouter;
  beforeAll(async () => {
    // 16:00 UTC on March 10 is 01:00 on March 11 in Tokyo.
    router = await startRouter({ config: { timeZone: "Asia/Tokyo" }, clock: createManualClock(Date.UTC(2026, 2, 10, 16), "Asia/Tokyo") });
  });
  afterAll(() => router.stop());

  test("today, days and the live totals use the Tokyo date", async () => {
    record(router, 1, GPT, { prompt: 10, completion: 1 }, 1_000_000_000, Date.UTC(2026, 2, 10, 16)); // March 11 in Tokyo
    record(router, 1, GPT, { prompt: 20, completion: 2 }, 2_000_000_000, Date.UTC(2026, 2, 10, 14)); // 23:00 March 10 in Tokyo
    record(router, 1, GPT, { prompt: 40, completion: 4 }, 4_000_000_000, Date.UTC(2026, 1, 28, 15, 30)); // 00:30 March 1 in Tokyo
    await router.deps.usageRecorder.flush();

    const today = (await get(router, "/dashboard/bill")).body;
    expect(today.daily_costs).toEqual([expect.objectContaining({ date: "2026-03-11", total_requests: 1, total_prompt: 10, total_credit_used: 1 })]);
    const two = (await get(router, "/dashboard/bill?days=2")).body;
    expect(two.daily_costs.map((d: { date: string; total_prompt: number }) => [d.date, d.total_prompt])).toEqual([
      ["2026-03-10", 20],
      ["2026-03-11", 10],
    ]);
    const live = (await get(router, "/dashboard/live")).body;
    expect(live.daily_usage).toMatchObject({ Requests: 1, Prompt: 10, CreditUsed: 1 });
    expect(live.monthly_usage).toMatchObject({ Requests: 3, Prompt: 70, CreditUsed: 7 });
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { SUBTREE_SORT_ROWS } from "../../src/store/sqlite/request-log.ts";
import { addKey } from "../helpers/keys.ts";
import { chatCompletion, startMockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, MANAGER_RESOURCES, type CreatedAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

/**
 * The request log of a grown deployment, read by managers: a manager's GET /x-requests
 * must read its subtree's rows, not walk every row of the tenant to find them (SQLite
 * took the tenant's index for the subtree's filter: 210 ms for a leaf manager with no
 * call among a million rows). Proved by the plans of the statements the list issues, and
 * by the pages' totals and order on both of the list's plans.
 */

/** Every SQL text prepared in this process from now on (the router runs in it). */
const prepared: string[] = [];
const original = Database.prototype.prepare;
Database.prototype.prepare = function (this: Database, text: string, ...rest: unknown[]) {
  prepared.push(text);
  return (original as (...args: unknown[]) => ReturnType<Database["prepare"]>).call(this, text, ...rest);
} as Database["prepare"];

let router: TestRouter;
let leafManager: CreatedAccount;
let smallManager: CreatedAccount;
let bigManager: CreatedAccount;
let bigChild: CreatedAccount;
let db: Database;

const OTHERS = 30_000;
const SMALL = 45;
const BIG = SUBTREE_SORT_ROWS + 2_000;
const T0 = 1_800_000_000_000;

beforeAll(async () => {
  router = await startRouter();
  leafManager = await createAccount(router, { Resources: MANAGER_RESOURCES });
  smallManager = await createAccount(router, { Resources: MANAGER_RESOURCES });
  bigManager = await createAccount(router, { Resources: MANAGER_RESOURCES });
  bigChild = await createAccount(router, {}, bigManager.key);
  db = new Database(join(router.dataDir, "router-requests.db"));
  const insert = db.prepare(
    "INSERT INTO request_log (request_id, tenant_id, account_id, created_at, family, endpoint, requested_model, effective_model, status, duration_ms, source) VALUES (?, 0, ?, ?, 'openai', '/v1/chat/completions', ?, ?, ?, 5, 'upstream')",
  );
  db.transaction(() => {
    // The owner's own calls, newest of all: what the tenant's index meets first.
    for (let i = 0; i < OTHERS; i++) insert.run(`req_o${i}`, 1, T0 + 10_000_000 + i, "gpt-a", "gpt-a", 200);
    // The small manager's, oldest of all, three to a millisecond (ties broken by request id).
    for (let i = 0; i < SMALL; i++) insert.run(`req_s${String(i).padStart(3, "0")}`, smallManager.id, T0 + Math.floor(i / 3), i % 5 ? "gpt-a" : "gpt-b", "gpt-a", i % 4 ? 200 : 429);
    // A row of the other deployment style's tenant (docs/api.md: never seen), newest of the small manager's.
    db.run(
      "INSERT INTO request_log (request_id, tenant_id, account_id, created_at, family, endpoint, status, duration_ms, source) VALUES ('req_s999', 99, ?, ?, 'openai', '/v1/chat/completions', 429, 5, 'upstream')",
      [smallManager.id, T0 + 999],
    );
    // The big manager's subtree, itself and its child, four to a millisecond, mixed in with nothing else.
    for (let i = 0; i < BIG; i++) {
      const who = i % 2 ? bigChild.id : bigManager.id;
      insert.run(`req_b${String(i).padStart(6, "0")}`, who, T0 + 1_000_000 + Math.floor(i / 4), i % 5 ? "gpt-a" : "gpt-b", "gpt-a", i % 4 ? 200 : 429);
    }
  })();
});

afterAll(async () => {
  db?.close();
  await router?.stop();
  Database.prototype.prepare = original;
});

/** The query plans of the statements reading `table` issued while `run` ran. */
async function plansOfTable(table: string, run: () => Promise<unknown>): Promise<string[]> {
  const from = prepared.length;
  await run();
  const texts = prepared.slice(from).filter((text) => text.toLowerCase().includes(`from "${table}"`));
  expect(texts.length).toBeGreaterThan(0);
  const main = new Database(join(router.dataDir, "router.db"), { readonly: true });
  try {
    main.run(`ATTACH DATABASE '${join(router.dataDir, "router-requests.db")}' AS log`);
    return texts.map((text) =>
      main
        .query(`EXPLAIN QUERY PLAN ${text}`)
        .all()
        .map((row) => (row as { detail: string }).detail)
        .join("; "),
    );
  } finally {
    main.close();
  }
}

const plansOf = (run: () => Promise<unknown>) => plansOfTable("request_log", run);

const ids = (body: Array<{ request_id: string }>) => body.map((r) => r.request_id);

describe("a manager's request log among many rows", () => {
  test("a leaf manager with no call reads no row of the tenant's (the account index, no walk of the tenant's)", async () => {
    const plans = await plansOf(async () => {
      const res = await api(router, "/x-requests?status=429&model=gpt-a", { key: leafManager.key });
      expect(res.status).toBe(200);
      expect(res.body).toEqual([]);
      expect(res.headers.get("x-total-count")).toBe("0");
    });
    for (const plan of plans) {
      expect(plan).toContain("request_log_account_created");
      expect(plan).not.toContain("request_log_tenant_created");
      expect(plan).not.toMatch(/SCAN request_log/);
    }
  });

  test("a small subtree's pages come through the account index, in order, none skipped or repeated across tied timestamps", async () => {
    const seen: string[] = [];
    const plans = await plansOf(async () => {
      for (const page of [1, 2, 3]) {
        const res = await api(router, `/x-requests?size=20&page=${page}`, { key: smallManager.key });
        expect(res.status).toBe(200);
        expect(res.headers.get("x-total-count")).toBe(String(SMALL));
        expect(res.headers.get("x-total-pages")).toBe("3");
        seen.push(...ids(res.body));
      }
    });
    const expected = Array.from({ length: SMALL }, (_, i) => `req_s${String(i).padStart(3, "0")}`).reverse();
    expect(seen).toEqual(expected);
    for (const plan of plans) expect(plan).not.toContain("request_log_tenant_created");
  });

  test("combined filters on a small subtree: the total and the rows agree with the rows seeded", async () => {
    const res = await api(router, "/x-requests?size=100&status=429&model=gpt-b", { key: smallManager.key });
    const expected = Array.from({ length: SMALL }, (_, i) => i)
      .filter((i) => i % 4 === 0 && i % 5 === 0)
      .map((i) => `req_s${String(i).padStart(3, "0")}`)
      .reverse();
    expect(res.headers.get("x-total-count")).toBe(String(expected.length));
    expect(ids(res.body)).toEqual(expected);
  });

  test("a large subtree counts from the account index; its pages are those of the newest-first order on either plan", async () => {
    const all = Array.from({ length: BIG }, (_, i) => `req_b${String(i).padStart(6, "0")}`).reverse();
    const plans = await plansOf(async () => {
      const first = await api(router, "/x-requests?size=50&page=1", { key: bigManager.key });
      const second = await api(router, "/x-requests?size=50&page=2", { key: bigManager.key });
      expect(first.headers.get("x-total-count")).toBe(String(BIG));
      expect([...ids(first.body), ...ids(second.body)]).toEqual(all.slice(0, 100));
      // The last page, read through the account index (near the end of the matches).
      const lastPage = Math.ceil(BIG / 50);
      const last = await api(router, `/x-requests?size=50&page=${lastPage}`, { key: bigManager.key });
      expect(ids(last.body)).toEqual(all.slice((lastPage - 1) * 50));
    });
    // The count reads the subtree's rows only.
    expect(plans[0]).toContain("request_log_account_created");
    expect(plans[0]).not.toContain("request_log_tenant_created");
    // Filtered: the 429s among the subtree, child's only when named.
    const child429 = await api(router, `/x-requests?size=10&status=429&account=${bigChild.name}`, { key: bigManager.key });
    expect(child429.headers.get("x-total-count")).toBe("0"); // the child's calls are the odd ones, 429s the multiples of 4
    const mine429 = await api(router, "/x-requests?size=10&status=429", { key: bigManager.key });
    expect(mine429.headers.get("x-total-count")).toBe(String(Math.ceil(BIG / 4)));
    expect(ids(mine429.body)).toEqual(all.filter((id) => Number(id.slice(5)) % 4 === 0).slice(0, 10));
  });

  test("a page past the last match is empty with the right total, for the owner and a manager", async () => {
    const owner = await api(router, "/x-requests?size=100&page=100000");
    expect(owner.status).toBe(200);
    expect(owner.body).toEqual([]);
    expect(owner.headers.get("x-total-count")).toBe(String(OTHERS + SMALL + BIG));
    const manager = await api(router, "/x-requests?size=100&page=100000", { key: bigManager.key });
    expect(manager.body).toEqual([]);
    expect(manager.headers.get("x-total-count")).toBe(String(BIG));
  });
});

describe("the operation log among many rows", () => {
  const ROWS = 5_000;
  const TARGET = 4_242;
  beforeAll(() => {
    const main = new Database(join(router.dataDir, "router.db"));
    try {
      const insert = main.prepare("INSERT INTO operation_log (tenant_id, at, actor_id, action, target_id, details) VALUES (0, ?, 1, ?, ?, '{}')");
      main.transaction(() => {
        // Every tenth row about TARGET, five to a millisecond: ties broken by id.
        for (let i = 0; i < ROWS; i++) insert.run(T0 + Math.floor(i / 5), i % 3 ? "account.update" : "credit.grant", i % 10 ? 100_000 + i : TARGET);
      })();
    } finally {
      main.close();
    }
  });

  test("one account's history is a page of the target index, in order, none skipped or repeated across tied times", async () => {
    const seen: Array<[number, number]> = [];
    const plans = await plansOfTable("operation_log", async () => {
      for (const page of [1, 2, 3, 4, 5, 6]) {
        const res = await api(router, `/dashboard/logs?target=${TARGET}&size=100&page=${page}`);
        expect(res.status).toBe(200);
        expect(res.body.total).toBe(ROWS / 10);
        seen.push(...res.body.logs.map((row: { time: string; id: number }): [number, number] => [Date.parse(row.time), row.id]));
        for (const row of res.body.logs) expect(row.target_id).toBe(TARGET);
      }
    });
    expect(new Set(seen.map(([, id]) => id)).size).toBe(ROWS / 10);
    expect(seen).toEqual([...seen].sort((a, b) => b[0] - a[0] || b[1] - a[1]));
    for (const plan of plans) {
      expect(plan).toContain("operation_log_target_at");
      expect(plan).not.toMatch(/SCAN operation_log/);
    }
  });

  test("a tenant's log and its filters combined read the tenant's index, with the right total", async () => {
    const plans = await plansOfTable("operation_log", async () => {
      const all = await api(router, "/dashboard/logs?size=100&page=2");
      expect(all.body.total).toBeGreaterThanOrEqual(ROWS);
      const combined = await api(router, `/dashboard/logs?target=${TARGET}&action=credit.*&size=100`);
      // Rows i ≡ 0 (mod 10) and i ≡ 0 (mod 3): i ≡ 0 (mod 30).
      expect(combined.body.total).toBe(Math.ceil(ROWS / 30));
      expect(combined.body.logs.every((row: { action: string }) => row.action === "credit.grant")).toBe(true);
    });
    for (const plan of plans) expect(plan).not.toMatch(/SCAN operation_log/);
  });
});

describe("subtree reads on a model call's admission and in the account lists", () => {
  test("a call under ancestors with limits seeds their month's totals from a range of the path index and of each account's days", async () => {
    const upstream = startMockUpstream().route("POST", "/v1/chat/completions", () => chatCompletion("gpt-a"));
    try {
      await addKey(router, { provider: `${upstream.url}/v1`, noSleep: true });
      const top = await createAccount(router, { Resources: MANAGER_RESOURCES, HardLimit: 50, DailyLimit: 10, CreditGranted: 100 });
      const middle = await createAccount(router, { Resources: MANAGER_RESOURCES, HardLimit: 40, CreditGranted: 50 }, top.key);
      const leaf = await createAccount(router, { CreditGranted: 10 }, middle.key);
      const plans = await plansOfTable("usage_daily", async () => {
        const res = await router.fetch("/v1/chat/completions", {
          method: "POST",
          key: leaf.key,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-a", messages: [{ role: "user", content: "hi" }] }),
        });
        expect(res.status).toBe(200);
        await res.text();
      });
      // The month's totals of both ancestors (HardLimit) and the day's of the top one (DailyLimit).
      expect(plans.length).toBeGreaterThanOrEqual(3);
      for (const plan of plans) {
        expect(plan).not.toMatch(/SCAN (accounts|usage_daily)/);
        expect(plan).toContain("SEARCH accounts USING COVERING INDEX accounts_path (path>? AND path<?)");
      }
      // A month is a range of each account's days, not all of them.
      expect(plans.filter((plan) => plan.includes("(account_id=? AND day>? AND day<?)")).length).toBeGreaterThanOrEqual(2);
    } finally {
      await upstream.stop();
    }
  });

  test("a leaf manager's /x-dna reads its own range of the path index, not every account's", async () => {
    const plans = await plansOfTable("accounts", async () => {
      const res = await api(router, "/x-dna", { key: leafManager.key });
      expect(res.status).toBe(200);
      expect(res.body).toEqual([]);
      expect(res.headers.get("x-total-count")).toBe("0");
    });
    for (const plan of plans) expect(plan).not.toMatch(/SCAN accounts/);
  });
});

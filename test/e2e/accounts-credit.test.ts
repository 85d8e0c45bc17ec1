import { join } from "node:path";
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

/** The router's database file as another process sees it (at-rest checks of the embedded store). */
const databaseFile = (router: TestRouter) => new Database(join(router.dataDir, "router.db"));


/**
 * Issue 4, credit: owners mint, everyone else transfers; a ledger of grants with
 * expiries; batch credit with skipped entries and dry runs; and exact balances under
 * concurrent batch-credit and rotation calls.
 */

const DEFAULT_RESOURCES = "/v1/*,/v1beta/*,/chat/completions,/responses,/embeddings,/models,/dashboard/*,/x-self,/x-pricing";
const MANAGER_RESOURCES = `${DEFAULT_RESOURCES},/x-users*,/x-dna*`;
const DAY = 86_400_000;

interface Reply {
  status: number;
  body: any;
}

let sequence = 0;
const freshEmail = (tag = "credit") => `${tag}${++sequence}@example.com`;

/** Requests against one router; `key` defaults to its owner's. */
function client(router: TestRouter) {
  const api = async (path: string, init: { method?: string; body?: unknown; key?: string } = {}): Promise<Reply> => {
    const res = await router.fetch(path, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      key: init.key,
      headers: { "content-type": "application/json" },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const create = async (fields: Record<string, unknown> = {}, key?: string) => {
    const res = await api("/x-users", { body: { Email: freshEmail(), ...fields }, key });
    if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  /** Balance as the account itself sees it. */
  const balance = async (key?: string): Promise<number> => {
    const res = await api("/dashboard/status", { key });
    if (res.status !== 200) throw new Error(`status failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.balance;
  };
  /** Balance as the owner sees it in the account's record. */
  const recordBalance = async (id: number): Promise<number> => (await api(`/x-dna/${id}`)).body.Balance;
  const grant = (id: number, credit: number, key?: string, days?: number) =>
    api(`/x-users/${id}`, { method: "PUT", key, body: { CreditGranted: credit, ...(days === undefined ? {} : { Days: days }) } });
  const batch = (body: Record<string, unknown>, key?: string) => api("/x-users/batch-credit", { body, key });
  return { api, create, balance, recordBalance, grant, batch };
}

function expectError(res: Reply, status: number, param?: string | null): void {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  expect(typeof res.body?.error?.message).toBe("string");
  if (param !== undefined) expect(res.body.error.param).toBe(param);
}

/** Credits as exact integers (nano-credits), so sums do not drift. */
const nanos = (credits: number) => Math.round(credits * 1e9);

describe("granting credit", () => {
  let router: TestRouter;
  let c: ReturnType<typeof client>;

  beforeAll(async () => {
    router = await startRouter();
    c = client(router);
  });
  afterAll(() => router.stop());

  test("the owner mints: its own balance does not change", async () => {
    const account = await c.create({ CreditGranted: 25 });
    expect(account.Balance).toBe(25);
    expect(await c.balance()).toBe(0);
    const more = await c.grant(account.ID, 5.25);
    expect(more.status).toBe(200);
    expect(more.body.Balance).toBe(30.25);
    expect(await c.balance(account.APIKey)).toBe(30.25);
    expect(await c.balance()).toBe(0);
  });

  test("a manager transfers to its child: its balance drops by the amount", async () => {
    const manager = await c.create({ Resources: MANAGER_RESOURCES, CreditGranted: 10 });
    const child = await c.create({ CreditGranted: 4 }, manager.APIKey);
    expect(child.Balance).toBe(4);
    expect(await c.balance(manager.APIKey)).toBe(6);
    const more = await c.grant(child.ID, 2.5, manager.APIKey);
    expect(more.body.Balance).toBe(6.5);
    expect(await c.balance(manager.APIKey)).toBe(3.5);
    // A manager two levels up transfers from its own balance too.
    expect((await c.api(`/x-users/${child.ID}`, { method: "PUT", key: manager.APIKey, body: { Resources: MANAGER_RESOURCES } })).status).toBe(200);
    const grandchild = await c.create({}, child.APIKey);
    expect((await c.grant(grandchild.ID, 1.5, manager.APIKey)).body.Balance).toBe(1.5);
    expect(await c.balance(manager.APIKey)).toBe(2);
    expect(await c.balance(child.APIKey)).toBe(6.5);
    expect(await c.balance()).toBe(0);
  });

  test("a grant larger than the manager's balance is 400 and changes nothing", async () => {
    const manager = await c.create({ Resources: MANAGER_RESOURCES, CreditGranted: 3 });
    const child = await c.create({ CreditGranted: 1 }, manager.APIKey);
    const tooMuch = await c.grant(child.ID, 2.000000001, manager.APIKey);
    expectError(tooMuch, 400, "CreditGranted");
    expect(tooMuch.body.error.code).toBe("insufficient_credit");
    expect(await c.balance(manager.APIKey)).toBe(2);
    expect(await c.balance(child.APIKey)).toBe(1);

    // Also at creation: the refused account does not exist and its email stays free.
    const email = freshEmail();
    const refused = await c.api("/x-users", { key: manager.APIKey, body: { Email: email, CreditGranted: 5 } });
    expectError(refused, 400, "CreditGranted");
    expect((await c.api("/x-users?size=100", { key: manager.APIKey })).body.map((r: any) => r.ID)).toEqual([child.ID]);
    expect(await c.balance(manager.APIKey)).toBe(2);
    // An update that combines a field change with a refused grant applies neither.
    const combined = await c.api(`/x-users/${child.ID}`, { method: "PUT", key: manager.APIKey, body: { Alias: "changed", CreditGranted: 50 } });
    expectError(combined, 400, "CreditGranted");
    expect((await c.api(`/x-users/${child.ID}`, { key: manager.APIKey })).body.Alias).toBeNull();
    // Exactly the balance is fine.
    expect((await c.grant(child.ID, 2, manager.APIKey)).body.Balance).toBe(3);
    expect(await c.balance(manager.APIKey)).toBe(0);
    expect((await c.create({ Email: email }, manager.APIKey)).Email).toBe(email);
  });

  test("negative CreditGranted takes from the child and returns it to the caller, never below zero", async () => {
    const manager = await c.create({ Resources: MANAGER_RESOURCES, CreditGranted: 10 });
    const child = await c.create({ CreditGranted: 6 }, manager.APIKey);
    const back = await c.grant(child.ID, -2.5, manager.APIKey);
    expect(back.status).toBe(200);
    expect(back.body.Balance).toBe(3.5);
    expect(await c.balance(manager.APIKey)).toBe(6.5);
    const tooMuch = await c.grant(child.ID, -3.6, manager.APIKey);
    expectError(tooMuch, 400, "CreditGranted");
    expect(await c.balance(child.APIKey)).toBe(3.5);
    expect(await c.balance(manager.APIKey)).toBe(6.5);
    expect((await c.grant(child.ID, -3.5, manager.APIKey)).body.Balance).toBe(0);
    expect(await c.balance(manager.APIKey)).toBe(10);
    expectError(await c.grant(child.ID, -0.1, manager.APIKey), 400, "CreditGranted");
    // Negative at creation makes no sense.
    expectError(await c.api("/x-users", { body: { Email: freshEmail(), CreditGranted: -1 } }), 400, "CreditGranted");
    // The owner taking credit back receives it.
    const ownerBefore = await c.balance();
    expect((await c.grant(manager.ID, -4)).body.Balance).toBe(6);
    expect(await c.balance()).toBe(ownerBefore + 4);
  });

  test("CreditGranted must be a finite number; Days a positive integer", async () => {
    const account = await c.create();
    for (const bad of ["5", true, [], {}]) expectError(await c.api(`/x-users/${account.ID}`, { method: "PUT", body: { CreditGranted: bad } }), 400, "CreditGranted");
    expectError(await c.api(`/x-users/${account.ID}`, { method: "PUT", body: "not json" as unknown as object }), 400);
    for (const bad of [0, -1, 1.5, "2"]) expectError(await c.grant(account.ID, 1, undefined, bad as number), 400, "Days");
    expect(await c.recordBalance(account.ID)).toBe(0);
  });
});

describe("credit expiry (Days) with a manual clock", () => {
  let router: TestRouter;
  let clock: ReturnType<typeof createManualClock>;
  let c: ReturnType<typeof client>;

  beforeAll(async () => {
    clock = createManualClock(Date.UTC(2025, 0, 10, 12, 0, 0));
    router = await startRouter({ clock });
    c = client(router);
  });
  afterAll(() => router.stop());

  test("credit granted for 1 day is gone 2 days later and cannot be transferred", async () => {
    const account = await c.create({ Resources: MANAGER_RESOURCES, CreditGranted: 5, Days: 1 });
    expect(account.Balance).toBe(5);
    const child = await c.create({}, account.APIKey);
    clock.advance(DAY - 1000);
    expect(await c.balance(account.APIKey)).toBe(5);
    clock.advance(DAY + 1000);
    expect(await c.balance(account.APIKey)).toBe(0);
    expect(await c.recordBalance(account.ID)).toBe(0);
    expectError(await c.grant(child.ID, 1, account.APIKey), 400, "CreditGranted");
    expectError(await c.api("/x-users", { key: account.APIKey, body: { Email: freshEmail(), CreditGranted: 1 } }), 400, "CreditGranted");
    const batch = await c.batch({ IDs: [child.ID], CreditGranted: 1 }, account.APIKey);
    expect(batch.body.results).toEqual([{ ID: child.ID, status: "skipped", reason: expect.stringContaining("insufficient") }]);
    expect(await c.balance(child.APIKey)).toBe(0);
    // Deleting the account returns nothing: expired credit is not returned.
    expect((await c.api(`/x-users/${child.ID}`, { method: "DELETE" })).body.CreditReturned).toBe(0);
  });

  test("expiry travels with transferred credit; earliest-expiring credit is given first", async () => {
    const parent = await c.create({ Resources: MANAGER_RESOURCES, CreditGranted: 4 });
    expect((await c.grant(parent.ID, 6, undefined, 2)).body.Balance).toBe(10);
    // 4 without expiry + 6 expiring in 2 days. A transfer takes the expiring credit first.
    const noDays = await c.create({ CreditGranted: 5 }, parent.APIKey);
    const longer = await c.create({ CreditGranted: 1, Days: 30 }, parent.APIKey);
    const shorter = await c.create({ CreditGranted: 1, Days: 1 }, parent.APIKey);
    expect(await c.balance(parent.APIKey)).toBe(3);

    clock.advance(DAY + 60_000);
    expect(await c.balance(shorter.APIKey)).toBe(0);
    expect(await c.balance(noDays.APIKey)).toBe(5);
    expect(await c.balance(longer.APIKey)).toBe(1);
    expect(await c.balance(parent.APIKey)).toBe(3);

    clock.advance(DAY);
    // The 6 expiring credits were all given away (5 + 1); the parent keeps its 3 without expiry.
    expect(await c.balance(noDays.APIKey)).toBe(0);
    expect(await c.balance(longer.APIKey)).toBe(0);
    expect(await c.balance(parent.APIKey)).toBe(3);

    // Credit that a grandchild receives cannot outlive its source either.
    const source = await c.create({ Resources: MANAGER_RESOURCES, CreditGranted: 2, Days: 2 });
    const middle = await c.create({ Resources: MANAGER_RESOURCES }, source.APIKey);
    expect((await c.grant(middle.ID, 2, source.APIKey)).status).toBe(200);
    const leaf = await c.create({ CreditGranted: 1.5, Days: 365 }, middle.APIKey);
    expect(leaf.Balance).toBe(1.5);
    clock.advance(2 * DAY + 1);
    expect(await c.balance(leaf.APIKey)).toBe(0);
    expect(await c.balance(middle.APIKey)).toBe(0);
  });

  test("taking credit back returns it with its expiry", async () => {
    const parent = await c.create({ Resources: MANAGER_RESOURCES, CreditGranted: 3, Days: 1 });
    const child = await c.create({ CreditGranted: 3 }, parent.APIKey);
    expect((await c.grant(child.ID, -3, parent.APIKey)).body.Balance).toBe(0);
    expect(await c.balance(parent.APIKey)).toBe(3);
    clock.advance(DAY + 1);
    expect(await c.balance(parent.APIKey)).toBe(0);
  });
});

describe("batch credit", () => {
  let router: TestRouter;
  let c: ReturnType<typeof client>;
  let manager: any;
  let kids: any[];
  let grandchild: any;
  let outsider: any;

  beforeAll(async () => {
    router = await startRouter();
    c = client(router);
    manager = await c.create({ Resources: MANAGER_RESOURCES, CreditGranted: 10 });
    kids = [];
    for (let i = 0; i < 3; i++) kids.push(await c.create({ Resources: i === 0 ? MANAGER_RESOURCES : DEFAULT_RESOURCES }, manager.APIKey));
    grandchild = await c.create({}, kids[0].APIKey);
    const other = await c.create({ Resources: MANAGER_RESOURCES });
    outsider = await c.create({}, other.APIKey);
  });
  afterAll(() => router.stop());

  test("applied and skipped entries in a 200 result with a summary", async () => {
    const res = await c.batch({ IDs: [kids[0].ID, 999_999, outsider.ID, manager.ID, grandchild.ID, kids[1].ID], CreditGranted: 2 }, manager.APIKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      object: "batch_credit",
      DryRun: false,
      results: [
        { ID: kids[0].ID, status: "applied", BalanceBefore: 0, BalanceAfter: 2 },
        { ID: 999_999, status: "skipped", reason: expect.any(String) },
        { ID: outsider.ID, status: "skipped", reason: expect.any(String) },
        { ID: manager.ID, status: "skipped", reason: expect.any(String) },
        { ID: grandchild.ID, status: "applied", BalanceBefore: 0, BalanceAfter: 2 },
        { ID: kids[1].ID, status: "applied", BalanceBefore: 0, BalanceAfter: 2 },
      ],
      summary: { applied: 3, skipped: 3, ParentCreditChange: -6, ChildrenCreditChange: 6 },
    });
    // Outside the subtree reads exactly like unknown: nothing is revealed.
    expect(res.body.results[2].reason).toBe(res.body.results[1].reason);
    expect(res.body.results[3].reason).not.toBe(res.body.results[1].reason);
    expect(await c.balance(manager.APIKey)).toBe(4);
    expect(await c.balance(outsider.APIKey)).toBe(0);
    expect(await c.balance(grandchild.APIKey)).toBe(2);
  });

  test("insufficient balance skips the entry with a reason; the others still apply", async () => {
    // Manager has 4: the first two entries apply, the third does not.
    const res = await c.batch({ IDs: [kids[0].ID, kids[1].ID, kids[2].ID], CreditGranted: 1.5 }, manager.APIKey);
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: any) => r.status)).toEqual(["applied", "applied", "skipped"]);
    expect(res.body.results[2].reason).toMatch(/insufficient/i);
    expect(res.body.summary).toEqual({ applied: 2, skipped: 1, ParentCreditChange: -3, ChildrenCreditChange: 3 });
    expect(await c.balance(manager.APIKey)).toBe(1);
    expect(await c.balance(kids[2].APIKey)).toBe(0);
    // Negative entries below zero are skipped too.
    const back = await c.batch({ IDs: [kids[0].ID, kids[2].ID], CreditGranted: -3.5 }, manager.APIKey);
    expect(back.body.results).toEqual([
      { ID: kids[0].ID, status: "applied", BalanceBefore: 3.5, BalanceAfter: 0 },
      { ID: kids[2].ID, status: "skipped", reason: expect.stringMatching(/insufficient/i) },
    ]);
    expect(back.body.summary).toEqual({ applied: 1, skipped: 1, ParentCreditChange: 3.5, ChildrenCreditChange: -3.5 });
    expect(await c.balance(manager.APIKey)).toBe(4.5);
  });

  test("the owner mints in batch: ParentCreditChange 0", async () => {
    const res = await c.batch({ IDs: [manager.ID, grandchild.ID], CreditGranted: 1 });
    expect(res.body.summary).toEqual({ applied: 2, skipped: 0, ParentCreditChange: 0, ChildrenCreditChange: 2 });
    expect(await c.balance()).toBe(0);
    expect(await c.balance(manager.APIKey)).toBe(5.5);
    await c.batch({ IDs: [grandchild.ID], CreditGranted: -1 });
  });

  test("malformed bodies are 400 naming the field", async () => {
    for (const [body, param] of [
      [{ IDs: [kids[0].ID], CreditGranted: 0 }, "CreditGranted"],
      [{ IDs: [kids[0].ID], CreditGranted: 0.0000000001 }, "CreditGranted"],
      [{ IDs: [kids[0].ID] }, "CreditGranted"],
      [{ IDs: [kids[0].ID], CreditGranted: "1" }, "CreditGranted"],
      [{ IDs: [], CreditGranted: 1 }, "IDs"],
      [{ IDs: [String(kids[0].ID)], CreditGranted: 1 }, "IDs"],
      [{ IDs: [kids[0].ID], CreditGranted: 1, Days: 0 }, "Days"],
      [{ IDs: [kids[0].ID], CreditGranted: 1, DryRun: "yes" }, "DryRun"],
      [{ IDs: [kids[0].ID], CreditGranted: 1, Extra: 1 }, "Extra"],
    ] as const) {
      expectError(await c.batch(body as Record<string, unknown>, manager.APIKey), 400, param);
    }
    expect(await c.balance(manager.APIKey)).toBe(5.5);
    // A non-manager may not call it at all.
    expectError(await c.batch({ IDs: [grandchild.ID], CreditGranted: 1 }, kids[1].APIKey), 403);
  });

  test("a dry run reports exactly what the real run then does, and changes nothing", async () => {
    const everyone = [manager, ...kids, grandchild, outsider];
    const snapshot = async () => Promise.all(everyone.map((a) => c.recordBalance(a.ID)));
    const before = await snapshot();
    // 5.5 available: 2 + 2 apply, the third 2 is insufficient, then an unknown and a grandchild (insufficient).
    const body = { IDs: [kids[1].ID, kids[2].ID, kids[0].ID, 424_242, outsider.ID, grandchild.ID], CreditGranted: 2, Days: 3 };
    const dry = await c.batch({ ...body, DryRun: true }, manager.APIKey);
    expect(dry.status).toBe(200);
    expect(dry.body.DryRun).toBe(true);
    expect(dry.body.results.map((r: any) => r.status)).toEqual(["applied", "applied", "skipped", "skipped", "skipped", "skipped"]);
    expect(await snapshot()).toEqual(before);
    expect(await c.balance(manager.APIKey)).toBe(5.5);

    const real = await c.batch({ ...body, DryRun: false }, manager.APIKey);
    expect(real.status).toBe(200);
    expect({ ...real.body, DryRun: true }).toEqual(dry.body);
    const after = await snapshot();
    expect(after).not.toEqual(before);
    expect(after[0]).toBe(1.5);
    // Negative dry runs too, an unknown ID among them (its entry's held credit is not read
    // inside the dry run's transaction: that read waited for the transaction, which waited
    // for it, and every management call after it hung).
    const back = { IDs: [kids[1].ID, kids[2].ID, grandchild.ID, 424_242], CreditGranted: -2 };
    const dryBack = await c.batch({ ...back, DryRun: true }, manager.APIKey);
    expect(await snapshot()).toEqual(after);
    const realBack = await c.batch(back, manager.APIKey);
    expect({ ...realBack.body, DryRun: true }).toEqual(dryBack.body);
  });

  test("duplicate IDs are applied once", async () => {
    const before = await c.balance(kids[1].APIKey);
    const res = await c.batch({ IDs: [kids[1].ID, kids[1].ID], CreditGranted: 0.5 }, manager.APIKey);
    expect(res.body.summary.applied).toBe(1);
    expect(await c.balance(kids[1].APIKey)).toBe(before + 0.5);
  });
});

describe("concurrency: balances stay exact", () => {
  let router: TestRouter;
  let c: ReturnType<typeof client>;

  beforeAll(async () => {
    router = await startRouter();
    c = client(router);
  });
  afterAll(() => router.stop());

  test("50 concurrent batch-credit calls and concurrent rotations: the balances sum to what the owner minted", async () => {
    let minted = 0;
    const manager = await c.create({ Resources: MANAGER_RESOURCES, CreditGranted: 20 });
    minted += nanos(20);
    const kids: any[] = [];
    for (let i = 0; i < 6; i++) kids.push(await c.create({ CreditGranted: i % 2 ? 1 : 0 }, manager.APIKey));
    const unrelated: any[] = [];
    for (let i = 0; i < 10; i++) unrelated.push(await c.create({ CreditGranted: 1.25 }));
    minted += nanos(10 * 1.25);
    // Let the owner hold some credit too (taken back from one account).
    await c.grant(unrelated[0].ID, -0.25);

    const today = router.deps.clock.businessDate();
    const batches = Array.from({ length: 50 }, (_, i) => {
      const ids = [kids[i % 6].ID, kids[(i * 5 + 1) % 6].ID, ...(i % 7 === 0 ? [999_999, manager.ID] : [])];
      const credit = i % 3 === 2 ? -(0.75 + (i % 4) * 0.5) : 1 + (i % 5) * 0.35;
      return c.batch({ IDs: ids, CreditGranted: credit, ...(i % 10 === 9 ? { DryRun: true } : {}) }, manager.APIKey);
    });
    const rotations = unrelated.map((a) => c.api("/x-self", { key: a.APIKey, body: { confirm: `${today}-ROTATE-SELF` } }));
    const [batchReplies, rotationReplies] = await Promise.all([Promise.all(batches), Promise.all(rotations)]);

    let managerChange = 0;
    const kidChange = new Map<number, number>();
    let applied = 0;
    let skipped = 0;
    for (const reply of batchReplies) {
      expect(reply.status).toBe(200);
      if (reply.body.DryRun) continue;
      managerChange += nanos(reply.body.summary.ParentCreditChange);
      for (const r of reply.body.results) {
        if (r.status === "applied") {
          applied++;
          kidChange.set(r.ID, (kidChange.get(r.ID) ?? 0) + nanos(r.BalanceAfter - r.BalanceBefore));
        } else skipped++;
      }
      expect(nanos(reply.body.summary.ParentCreditChange) + nanos(reply.body.summary.ChildrenCreditChange)).toBe(0);
    }
    // The mix really exercised both outcomes.
    expect(applied).toBeGreaterThan(10);
    expect(skipped).toBeGreaterThan(5);

    // Each rotation worked: old key dead, new key alive.
    for (const [i, reply] of rotationReplies.entries()) {
      expect(reply.status).toBe(200);
      expect((await c.api("/dashboard/status", { key: unrelated[i].APIKey })).status).toBe(401);
      unrelated[i].APIKey = reply.body.APIKey;
    }

    // Every account's balance is what its own replies say.
    expect(nanos(await c.balance(manager.APIKey))).toBe(nanos(20) - nanos(3 * 1) + managerChange);
    for (const [i, kid] of kids.entries()) {
      expect(nanos(await c.balance(kid.APIKey))).toBe(nanos(i % 2 ? 1 : 0) + (kidChange.get(kid.ID) ?? 0));
      expect(await c.balance(kid.APIKey)).toBeGreaterThanOrEqual(0);
    }
    // And all live balances, owner included, sum to exactly what was minted (nothing is consumed yet).
    const all = await c.api("/x-dna?size=100");
    expect(all.body).toHaveLength(1 + 6 + 10);
    const total = all.body.reduce((sum: number, r: any) => sum + nanos(r.Balance), 0) + nanos(await c.balance());
    expect(total).toBe(minted);
    const file = databaseFile(router);
    const ledger = file.query<{ total: number }, []>("SELECT sum(remaining) AS total FROM credit_grants").get();
    file.close();
    expect(ledger?.total).toBe(minted);
  });
});

test("GET /dashboard/credit lists the grants behind the balance, soonest expiry first", async () => {
  const router = await startRouter();
  try {
    const created = await router.fetch("/x-users", { method: "POST", body: JSON.stringify({ Email: "grants@example.com", CreditGranted: 2 }) });
    const child = await created.json();
    await router.fetch(`/x-users/${child.ID}`, { method: "PUT", body: JSON.stringify({ CreditGranted: 3, Days: 7 }) });
    const credit = await (await router.fetch("/dashboard/credit", { key: child.APIKey })).json();
    expect(credit.object).toBe("credit");
    expect(credit.balance).toBe(5);
    expect(credit.grants.map((g: { remaining: number }) => g.remaining)).toEqual([3, 2]);
    expect(credit.grants[0].expires_at).not.toBeNull();
    expect(credit.grants[1].expires_at).toBeNull();
  } finally {
    await router.stop();
  }
});

import { describe, expect, test } from "bun:test";
import { usageRows } from "../helpers/keys.ts";
import { json, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, MANAGER_RESOURCES } from "../helpers/owner-ops.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Issue 13, item 13: an account's DailyLimit and HardLimit bound the spending of its
 * whole subtree (its own calls and every descendant's), like a team budget; rate limits
 * stay per account. A refusal names whose limit it is.
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
/** Every call reports 30 in, 30 out: (30 × 2 + 30 × 8) × 1000 nano-credits. */
const USAGE = { prompt_tokens: 30, completion_tokens: 30, total_tokens: 60 };
const COST = 300_000;
const BODY = { model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };

const scope = perTest();

async function start(delayMs = 0): Promise<{ router: TestRouter; upstream: MockUpstream }> {
  const { router, upstream } = await scope.gateway({ pricing: PRICING });
  upstream.route("POST", "/v1/chat/completions", async (req) => {
    if (delayMs) await Bun.sleep(delayMs);
    return json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: USAGE });
  });
  return { router, upstream };
}

const chat = (router: TestRouter, key: string) => api(router, "/v1/chat/completions", { key, body: BODY });

/** A manager with `limits`, and `children` accounts it created, each with plenty of credit. */
async function team(router: TestRouter, limits: Record<string, unknown>, children: number) {
  const manager = await createAccount(router, { CreditGranted: 100, Resources: MANAGER_RESOURCES, ...limits });
  const members = [];
  for (let i = 0; i < children; i++) members.push(await createAccount(router, { CreditGranted: 1 }, manager.key));
  return { manager, members };
}

const spentBy = async (router: TestRouter, ids: number[]) =>
  (await usageRows(router))
    .filter((r) => ids.includes(r.account_id))
    .reduce((sum, r) => sum + r.cost_nanos, 0);

describe("a manager's spend limits bound its subtree", () => {
  test("DailyLimit: five children in one burst spend no more than the manager's limit plus one call", async () => {
    const { router, upstream } = await start(20);
    const limit = 2.5 * COST;
    const { manager, members } = await team(router, { DailyLimit: limit / 1e9 }, 5);
    const results = await Promise.all(members.flatMap((m) => [chat(router, m.key), chat(router, m.key)]));
    const admitted = results.filter((r) => r.status === 200).length;
    const refused = results.filter((r) => r.status === 429);
    expect(admitted + refused.length).toBe(10);
    expect(admitted).toBeGreaterThanOrEqual(1);
    expect(upstream.requests).toHaveLength(admitted);
    // Each child inherited the manager's DailyLimit for itself too: a refusal is the child's own or the manager's.
    for (const r of refused) expect(r.body.error.code).toBe("daily_limit_reached");
    const ids = [manager.id, ...members.map((m) => m.id)];
    await waitFor(async () => (await usageRows(router)).filter((r) => ids.includes(r.account_id)).length === admitted || undefined);
    expect(await spentBy(router, ids)).toBeLessThanOrEqual(limit + COST);
    // Once settled, members spend one after another until the subtree reached the limit;
    // then a refusal that waiting a moment cannot cure: until the next business day.
    let after = await chat(router, members[4]!.key);
    for (let i = 0; i < 3 && after.status === 200; i++) after = await chat(router, members[4]!.key);
    expect(after.status).toBe(429);
    expect(await spentBy(router, ids)).toBeGreaterThanOrEqual(limit);
    expect(await spentBy(router, ids)).toBeLessThanOrEqual(limit + COST);
    expect(after.body.error.code).toBe("daily_limit_reached");
    expect(Number(after.headers.get("retry-after"))).toBeGreaterThan(60);
  });

  test("the manager's own calls count against its limit, and the children's against the manager's own calls", async () => {
    const { router } = await start();
    const { manager, members } = await team(router, { DailyLimit: (2.5 * COST) / 1e9 }, 2);
    expect((await chat(router, manager.key)).status).toBe(200);
    expect((await chat(router, members[0]!.key)).status).toBe(200);
    expect((await chat(router, members[1]!.key)).status).toBe(200);
    // 3 × COST spent by the subtree: the manager is refused for its own limit (no account named).
    const own = await chat(router, manager.key);
    expect(own.status).toBe(429);
    expect(own.body.error.code).toBe("daily_limit_reached");
    expect(own.body.error.message).not.toContain(`account ${manager.name}`);
    const child = await chat(router, members[1]!.key);
    expect(child.body.error.code).toBe("daily_limit_reached");
    expect(child.body.error.message).toContain(`account ${manager.name}`);
  });

  test("HardLimit over the month, with the refusal telling the SDKs not to retry", async () => {
    const { router } = await start();
    const { manager, members } = await team(router, { HardLimit: (1.5 * COST) / 1e9 }, 2);
    expect((await chat(router, members[0]!.key)).status).toBe(200);
    expect((await chat(router, members[1]!.key)).status).toBe(200);
    const refused = await chat(router, members[0]!.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("hard_limit_reached");
    expect(refused.body.error.message).toContain(`HardLimit of ${(1.5 * COST) / 1e9} credits of account ${manager.name}`);
    expect(refused.headers.get("x-should-retry")).toBe("false");
  });

  test("a grandchild spends against every ancestor's limit; a sibling subtree is untouched", async () => {
    const { router } = await start();
    const top = await createAccount(router, { CreditGranted: 100, Resources: MANAGER_RESOURCES, DailyLimit: (1.5 * COST) / 1e9 });
    const middle = await createAccount(router, { CreditGranted: 10, Resources: MANAGER_RESOURCES }, top.key);
    const leaf = await createAccount(router, { CreditGranted: 1 }, middle.key);
    const outsider = await createAccount(router, { CreditGranted: 1 });
    expect((await chat(router, top.key)).status).toBe(200);
    expect((await chat(router, leaf.key)).status).toBe(200);
    // The leaf spent one call of its own 1.5 (inherited); its grandparent's subtree spent two.
    const refused = await chat(router, leaf.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toContain(`account ${top.name}`);
    const between = await chat(router, middle.key);
    expect(between.status).toBe(429);
    expect(between.body.error.message).toContain(`account ${top.name}`);
    expect((await chat(router, outsider.key)).status).toBe(200);
  });

  test("a limit set or raised on the manager applies to its children's next call at once", async () => {
    const { router } = await start();
    const { manager, members } = await team(router, {}, 1);
    expect((await chat(router, members[0]!.key)).status).toBe(200);
    expect((await api(router, `/x-users/${manager.id}`, { method: "PUT", body: { DailyLimit: COST / 1e9 } })).status).toBe(200);
    expect((await chat(router, members[0]!.key)).body.error.code).toBe("daily_limit_reached");
    expect((await api(router, `/x-users/${manager.id}`, { method: "PUT", body: { DailyLimit: (3 * COST) / 1e9 } })).status).toBe(200);
    expect((await chat(router, members[0]!.key)).status).toBe(200);
  });

  test("rate limits stay per account: a manager's RPM does not count its children's calls", async () => {
    const { router } = await start();
    const { manager, members } = await team(router, { RPM: 1 }, 2);
    expect((await chat(router, members[0]!.key)).status).toBe(200);
    expect((await chat(router, members[1]!.key)).status).toBe(200);
    expect((await chat(router, manager.key)).status).toBe(200);
    expect((await chat(router, manager.key)).body.error.code).toBe("rpm_limit_reached");
  });
});

import { describe, expect, test } from "bun:test";
import { availableCredit, heldCredit, usageRows } from "../helpers/keys.ts";
import { json, sse, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, MANAGER_RESOURCES } from "../helpers/owner-ops.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Issue 13, item 14: deleting an account returns only what is really left (its balance
 * less what calls in flight reserved and charges not yet written); what those hold back
 * pays for them, and the rest reaches the parent when they end. Money is conserved.
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
/** 30 in + 30 out: (30 × 2 + 30 × 8) × 1000 nano-credits. */
const USAGE = { prompt_tokens: 30, completion_tokens: 30, total_tokens: 60 };
const COST = 300_000;
const BODY = { model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
const GRANT = 1_000_000_000;

const scope = perTest();

async function start(): Promise<{ router: TestRouter; upstream: MockUpstream }> {
  const { router, upstream } = await scope.gateway({ pricing: PRICING });
  return { router, upstream };
}

/** A manager and one child with 1 credit, given by the manager. */
async function family(router: TestRouter) {
  const parent = await createAccount(router, { CreditGranted: 10, Resources: MANAGER_RESOURCES });
  const child = await createAccount(router, { CreditGranted: GRANT / 1e9 }, parent.key);
  return { parent, child };
}

/** An account's ledger balance in nano-credits, read from the database (deleted accounts included). */
async function ledger(router: TestRouter, accountId: number): Promise<number> {
  await usageRows(router); // writes pending usage and its charges first
  // Every grant counts: none is unexpired-or-not at time 0 (none expires before then).
  return router.deps.store.credit.balance(accountId, 0);
}

describe("deleting an account returns only what is really left", () => {
  test("right after a call: the balance less its charge (written or not); no debt is left behind", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", "/v1/chat/completions", () => json({ id: "c", object: "chat.completion", created: 1, model: "acme-chat", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: USAGE }));
    const { parent, child } = await family(router);
    const parentBefore = await ledger(router, parent.id);
    expect((await api(router, "/v1/chat/completions", { key: child.key, body: BODY })).status).toBe(200);
    const deleted = await api(router, `/x-users/${child.id}`, { method: "DELETE", key: parent.key });
    expect(deleted.status).toBe(200);
    expect(Math.round(deleted.body.CreditReturned * 1e9)).toBe(GRANT - COST);
    await waitFor(async () => (await usageRows(router)).some((r) => r.account_id === child.id) || undefined);
    expect(await ledger(router, child.id)).toBe(0);
    expect(await ledger(router, parent.id)).toBe(parentBefore + GRANT - COST);
    const status = await api(router, "/dashboard/status", { key: parent.key });
    expect(Math.round(status.body.balance * 1e9)).toBe(parentBefore + GRANT - COST);
  });

  test("during a slow stream: the stream's reservation stays to pay for it, and the rest reaches the parent when it ends", async () => {
    const { router, upstream } = await start();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    upstream.route("POST", "/v1/chat/completions", async () => {
      await gate;
      return sse(
        [
          { id: "s", object: "chat.completion.chunk", created: 1, model: "acme-chat", choices: [{ index: 0, delta: { content: "ok" }, finish_reason: null }] },
          { id: "s", object: "chat.completion.chunk", created: 1, model: "acme-chat", choices: [], usage: USAGE },
        ],
        { done: true },
      );
    });
    const { parent, child } = await family(router);
    const parentBefore = await ledger(router, parent.id);
    const call = router.fetch("/v1/chat/completions", { method: "POST", key: child.key, body: JSON.stringify({ ...BODY, stream: true }) });
    await waitFor(() => upstream.requests.length === 1 || undefined);
    const reserved = await heldCredit(router, child.id);
    expect(reserved).toBeGreaterThan(COST);

    const deleted = await api(router, `/x-users/${child.id}`, { method: "DELETE", key: parent.key });
    expect(deleted.status).toBe(200);
    expect(Math.round(deleted.body.CreditReturned * 1e9)).toBe(GRANT - reserved);
    expect(await ledger(router, parent.id)).toBe(parentBefore + GRANT - reserved);

    release();
    const res = await call;
    expect(res.status).toBe(200);
    await res.text();
    // The call is charged its real cost (its row stays the deleted account's); the rest is the parent's.
    await waitFor(async () => (await ledger(router, child.id)) === 0 || undefined, 5000, "the deleted account's credit to move on");
    expect((await usageRows(router)).filter((r) => r.account_id === child.id).map((r) => r.cost_nanos)).toEqual([COST]);
    expect(await ledger(router, parent.id)).toBe(parentBefore + GRANT - COST);
    expect(await availableCredit(router, parent.id)).toBe(parentBefore + GRANT - COST - (await heldCredit(router, parent.id)));
  });

  test("a debt the account ran up is charged to the parent, not left on an account nobody can pay for", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", "/v1/chat/completions", () => json({ id: "c", object: "chat.completion", created: 1, model: "acme-chat", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: USAGE }));
    const parent = await createAccount(router, { CreditGranted: 10, Resources: MANAGER_RESOURCES });
    const child = await createAccount(router, { CreditGranted: COST / 2e9 }, parent.key);
    const parentBefore = await ledger(router, parent.id);
    // Something was left, so the call ran; it cost twice what was left.
    expect((await api(router, "/v1/chat/completions", { key: child.key, body: BODY })).status).toBe(200);
    expect(await ledger(router, child.id)).toBe(-COST / 2);
    const deleted = await api(router, `/x-users/${child.id}`, { method: "DELETE", key: parent.key });
    expect(deleted.body.CreditReturned).toBe(0);
    expect(await ledger(router, child.id)).toBe(0);
    expect(await ledger(router, parent.id)).toBe(parentBefore - COST / 2);
  });
});

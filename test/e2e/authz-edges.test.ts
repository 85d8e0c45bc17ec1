import { describe, expect, test } from "bun:test";
import { chatCompletion, json } from "../helpers/mock-upstream.ts";
import { api, createAccount, DEFAULT_RESOURCES, MANAGER_RESOURCES } from "../helpers/owner-ops.ts";
import { waitFor } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Authorization at the edges of the management API, the account tree and the objects
 * accounts make (black-box, HTTP only), from a review: the first group failed before
 * their fixes; the second holds what the review checked and found right.
 */

const scope = perTest();

const chatBody = (model: string) => ({ model, messages: [{ role: "user", content: "hi" }] });

describe("what the review found, fixed", () => {
  // docs/api.md, "Resource affinity": "Calls on the object, and a Responses call continuing a
  // `previous_response_id`, go only to that key; no other key is ever tried (502 when it fails).
  // Another account, or an id the router never created, gets the same 404 `object_not_found`
  // (`previous_response_not_found`)." POST /v1/responses/compact is a Responses call (docs/api.md,
  // Model endpoints) that takes `previous_response_id`, but the check only runs for /v1/responses.
  test("affinity: /v1/responses/compact may not continue (compact) a stored response of another account: 404, nothing sent", async () => {
    const { router, upstream } = await scope.gateway();
    upstream.route("POST", "/v1/responses", () =>
      json({ id: "resp_alice_1", object: "response", status: "completed", model: "gpt-x", output: [], usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }),
    );
    upstream.route("POST", "/v1/responses/compact", () => json({ id: "cmp_1", object: "response.compaction", output: [], usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }));
    const alice = await createAccount(router, { CreditGranted: 5 });
    const bob = await createAccount(router, { CreditGranted: 5 });
    const created = await api(router, "/v1/responses", { key: alice.key, body: { model: "gpt-x", input: "secret conversation" } });
    expect(created.status).toBe(200);
    // Sanity: the router does refuse Bob on /v1/responses itself.
    const continued = await api(router, "/v1/responses", { key: bob.key, body: { model: "gpt-x", input: "more", previous_response_id: created.body.id } });
    expect(continued.status).toBe(404);

    const sentBefore = upstream.requests.length;
    const compact = await api(router, "/v1/responses/compact", { key: bob.key, body: { model: "gpt-x", previous_response_id: created.body.id } });
    expect({ status: compact.status, code: compact.body?.error?.code, forwarded: upstream.requests.length - sentBefore }).toEqual({
      status: 404,
      code: "previous_response_not_found",
      forwarded: 0,
    });
  });

  // spec 2.2: "Permissions granted can never exceed the caller's own available scope."
  // docs/api.md, Validation: "ModelLimits: ... A child keeps each of the caller's own entries (at or
  // below its values)"; Patterns: "among patterns the one with more literal characters wins".
  // A child pattern the caller's pattern does not cover when read literally ("*pt-4o" vs "gpt-*") is
  // capped only by the caller's account-level limit (none here), yet it is the more specific match
  // for gpt-4o, so the child's gpt-4o limit overrides the caller's entry it "kept".
  test("grants: a child's ModelLimits pattern more specific than its manager's entry may not lift that entry's limit for the models both cover", async () => {
    const { router, upstream } = await scope.gateway();
    upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model));
    const manager = await createAccount(router, { CreditGranted: 5, Resources: MANAGER_RESOURCES, ModelLimits: { "gpt-*": { rpm: 1 } } });
    const created = await api(router, "/x-users", {
      key: manager.key,
      body: { Email: `esc-${Date.now()}@example.com`, CreditGranted: 1, ModelLimits: { "gpt-*": { rpm: 1 }, "*pt-4o": { rpm: 1000 } } },
    });
    const calls: number[] = [];
    if (created.status === 201) {
      // What the grant means in practice: the child calls gpt-4o three times within a minute,
      // where its manager itself may make one call a minute to any gpt-* model.
      for (let i = 0; i < 3; i++) calls.push((await api(router, "/v1/chat/completions", { key: created.body.APIKey, body: chatBody("gpt-4o") })).status);
    }
    expect({ status: created.status, param: created.body?.error?.param, childCalls: calls }).toEqual({ status: 400, param: "ModelLimits", childCalls: [] });
  });

  // spec 3: "Rotation via POST /x-self invalidates the old Key immediately"; spec 5.8.
  // docs/api.md, Realtime: "A session opened with a client secret is bound to the account that
  // minted it and dies the same way when that account's key is rotated", and "An `ek_…` the
  // router did not issue is 401". Live ek sessions are killed on rotation, but the same ek opens
  // a new session afterwards: the secret minted with the rotated key outlives it.
  test("realtime: a client secret dies with the key that minted it (a rotation)", async () => {
    const { router, upstream } = await scope.gateway();
    upstream.route("POST", "/v1/realtime/client_secrets", () => json({ value: "ek_review_0001", expires_at: 1_900_000_000 }));
    const account = await createAccount(router, { CreditGranted: 5 });
    const minted = await api(router, "/v1/realtime/client_secrets", { key: account.key, body: { session: { type: "realtime", model: "gpt-rt" } } });
    expect(minted.status).toBe(200);
    // Without an Upgrade header the handshake runs to its end: 426 means the secret authenticated.
    expect((await router.fetch("/v1/realtime?model=gpt-rt", { key: "ek_review_0001" })).status).toBe(426);
    const rotated = await api(router, "/x-self", { key: account.key, body: { confirm: `${router.deps.clock.businessDate()}-ROTATE-SELF` } });
    expect(rotated.status).toBe(200);
    expect((await router.fetch("/v1/realtime?model=gpt-rt", { key: account.key })).status).toBe(401);
    const after = await router.fetch("/v1/realtime?model=gpt-rt", { key: "ek_review_0001" });
    expect(after.status).toBe(401);
  });

  // docs/api.md, RESOURCES: "When set, every authenticated request whose path is outside it is
  // refused with 403 resource_not_allowed ... for every account, owners included"; "Both lists
  // must allow a path; the system list cannot widen an account's Resources". The request log
  // swaps /x-requests for /dashboard/requests before the *system* check too, so a manager reads
  // its subtree's log that the system allowlist closes (the owner itself is refused).
  test("system RESOURCES: /x-requests outside the allowlist is refused to managers too (the dashboard stands in only for an account's own Resources)", async () => {
    const { router, upstream } = await scope.gateway();
    upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model));
    const manager = await createAccount(router, { CreditGranted: 5, Resources: MANAGER_RESOURCES });
    const child = await createAccount(router, { CreditGranted: 1 }, manager.key);
    const call = await api(router, "/v1/chat/completions", { key: child.key, body: chatBody("m") });
    expect(call.status).toBe(200);
    const requestId = call.headers.get("x-request-id")!;
    await waitFor(async () => (await api(router, `/x-requests/${requestId}`)).status === 200, 5000, "the log row");

    expect((await api(router, "/x-config", { method: "PUT", body: { RESOURCES: "/v1/*,/dashboard/*" } })).status).toBe(200);
    expect((await api(router, "/x-requests")).status).toBe(403); // the owner is refused
    const list = await api(router, "/x-requests", { key: manager.key });
    const one = await api(router, `/x-requests/${requestId}`, { key: manager.key });
    expect({ list: list.status, one: one.status }).toEqual({ list: 403, one: 403 });
  });
});

describe("what the review checked and found right", () => {
  // BYOK: another tenant's accounts, calls, notices, logs and bills answer 404 / nothing (docs/api.md, BYOK).
  test("BYOK: an owner reaches nothing of another tenant through ids, names, emails or filters", async () => {
    const upstream = scope.upstream();
    upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model));
    const router = await scope.router({ config: { byok: true, signup: true, allowPrivateUpstreams: true } });
    const keyA = router.ownerKey;
    const signup = await api(router, "/x-signup", { key: null, body: { Email: "review-b@tenant-b.example" } });
    expect(signup.status).toBe(201);
    const keyB = signup.body.APIKey as string;
    for (const key of [keyA, keyB]) {
      await api(router, "/x-config", { method: "PUT", key, body: { PRICING: { ChatPricing: { "*": { InputText: 0, OutputText: 0 } } } } });
      const added = await api(router, "/x-keys", { key, body: { Provider: `${upstream.url}/v1`, SecretKey: `secret-${key.slice(-6)}-0123456789abcdef`, Level: 1, Status: true } });
      expect(added.status).toBe(201);
    }
    const managerA = await createAccount(router, { CreditGranted: 5, Resources: MANAGER_RESOURCES }, keyA);
    const childA = await createAccount(router, { CreditGranted: 1 }, managerA.key);
    const call = await api(router, "/v1/chat/completions", { key: childA.key, body: chatBody("m") });
    const requestId = call.headers.get("x-request-id")!;
    const notice = await api(router, "/x-news", { key: keyA, body: { title: "t", content: "c", target: managerA.id } });
    await waitFor(async () => (await api(router, `/x-requests/${requestId}`, { key: keyA })).status === 200, 5000, "the log row");
    const notFound: Array<[string, string, unknown?]> = [
      ["GET", `/x-route?model=m&account=${managerA.email}`],
      ["GET", `/x-requests?account=${childA.id}`],
      ["GET", `/x-requests/${requestId}`],
      ["GET", `/x-bill?user=${managerA.name}`],
      ["POST", "/x-news", { title: "t", content: "c", target: managerA.email }],
      ["DELETE", `/x-news/${notice.body.id}`],
      ["GET", `/x-users/${managerA.id}`],
      ["GET", `/x-dna/${childA.email}`],
      ["PUT", `/x-users/${childA.id}`, { Alias: "x" }],
      ["DELETE", `/x-users/${childA.id}`],
    ];
    for (const [method, path, body] of notFound) expect([path, (await api(router, path, { method, key: keyB, body })).status]).toEqual([path, 404]);
    const batch = await api(router, "/x-users/batch-credit", { key: keyB, body: { IDs: [managerA.id, childA.id], CreditGranted: 1 } });
    expect(batch.body.results.map((r: any) => r.status)).toEqual(["skipped", "skipped"]);
    expect((await api(router, `/dashboard/logs?target=${managerA.id}`, { key: keyB })).body.total).toBe(0);
    expect((await api(router, "/x-requests", { key: keyB })).body).toEqual([]);
  });

  // A manager sees its subtree's calls without key ids; demoted, it keeps only its own view.
  test("a manager demoted while its console is open loses the subtree view at its next request", async () => {
    const { router, upstream } = await scope.gateway();
    upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model));
    const manager = await createAccount(router, { CreditGranted: 5, Resources: `${MANAGER_RESOURCES},/x-bill,/x-route` });
    const child = await createAccount(router, { CreditGranted: 1 }, manager.key);
    const call = await api(router, "/v1/chat/completions", { key: child.key, body: chatBody("m") });
    const requestId = call.headers.get("x-request-id")!;
    await waitFor(async () => (await api(router, `/x-requests/${requestId}`)).status === 200, 5000, "the log row");
    const seen = await api(router, `/x-requests/${requestId}`, { key: manager.key });
    expect(seen.status).toBe(200);
    expect(seen.body.attempts[0]).not.toHaveProperty("key_id");
    expect((await api(router, "/x-requests?account=1", { key: manager.key })).status).toBe(404);
    expect((await api(router, `/x-bill?user=${manager.id}`, { key: manager.key })).status).toBe(404);

    expect((await api(router, `/x-users/${manager.id}`, { method: "PUT", body: { Resources: DEFAULT_RESOURCES } })).status).toBe(200);
    expect((await api(router, `/x-requests/${requestId}`, { key: manager.key })).status).toBe(404);
    expect((await api(router, `/x-requests?account=${child.id}`, { key: manager.key })).status).toBe(404);
    expect((await api(router, "/x-requests", { key: manager.key })).body).toEqual([]);
    for (const path of ["/x-dna", "/x-bill", `/x-route?model=m&account=${child.id}`]) expect((await api(router, path, { key: manager.key })).status).toBe(403);
  });

  // A deleted account's key is refused at once; its id, name and email no longer resolve.
  test("a deleted account's key is 401 and the account resolves nowhere", async () => {
    const router = await scope.router();
    const manager = await createAccount(router, { CreditGranted: 5, Resources: MANAGER_RESOURCES });
    const child = await createAccount(router, {}, manager.key);
    expect((await api(router, "/dashboard/status", { key: child.key })).status).toBe(200);
    expect((await api(router, `/x-users/${child.id}`, { method: "DELETE", key: manager.key })).status).toBe(200);
    expect((await api(router, "/dashboard/status", { key: child.key })).status).toBe(401);
    for (const id of [String(child.id), child.name, child.email]) {
      expect((await api(router, `/x-dna/${id}`, { key: manager.key })).status).toBe(404);
      expect((await api(router, `/x-requests?account=${encodeURIComponent(id)}`, { key: manager.key })).status).toBe(404);
    }
  });
});

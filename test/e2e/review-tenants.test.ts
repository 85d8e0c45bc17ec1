import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// Two tenants of one BYOK deployment, A (the first owner) and B (signed up), each with
// one key on its own upstream and a child account. What one tenant names of the other
// (a request id, a key id, an account id, an object id, an Idempotency-Key, a Level, a
// model limit) must behave exactly as something that does not exist.
let router: TestRouter;
let upA: MockUpstream;
let upB: MockUpstream;
let keyA: string;
let keyB: string;
let providerA: number;
let childA: { ID: number; APIKey: string };
let childB: { ID: number; APIKey: string };

const call = (key: string, path: string, init: RequestInit = {}) => router.fetch(path, { ...init, key });
const post = (key: string, path: string, body: unknown, headers: Record<string, string> = {}) => call(key, path, { method: "POST", body: JSON.stringify(body), headers });
const chat = (model: string) => ({ id: "c", object: "chat.completion", created: 1, model, choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
const chatOf = (key: string, model: string) => post(key, "/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }] });

beforeAll(async () => {
  upA = startMockUpstream();
  upB = startMockUpstream();
  for (const up of [upA, upB]) up.route("POST", "/v1/chat/completions", (req) => json(chat(req.json.model)));
  router = await startRouter({ config: { byok: true, signup: true, allowPrivateUpstreams: true } });
  keyA = router.ownerKey;
  const signup = await router.fetch("/x-signup", { method: "POST", key: null, body: JSON.stringify({ Email: "owner@tenant-b.example" }) });
  keyB = (await signup.json()).APIKey;
  const free = { PRICING: { ChatPricing: { "*": { InputText: 0, OutputText: 0 } } } };
  for (const [key, up] of [[keyA, upA], [keyB, upB]] as const) {
    expect((await call(key, "/x-config", { method: "PUT", body: JSON.stringify(free) })).status).toBe(200);
    const created = await post(key, "/x-keys", { Provider: `${up.url}/v1`, SecretKey: `secret-${key.slice(-8)}-0123456789`, Level: 1, Status: true });
    expect(created.status).toBe(201);
    if (key === keyA) providerA = (await created.json()).ID;
  }
  childA = await (await post(keyA, "/x-users", { Email: "child@tenant-a.example", CreditGranted: 5 })).json();
  childB = await (await post(keyB, "/x-users", { Email: "child@tenant-b.example", CreditGranted: 5 })).json();
});
afterAll(async () => {
  await router.stop();
  await Promise.all([upA.stop(), upB.stop()]);
});

describe("the request log and route explanation name nothing of the other tenant", () => {
  test("another tenant's request id, key, Level and account are as if they did not exist", async () => {
    const answered = await chatOf(childA.APIKey, "m-log-a");
    expect(answered.status).toBe(200);
    const requestId = answered.headers.get("x-request-id")!;
    await router.deps.usageRecorder.flush();
    expect((await call(keyA, `/x-requests/${requestId}`)).status).toBe(200);
    const other = await call(keyB, `/x-requests/${requestId}`);
    expect(other.status).toBe(404);
    const byKey = await call(keyB, `/x-requests?key_id=${providerA}`);
    expect(byKey.status).toBe(200);
    expect(await byKey.json()).toEqual([]);
    expect(byKey.headers.get("x-total-count")).toBe("0");
    expect((await call(keyB, `/x-requests?account=${childA.ID}`)).status).toBe(404);
    expect((await call(keyB, `/x-requests?request_id=${requestId}`)).headers.get("x-total-count")).toBe("0");
    expect((await call(keyB, `/x-route?model=m&account=${childA.ID}`)).status).toBe(404);
  });
});

describe("keys, accounts and notices of another tenant cannot be reached", () => {
  test("testing or waking another tenant's key is 404 and sends nothing", async () => {
    const before = upA.requests.length;
    for (const action of ["test", "wake"]) expect((await call(keyB, `/x-keys/${providerA}/${action}`, { method: "POST" })).status).toBe(404);
    expect(upA.requests.length).toBe(before);
  });

  test("a credit batch naming another tenant's account skips it and moves nothing", async () => {
    const before = (await (await call(keyA, `/x-dna/${childA.ID}`)).json()).CreditGranted;
    const batch = await post(keyB, "/x-users/batch-credit", { IDs: [childA.ID, childB.ID], CreditGranted: 1 });
    expect(batch.status).toBe(200);
    const results = (await batch.json()).results;
    expect(results.find((r: { ID: number }) => r.ID === childA.ID).status).toBe("skipped");
    expect(results.find((r: { ID: number }) => r.ID === childB.ID).status).toBe("applied");
    expect((await (await call(keyA, `/x-dna/${childA.ID}`)).json()).CreditGranted).toBe(before);
  });

  test("another tenant's notice cannot be deleted, nor a notice aimed at its account", async () => {
    const notice = await (await post(keyA, "/x-news", { title: "A's", content: "A's notice" })).json();
    expect((await call(keyB, `/x-news/${notice.id}`, { method: "DELETE" })).status).toBe(404);
    expect((await post(keyB, "/x-news", { title: "t", content: "c", target: childA.ID })).status).toBe(404);
    const listB = await call(keyB, "/x-news");
    expect(listB.headers.get("x-total-count")).toBe("0");
    expect((await (await call(childA.APIKey, "/dashboard/news")).json()).data.map((n: { id: number }) => n.id)).toContain(notice.id);
  });

  test("an Idempotency-Key another tenant used runs afresh", async () => {
    const body = { title: "same", content: "same body" };
    const first = await post(keyA, "/x-news", body, { "idempotency-key": "shared-key-1" });
    expect(first.status).toBe(201);
    const second = await post(keyB, "/x-news", body, { "idempotency-key": "shared-key-1" });
    expect(second.status).toBe(201);
    expect(second.headers.get("idempotent-replayed")).toBeNull();
    expect((await second.json()).id).not.toBe((await first.json()).id);
  });
});

describe("limits and switch-over are counted per tenant", () => {
  test("MODEL_LIMITS of the same model in both tenants count each tenant's calls only", async () => {
    const limits = { MODEL_LIMITS: { "m-limited": { rpm: 1 } } };
    for (const key of [keyA, keyB]) expect((await call(key, "/x-config", { method: "PUT", body: JSON.stringify(limits) })).status).toBe(200);
    expect((await chatOf(childA.APIKey, "m-limited")).status).toBe(200);
    expect((await chatOf(childA.APIKey, "m-limited")).status).toBe(429);
    expect((await chatOf(childB.APIKey, "m-limited")).status).toBe(200);
  });
});

describe("upstream objects", () => {
  test("a thread made through tenant A's key is not reachable from tenant B", async () => {
    upA.route("POST", "/v1/threads", () => json({ id: "thread_of_a", object: "thread", created_at: 1 }));
    upA.route("GET", "/v1/threads/thread_of_a", () => json({ id: "thread_of_a", object: "thread", created_at: 1 }));
    expect((await post(childA.APIKey, "/v1/threads", {})).status).toBe(200);
    const before = upA.requests.length;
    expect((await call(keyB, "/v1/threads/thread_of_a")).status).toBe(404);
    expect((await call(childB.APIKey, "/v1/threads/thread_of_a")).status).toBe(404);
    expect(upA.requests.length).toBe(before);
    expect((await call(childA.APIKey, "/v1/threads/thread_of_a")).status).toBe(200);
  });

  test("two tenants' upstreams numbering objects alike: each tenant reaches its own", async () => {
    for (const [up, who] of [[upA, "a"], [upB, "b"]] as const) {
      up.once(() => json({ id: "thread_1", object: "thread", created_at: 1, metadata: { who } }));
      up.route("GET", "/v1/threads/thread_1", () => json({ id: "thread_1", object: "thread", created_at: 1, metadata: { who } }));
    }
    expect((await post(childA.APIKey, "/v1/threads", {})).status).toBe(200);
    expect((await post(childB.APIKey, "/v1/threads", {})).status).toBe(200);
    const own = await call(childB.APIKey, "/v1/threads/thread_1");
    expect(own.status).toBe(200);
    expect((await own.json()).metadata.who).toBe("b");
    expect((await (await call(childA.APIKey, "/v1/threads/thread_1")).json()).metadata.who).toBe("a");
    // B deleting its thread_1 ends its own binding only.
    upB.route("DELETE", "/v1/threads/thread_1", () => json({ id: "thread_1", object: "thread.deleted", deleted: true }));
    expect((await call(childB.APIKey, "/v1/threads/thread_1", { method: "DELETE" })).status).toBe(200);
    expect((await call(childB.APIKey, "/v1/threads/thread_1")).status).toBe(404);
    expect((await (await call(childA.APIKey, "/v1/threads/thread_1")).json()).metadata.who).toBe("a");
  });
});

describe("switch-over, rotations and deletions stay inside their tenant", () => {
  test("Level 3 switching over in tenant A leaves tenant B's Level 3 where it was", async () => {
    const failing = startMockUpstream();
    failing.route("POST", "/v1/chat/completions", () => json({ error: { message: "down", type: "server_error" } }, 500));
    try {
      const routing = { LEVEL_MAPPER: "m-sw*=3", SWITCH_OVER: "3=4" };
      for (const [key, first, up] of [[keyA, failing, upA], [keyB, upB, upB]] as const) {
        expect((await call(key, "/x-config", { method: "PUT", body: JSON.stringify(routing) })).status).toBe(200);
        for (const [level, target] of [[3, first], [4, up]] as const) {
          expect((await post(key, "/x-keys", { Provider: `${target.url}/v1`, SecretKey: `sk-level-${level}-${key.slice(-6)}-0123456789`, Level: level, Status: true, NoSleep: true })).status).toBe(201);
        }
      }
      for (let i = 0; i < 7; i++) await chatOf(childA.APIKey, "m-sw");
      const levelsOf = async (key: string) => (await (await call(key, "/x-route?model=m-sw")).json()).levels.map((l: { level: number; switched: boolean }) => [l.level, l.switched]);
      expect(await levelsOf(keyA)).toEqual([[3, true], [4, false]]);
      expect(await levelsOf(keyB)).toEqual([[3, false], [4, false]]);
    } finally {
      await failing.stop();
    }
  });

  test("an owner rotating its key, resetting its configuration and deleting its keys leaves the other tenant serving", async () => {
    const rotated = await post(keyA, "/x-self", { confirm: `${new Date().toISOString().slice(0, 10)}-ROTATE-SELF` });
    expect(rotated.status).toBe(200);
    keyA = (await rotated.json()).APIKey;
    expect((await call(keyA, "/x-config", { method: "DELETE", body: JSON.stringify({ keys: ["MODEL_LIMITS", "SWITCH_OVER"] }) })).status).toBe(200);
    for (const key of await (await call(keyA, "/x-keys?fields=summary")).json()) {
      expect((await call(keyA, `/x-keys/${key.ID}?force=true`, { method: "DELETE" })).status).toBe(200);
    }
    expect((await chatOf(childB.APIKey, "m-after")).status).toBe(200);
    expect((await (await call(keyB, "/x-config")).json()).configs.MODEL_LIMITS).toEqual({ "m-limited": { rpm: 1 } });
    expect((await call(keyB, "/x-keys?fields=summary")).headers.get("x-total-count")).toBe("3");
  });
});

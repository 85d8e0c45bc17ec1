import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { nanosToCredits } from "../../src/accounts/records.ts";
import { createManualClock } from "../../src/core/clock.ts";
import { startRequestLogPruner } from "../../src/metering/request-log-retention.ts";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, slowErrorBody, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, MANAGER_RESOURCES, type CreatedAccount } from "../helpers/owner-ops.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";

/**
 * Issue 17, the request log: every model call is kept with its attempts and figures,
 * read back through GET /x-requests and /x-requests/{id} within the caller's scope.
 */

const PRICING = { ChatPricing: { "*": { InputText: 2, OutputText: 8 } } };

const answer = (model: string) =>
  json({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
  });

let router: TestRouter;
let upstream: MockUpstream;
let manager: CreatedAccount;
let child: CreatedAccount;
let plain: CreatedAccount;

/** One chat call as `key`; returns the X-Request-Id and the status. */
async function call(key: string, model = "gpt-log", userAgent = "request-log-test/1.0"): Promise<{ id: string; status: number }> {
  const res = await router.fetch("/v1/chat/completions", {
    method: "POST",
    key,
    headers: { "content-type": "application/json", "user-agent": userAgent },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
  await res.text();
  return { id: res.headers.get("x-request-id")!, status: res.status };
}

/** Waits until the recorder wrote what was settled. */
const flushed = () => router.deps.usageRecorder.flush();

beforeAll(async () => {
  router = await startRouter({ pricing: PRICING });
  upstream = startMockUpstream().route("POST", "/v1/chat/completions", (request) => answer((request.json as { model: string }).model));
  await addKey(router, { provider: `${upstream.url}/v1`, name: "first", noSleep: true });
  await addKey(router, { provider: `${upstream.url}/v1`, name: "second", noSleep: true });
  manager = await createAccount(router, { CreditGranted: 10, Resources: MANAGER_RESOURCES });
  child = await createAccount(router, { CreditGranted: 1 }, manager.key);
  plain = await createAccount(router, { CreditGranted: 1 });
});

afterAll(async () => {
  await upstream.stop();
  await router.stop();
});

describe("a call's record", () => {
  test("a failover keeps both attempts: the first 500 with a redacted message, the second answered; tokens, cost, ttfb, IP and UA", async () => {
    // The failing upstream echoes the credential it was sent: the log keeps none of it.
    upstream.once((request) => json({ error: { message: `boom; you sent ${request.headers.get("authorization")} with sk-proj-abcdefghijklmnop1234` } }, 500));
    const { id, status } = await call(router.ownerKey);
    expect(status).toBe(200);
    expect(id).toMatch(/^req_/);
    await flushed();
    const res = await api(router, `/x-requests/${id}`);
    expect(res.status).toBe(200);
    const record = res.body;
    expect(record).toMatchObject({
      request_id: id,
      account: { id: 1 },
      family: "openai",
      endpoint: "/v1/chat/completions",
      requested_model: "gpt-log",
      effective_model: "gpt-log",
      stream: false,
      status: 200,
      tokens: { prompt: 11, completion: 7, cache_read: 0, cache_write: 0, reasoning: 0 },
      source: "upstream",
      client_ip: "127.0.0.1",
      user_agent: "request-log-test/1.0",
    });
    expect(Date.parse(record.time)).toBeGreaterThan(Date.now() - 60_000);
    expect(record.attempts).toHaveLength(2);
    const [failed, answered] = record.attempts;
    expect(failed).toMatchObject({ level: 1, status: 500, error: "status", answered: false });
    expect(failed.message).toContain("boom");
    expect(failed.message).toContain("[redacted");
    expect(failed.message).not.toContain("sk-upstream-test");
    expect(failed.message).not.toContain("abcdefghijklmnop1234");
    expect(answered).toMatchObject({ level: 1, status: 200, error: null, answered: true });
    expect(new Set([failed.key_name, answered.key_name])).toEqual(new Set(["first", "second"]));
    expect(failed.key_id).not.toBe(answered.key_id);
    expect(typeof record.ttfb_ms).toBe("number");
    expect(record.ttfb_ms).toBeLessThanOrEqual(record.duration_ms + 1);
    // The cost is the usage row's charge.
    const row = (await usageRows(router)).find((r) => r.request_id === id && r.status === 200)!;
    expect(row.cost_nanos).toBeGreaterThan(0);
    expect(record.cost).toBe(nanosToCredits(row.cost_nanos));
  });

  test("a stream is kept when it ends: stream flag, its usage, the time to its first event within its duration", async () => {
    const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-stream", choices: [{ index: 0, delta, finish_reason: null }], ...extra });
    upstream.once(() =>
      sse([chunk({ role: "assistant", content: "he" }), chunk({ content: "llo" }), { id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-stream", choices: [], usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } }], { done: true, delayMs: 30 }),
    );
    const res = await router.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-stream", stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    const id = res.headers.get("x-request-id")!;
    expect(await res.text()).toContain("[DONE]");
    const record = await waitFor(async () => {
      await flushed();
      const got = await api(router, `/x-requests/${id}`);
      return got.status === 200 ? got.body : undefined;
    }, 5000, "the stream's record");
    expect(record).toMatchObject({ stream: true, status: 200, tokens: { prompt: 5, completion: 3 }, source: "upstream" });
    expect(record.attempts).toHaveLength(1);
    expect(record.attempts[0]).toMatchObject({ status: 200, answered: true, translated_to: null });
    // Three events 30 ms apart: the first arrived well before the stream ended.
    expect(record.ttfb_ms).toBeLessThan(record.duration_ms);
    expect(record.duration_ms).toBeGreaterThanOrEqual(50);
  });

  test("a stream the client aborts midway is kept as 499, with its attempt answered and the usage the upstream reported", async () => {
    const chunk = (delta: Record<string, unknown>) => ({ id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-abort", choices: [{ index: 0, delta, finish_reason: null }] });
    const usage = { id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-abort", choices: [], usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 } };
    upstream.once(() => sse([chunk({ role: "assistant", content: "a" }), chunk({ content: "b" }), chunk({ content: "c" }), chunk({ content: "d" }), usage], { done: true, delayMs: 40 }));
    const controller = new AbortController();
    const res = await router.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-abort", stream: true, messages: [{ role: "user", content: "hi" }] }),
      signal: controller.signal,
    });
    const id = res.headers.get("x-request-id")!;
    // The first event arrives, then the client goes away.
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    await reader.cancel().catch(() => {});
    const record = await waitFor(async () => {
      await flushed();
      const got = await api(router, `/x-requests/${id}`);
      return got.status === 200 ? got.body : undefined;
    }, 5000, "the aborted stream's record");
    expect(record).toMatchObject({ stream: true, status: 499 });
    expect(record.attempts).toHaveLength(1);
    expect(record.attempts[0]).toMatchObject({ answered: true });
    // The router drained the upstream for its usage: the call is charged for what was generated.
    expect(record.tokens).toMatchObject({ prompt: 9, completion: 4 });
    expect(record.source).toBe("upstream");
  });

  test("a failed attempt's slow error body does not hold the failover, and its message still reaches the log", async () => {
    // Headers and the body's first bytes at once, the rest of the body 600 ms later.
    upstream.once(() => slowErrorBody(600));
    const started = performance.now();
    const { id, status } = await call(router.ownerKey, "gpt-slow-error");
    const took = performance.now() - started;
    expect(status).toBe(200);
    // The next key answered without waiting for the first one's body.
    expect(took).toBeLessThan(450);
    const record = await waitFor(async () => {
      await flushed();
      const got = await api(router, `/x-requests/${id}`);
      return got.status === 200 ? got.body : undefined;
    }, 5000, "the call's record");
    expect(record.attempts).toHaveLength(2);
    expect(record.attempts[0]).toMatchObject({ status: 503, answered: false, message: expect.stringContaining("overloaded, slowly") });
    expect(record.attempts[1]).toMatchObject({ status: 200, answered: true });
    // Its duration is the call's, not the call's plus the body's read.
    expect(record.duration_ms).toBeLessThan(450);
  });

  test("a call that fails on every key is kept with its status and attempts", async () => {
    upstream.once(() => json({ error: { message: "down" } }, 503)).once(() => json({ error: { message: "down" } }, 503)).once(() => json({ error: { message: "down" } }, 503));
    const { id, status } = await call(router.ownerKey, "gpt-failing");
    expect(status).toBeGreaterThanOrEqual(500);
    await flushed();
    const record = (await api(router, `/x-requests/${id}`)).body;
    expect(record.status).toBe(status);
    expect(record.attempts.length).toBeGreaterThanOrEqual(2);
    expect(record.attempts.every((a: { status: number; answered: boolean }) => a.status === 503 && !a.answered)).toBe(true);
    expect(record.ttfb_ms).toBeNull();
  });
});

describe("listing", () => {
  let ids: string[] = [];
  beforeAll(async () => {
    ids = [];
    // Calls starting in one millisecond have no order between them: each starts in a later one.
    const afterThisMillisecond = async () => {
      const now = Date.now();
      await waitFor(() => Date.now() > now, 1000, "the next millisecond");
    };
    for (const [key, model] of [[plain.key, "list-a"], [plain.key, "list-b"], [plain.key, "list-a"], [child.key, "list-c"]] as const) {
      await afterThisMillisecond();
      ids.push((await call(key, model)).id);
    }
    await flushed();
  });

  test("newest first, paged with the four pagination headers", async () => {
    const first = await api(router, "/x-requests?size=2");
    expect(first.status).toBe(200);
    expect(first.body.map((r: { request_id: string }) => r.request_id)).toEqual([ids[3]!, ids[2]!]);
    const total = Number(first.headers.get("x-total-count"));
    expect(total).toBeGreaterThanOrEqual(6);
    expect(first.headers.get("x-total-pages")).toBe(String(Math.ceil(total / 2)));
    expect(first.headers.get("x-page")).toBe("1");
    expect(first.headers.get("x-per-page")).toBe("2");
    const second = await api(router, "/x-requests?size=2&page=2");
    expect(second.body.map((r: { request_id: string }) => r.request_id)).toEqual([ids[1]!, ids[0]!]);
  });

  test("filters: account (id, name or email), model, status, key_id, level, since, until, request_id", async () => {
    const listed = async (query: string) => {
      const res = await api(router, `/x-requests?${query}`);
      expect(res.status).toBe(200);
      return res.body.map((r: { request_id: string }) => r.request_id) as string[];
    };
    const own = [ids[2]!, ids[1]!, ids[0]!];
    expect(await listed(`account=${plain.id}`)).toEqual(own);
    expect(await listed(`account=${encodeURIComponent(plain.email)}`)).toEqual(own);
    expect(await listed(`account=${encodeURIComponent(plain.name)}`)).toEqual(own);
    expect(await listed("model=list-a")).toEqual([ids[2]!, ids[0]!]);
    expect(await listed(`model=list-b&request_id=${ids[1]!}`)).toEqual([ids[1]!]);
    expect(await listed(`request_id=${ids[0]!}`)).toEqual([ids[0]!]);
    expect((await listed("status=2xx")).slice(0, 4)).toEqual([ids[3]!, ids[2]!, ids[1]!, ids[0]!]);
    expect(await listed("status=5xx&model=list-a")).toEqual([]);
    expect(await listed("status=5xx&model=gpt-failing")).toHaveLength(1);
    expect((await listed("level=1")).slice(0, 4)).toEqual([ids[3]!, ids[2]!, ids[1]!, ids[0]!]);
    expect(await listed("level=2")).toEqual([]);
    const keyOfFirst = (await api(router, `/x-requests/${ids[0]!}`)).body.attempts[0].key_id;
    expect(await listed(`key_id=${keyOfFirst}&account=${plain.id}`)).toContain(ids[0]!);
    expect(await listed("key_id=9999")).toEqual([]);
    const today = new Date().toISOString().slice(0, 10);
    expect((await listed(`since=${today}&until=${today}`)).slice(0, 4)).toEqual([ids[3]!, ids[2]!, ids[1]!, ids[0]!]);
    expect(await listed("until=2020-01-01")).toEqual([]);
    expect(await listed(`since=${new Date(Date.now() + 3_600_000).toISOString()}`)).toEqual([]);
  });

  test("scopes: a manager sees its subtree without key ids; an account sees only its own, with Resources that allow /dashboard/*", async () => {
    const managed = await api(router, "/x-requests", { key: manager.key });
    expect(managed.status).toBe(200);
    expect(managed.body.map((r: { request_id: string }) => r.request_id)).toEqual([ids[3]!]);
    const attempt = managed.body[0].attempts[0];
    expect(attempt).toMatchObject({ level: 1, status: 200, answered: true });
    expect(attempt.key_id).toBeUndefined();
    expect(attempt.key_name).toBeUndefined();
    expect((await api(router, `/x-requests/${ids[3]!}`, { key: manager.key })).body.attempts[0].key_id).toBeUndefined();
    expect((await api(router, `/x-requests/${ids[0]!}`, { key: manager.key })).status).toBe(404);
    expect((await api(router, `/x-requests?account=${plain.id}`, { key: manager.key })).status).toBe(404);

    const mine = await api(router, "/x-requests", { key: plain.key });
    expect(mine.status).toBe(200);
    expect(mine.body.map((r: { request_id: string }) => r.request_id)).toEqual([ids[2]!, ids[1]!, ids[0]!]);
    expect(mine.body[0].attempts[0].key_id).toBeUndefined();
    expect((await api(router, `/x-requests/${ids[0]!}`, { key: plain.key })).status).toBe(200);
    expect((await api(router, `/x-requests/${ids[3]!}`, { key: plain.key })).status).toBe(404);
    expect((await api(router, `/x-requests?account=${child.id}`, { key: plain.key })).status).toBe(404);
    expect((await api(router, "/x-requests", { key: child.key })).body.map((r: { request_id: string }) => r.request_id)).toEqual([ids[3]!]);
    // Key and Level are the owner's to filter on.
    expect((await api(router, "/x-requests?key_id=1", { key: manager.key })).status).toBe(403);
    expect((await api(router, "/x-requests?level=1", { key: plain.key })).status).toBe(403);

    // An account whose Resources do not allow the dashboard reads nothing.
    const narrow = await createAccount(router, { CreditGranted: 1, Resources: "/v1/*" });
    expect((await api(router, "/x-requests", { key: narrow.key })).status).toBe(403);
    expect((await api(router, "/x-requests", { key: null })).status).toBe(401);
  });

  test("400 naming the parameter; 404 for an unknown id", async () => {
    for (const [query, param] of [
      ["status=abc", "status"],
      ["status=6xx", "status"],
      ["since=yesterday", "since"],
      ["until=2026-02-30", "until"],
      ["page=0", "page"],
      ["size=101", "size"],
      ["key_id=x", "key_id"],
      ["level=-1", "level"],
      ["request_id=a%20b", "request_id"],
      ["since=2026-03-02&until=2026-03-01", "since"],
    ]) {
      const res = await api(router, `/x-requests?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error.param, query).toBe(param);
    }
    const missing = await api(router, "/x-requests/req_doesnotexist");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("request_not_found");
    expect((await api(router, "/x-requests?account=nobody@example.com")).status).toBe(404);
    // The id is the client's text: a control character in it is not echoed raw into the message (a terminal or log reader would act on it).
    const control = await api(router, "/x-requests/req_%00%1b%5B2J");
    expect(control.status).toBe(404);
    expect(control.body.error.message).not.toMatch(/[\u0000-\u001f]/);
    expect(control.body.error.message).toContain("\\u001b");
  });
});

test("retention: rows older than --request-log-days are pruned at start and on the next round", async () => {
  const start = Date.parse("2026-03-01T12:00:00Z");
  const clock = createManualClock(start);
  const local = await startRouter({ clock, pricing: PRICING });
  const mock = startMockUpstream().route("POST", "/v1/chat/completions", () => answer("gpt-old"));
  try {
    await addKey(local, { provider: `${mock.url}/v1` });
    const send = async () => {
      const res = await local.fetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-old", messages: [{ role: "user", content: "hi" }] }) });
      await res.text();
      return res.headers.get("x-request-id")!;
    };
    const old = await send();
    clock.advance(2 * 86_400_000);
    const recent = await send();
    await local.deps.usageRecorder.flush();
    const listed = async () => (await api(local, "/x-requests")).body.map((r: { request_id: string }) => r.request_id);
    expect(await listed()).toEqual([recent, old]);
    // Two days later with one day kept: the first call goes at start, the second stays.
    const pruner = startRequestLogPruner({ store: local.deps.store, clock, log: local.deps.log, days: 1 });
    expect(await pruner.prune()).toBe(0);
    expect(await listed()).toEqual([recent]);
    expect((await api(local, `/x-requests/${old}`)).status).toBe(404);
    clock.advance(86_400_000 + 1);
    expect(await pruner.prune()).toBe(1);
    expect(await listed()).toEqual([]);
    await pruner.stop();
  } finally {
    await mock.stop();
    await local.stop();
  }
});

test("--request-log-days 0: calls are served, charged and metered, but none is recorded; the list says the log is off; a prune empties it", async () => {
  const clock = createManualClock(Date.parse("2026-03-01T12:00:00Z"));
  const off = await startRouter({ clock, pricing: PRICING, config: { requestLogDays: 0 } });
  const mock = startMockUpstream().route("POST", "/v1/chat/completions", () => answer("gpt-off"));
  try {
    await addKey(off, { provider: `${mock.url}/v1` });
    const user = await createAccount(off, { CreditGranted: 1 });
    const send = (key?: string) =>
      off.fetch("/v1/chat/completions", { method: "POST", key, headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-off", messages: [{ role: "user", content: "hi" }] }) });
    const served = await send(user.key);
    expect(served.status).toBe(200);
    expect((await served.json()).usage.total_tokens).toBe(18);
    // A call the router refuses itself (an unknown model is not refused here: a bad body is).
    const refused = await off.fetch("/v1/chat/completions", { method: "POST", key: user.key, headers: { "content-type": "application/json" }, body: "{" });
    expect(refused.status).toBe(400);
    await off.deps.usageRecorder.flush();
    // Bills are untouched: the call's usage row and its charge are written as always.
    const rows = await usageRows(off);
    expect(rows.map((r) => [r.account_id, r.prompt_tokens, r.completion_tokens])).toEqual([[user.id, 11, 7]]);
    expect(rows[0]!.cost_nanos).toBeGreaterThan(0);
    // Nothing in the log, and every reader is told why rather than shown an empty page.
    expect((await off.deps.store.requests.list({ tenantId: 0 }, 1, 10)).total).toBe(0);
    for (const [path, key] of [["/x-requests", undefined], ["/x-requests", user.key], [`/x-requests/${served.headers.get("x-request-id")}`, undefined]] as const) {
      const res = await api(off, path, { key });
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe("request_log_off");
      expect(res.body.error.message).toContain("--request-log-days 0");
    }
    // Unauthenticated callers learn nothing about it.
    expect((await api(off, "/x-requests", { key: "sk-wrong-key-000000000000" })).status).toBe(401);
    // Rows an earlier run kept (here: appended directly) go with the first prune.
    await off.deps.store.requests.append([{ requestId: "req_earlier", accountId: user.id, createdAt: clock.now() - 60_000, family: "openai", endpoint: "/v1/chat/completions", status: 200, durationMs: 5, source: "upstream" }]);
    expect((await off.deps.store.requests.list({ tenantId: 0 }, 1, 10)).total).toBe(1);
    const pruner = startRequestLogPruner({ store: off.deps.store, clock, log: off.deps.log, days: 0 });
    await pruner.stop();
    expect((await off.deps.store.requests.list({ tenantId: 0 }, 1, 10)).total).toBe(0);
  } finally {
    await mock.stop();
    await off.stop();
  }
});

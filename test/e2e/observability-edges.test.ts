import { describe, expect, test } from "bun:test";
import { nanosToCredits } from "../../src/accounts/records.ts";
import { createManualClock } from "../../src/core/clock.ts";
import { addKey, usageRows } from "../helpers/keys.ts";
import { chatCompletion, json, slowErrorBody, sse } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * What the router shows owners about calls (request log, key health, metrics, route
 * explain, bills) held against what really happened, from a review: the key-health
 * message of a slow error body, route explain on a switched Level, token counts in the
 * log and key health, a call no key could take, histograms past the series cap failed
 * before their fixes; the rest is what the review checked and found right.
 */

const scope = perTest();
const PRICING = { ChatPricing: { "*": { InputText: 2, OutputText: 8 } } };

const chatAnswer = (model = "m", prompt = 11, completion = 7) => chatCompletion(model, { prompt, completion }, { id: "chatcmpl-1", content: "hello" });

async function chat(router: TestRouter, model = "gpt-x", key?: string, extra: Record<string, unknown> = {}): Promise<{ id: string; status: number; text: string }> {
  const res = await router.fetch("/v1/chat/completions", {
    method: "POST",
    key,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], ...extra }),
  });
  const text = await res.text();
  return { id: res.headers.get("x-request-id")!, status: res.status, text };
}

async function record(router: TestRouter, id: string): Promise<any> {
  return waitFor(
    async () => {
      await router.deps.usageRecorder.flush();
      const got = await api(router, `/x-requests/${id}`);
      return got.status === 200 ? got.body : undefined;
    },
    5000,
    `record ${id}`,
  );
}

const health = async (router: TestRouter, keyId: number) => {
  // The figures go with the next usage write (every 50 ms): written now.
  await router.deps.usageRecorder.flush();
  return (await api(router, `/x-keys/${keyId}`)).body.Health;
};

describe("key health: LastError.Message", () => {
  // docs/api.md, Key health: "`LastError`: the key's latest failed attempt ... `Message` what the
  // upstream or the connection said, redacted as the request log's attempt messages ... or the
  // failure kind (`timeout`, `network`, …) when nothing was said."
  // FINE (passes): with a single key the body is read before settlement, so the message is right.
  test("a call whose only key fails with an error body: LastError.Message is what the upstream said, as in the request log", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING, config: { maxAttempts: 1 } });
    const key = await addKey(router, { provider: `${upstream.url}/v1`, noSleep: true });
    upstream.route("POST", "/v1/chat/completions", () => json({ error: { message: "the upstream is overloaded right now" } }, 503));
    const { id, status } = await chat(router);
    expect(status).toBe(502);
    const logged = await record(router, id);
    expect(logged.attempts).toHaveLength(1);
    expect(logged.attempts[0].message).toContain("overloaded right now");
    const h = await health(router, key.id);
    expect(h.Today.Errors).toBe(1);
    expect(h.LastError.Status).toBe(503);
    // Received: "status" (the failure kind), though the upstream said something.
    expect(h.LastError.Message).toBe(logged.attempts[0].message);
  });

  test("a failover whose failed attempt's error body comes slowly: LastError.Message is still what it said", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING });
    await addKey(router, { provider: `${upstream.url}/v1`, noSleep: true, name: "a" });
    await addKey(router, { provider: `${upstream.url}/v1`, noSleep: true, name: "b" });
    upstream.route("POST", "/v1/chat/completions", () => chatAnswer());
    upstream.once(() => slowErrorBody(300));
    const { id, status } = await chat(router);
    expect(status).toBe(200);
    const logged = await record(router, id);
    const failed = logged.attempts[0];
    expect(failed.message).toContain("overloaded, slowly");
    const h = await health(router, failed.key_id);
    expect(h.LastError.Status).toBe(503);
    expect(h.LastError.Message).toBe(failed.message);
  });
});

describe("route explain agrees with where calls go", () => {
  // docs/api.md, Route explain: "`levels`: the routed Level, then down its SWITCH_OVER chain;
  // `switched` is the Level's switch-over state ... `would_serve` marks the key the call would take now."
  // docs/api.md, Routing 3: "more than 5 upstream errors ... within one minute on a Level that has a
  // backup send its calls to the backup."
  test("a Level switched over to its backup: the backup's key would serve, as the next call shows", async () => {
    const clock = createManualClock(Date.parse("2026-03-10T12:00:00Z"));
    const primary = scope.upstream();
    const backup = scope.upstream();
    const router = await scope.router({ clock, pricing: PRICING });
    await router.deps.settings.update({ SWITCH_OVER: "1=2" });
    const p = await addKey(router, { provider: `${primary.url}/v1`, level: 1, noSleep: true, name: "primary" });
    const b = await addKey(router, { provider: `${backup.url}/v1`, level: 2, noSleep: true, name: "backup" });
    primary.route("POST", "/v1/chat/completions", () => json({ error: { message: "down" } }, 500));
    backup.route("POST", "/v1/chat/completions", () => chatAnswer());
    for (let i = 0; i < 6; i++) expect((await chat(router)).status).toBe(200);
    // The primary is fine again, but the Level stays switched for a quiet minute.
    primary.reset();
    primary.route("POST", "/v1/chat/completions", () => chatAnswer());
    const before = { primary: primary.requests.length, backup: backup.requests.length };
    const explained = await api(router, "/x-route?model=gpt-x");
    expect(explained.status).toBe(200);
    const { id, status } = await chat(router);
    expect(status).toBe(200);
    const logged = await record(router, id);
    // Where the call really went: the backup (the mock's record and the request log agree).
    expect(backup.requests.length - before.backup).toBe(1);
    expect(primary.requests.length - before.primary).toBe(0);
    expect(logged.attempts.map((a: any) => a.key_id)).toEqual([b.id]);
    expect(explained.body.levels[0]).toMatchObject({ level: 1, switched: true });
    const serving = explained.body.levels.flatMap((l: any) => l.keys).filter((k: any) => k.would_serve).map((k: any) => k.ID);
    // Received: [primary] — the explain names a key of the switched-away Level.
    expect(serving).toEqual([b.id]);
    expect(serving).not.toContain(p.id);
  });
});

describe("route explain: round-robin", () => {
  // docs/api.md, Routing 4: "among them the one with the fewest calls in flight, round-robin on ties";
  // Route explain: "`would_serve` marks the key the call would take now."
  test("two idle keys on a Level: the key marked would_serve is the one the next call takes", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING });
    const a = await addKey(router, { provider: `${upstream.url}/v1`, noSleep: true, name: "a" });
    const b = await addKey(router, { provider: `${upstream.url}/v1`, noSleep: true, name: "b" });
    upstream.route("POST", "/v1/chat/completions", () => chatAnswer());
    const taken: number[] = [];
    const explainedAs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const explained = await api(router, "/x-route?model=gpt-x");
      explainedAs.push(explained.body.levels[0].keys.find((k: any) => k.would_serve).ID);
      const { id } = await chat(router);
      taken.push((await record(router, id)).attempts[0].key_id);
    }
    // The calls alternate (round-robin on ties): a, b, a.
    expect(new Set(taken)).toEqual(new Set([a.id, b.id]));
    // The explain names the key each call then takes.
    expect(explainedAs).toEqual(taken);
  });
});

describe("calls the log must keep", () => {
  // docs/api.md, Request log: "Not recorded: ... Nor token counts (`count_tokens`) that were answered".
  // So a token count that was not answered (every attempt failed: 502) is recorded, like any call.
  test("a count_tokens call that fails upstream is in the request log", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING, config: { maxAttempts: 1 } });
    await addKey(router, { provider: upstream.url, noSleep: true, config: { provider_type: "standard", formats: ["anthropic"] } });
    upstream.route("POST", "/v1/messages/count_tokens", () => json({ type: "error", error: { type: "overloaded_error", message: "overloaded" } }, 529));
    const res = await router.fetch("/v1/messages/count_tokens", {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-x", messages: [{ role: "user", content: "hi" }] }),
    });
    await res.text();
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(upstream.requests.length).toBe(1);
    const id = res.headers.get("x-request-id")!;
    await router.deps.usageRecorder.flush();
    await Bun.sleep(300);
    await router.deps.usageRecorder.flush();
    const got = await api(router, `/x-requests/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ endpoint: "/v1/messages/count_tokens", status: res.status });
  });

  // docs/api.md, Key health: "`Today` counts the key's upstream **attempts** of the current business
  // day ... calls refused before any attempt and Realtime sessions do not count" (token counts are
  // not excluded); Metrics: "router_key_requests_total ... upstream attempts". Both count the same attempts.
  test("an answered count_tokens attempt counts in /metrics per key, and so in the key's health", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING });
    const key = await addKey(router, { provider: upstream.url, noSleep: true, config: { provider_type: "standard", formats: ["anthropic"] } });
    upstream.route("POST", "/v1/messages/count_tokens", () => json({ input_tokens: 14 }));
    const res = await router.fetch("/v1/messages/count_tokens", {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-x", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    expect(upstream.requests.length).toBe(1);
    await router.deps.usageRecorder.flush();
    const metrics = await (await router.fetch("/metrics")).text();
    const series = `router_key_requests_total{key="${key.id}",level="1"} `;
    const counted = Number(metrics.split("\n").find((l) => l.startsWith(series))?.slice(series.length) ?? 0);
    expect(counted).toBe(1);
    // Received: 0 — the key's health never hears of the attempt /metrics counted.
    expect((await health(router, key.id)).Today.Requests).toBe(counted);
  });

  // docs/api.md, Request log: "`error`: why the router itself refused the call before any upstream
  // attempt, as its error body's code ... null for every call that went upstream"; "`source` ...
  // `none` for a refused call"; "A call refused before any attempt (no key available) has none."
  test("a call no key can take (503 no_available_key): error names it, source none", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING });
    await addKey(router, { provider: `${upstream.url}/v1`, status: false });
    const { id, status, text } = await chat(router);
    expect(status).toBe(503);
    expect(JSON.parse(text).error.code).toBe("no_available_key");
    const logged = await record(router, id);
    expect(logged.attempts).toEqual([]);
    expect(logged.cost).toBe(0);
    expect({ error: logged.error, source: logged.source }).toEqual({ error: "no_available_key", source: "none" });
  });
});

describe("what the review checked and found right", () => {
  // docs/api.md, Streaming: "Before the first byte, the attempt goes on for up to --drain-timeout ...
  // an answer that arrives meanwhile ... is metered with the usage the upstream reports ... the
  // record's status is 499".
  test("a client that leaves before the headers: 499, the attempt answered, upstream tokens, cost = usage row, key health counts it", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING });
    const key = await addKey(router, { provider: `${upstream.url}/v1`, noSleep: true });
    let arrived!: () => void;
    const seen = new Promise<void>((resolve) => (arrived = resolve));
    upstream.route("POST", "/v1/chat/completions", async () => {
      arrived();
      await Bun.sleep(300);
      return chatAnswer("gpt-x", 13, 5);
    });
    const controller = new AbortController();
    const pending = router
      .fetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }), signal: controller.signal })
      .catch(() => undefined);
    await seen;
    controller.abort();
    await pending;
    const logged = await waitFor(async () => {
      await router.deps.usageRecorder.flush();
      const list = await api(router, "/x-requests");
      return list.body.length === 1 ? list.body[0] : undefined;
    }, 5000, "the aborted call's record");
    expect(logged).toMatchObject({ status: 499, tokens: { prompt: 13, completion: 5 }, source: "upstream" });
    expect(logged.attempts).toHaveLength(1);
    expect(logged.attempts[0]).toMatchObject({ key_id: key.id, status: 200, answered: true, error: null });
    const row = (await usageRows(router)).find((r) => r.request_id === logged.request_id)!;
    expect(row.status).toBe(499);
    expect(logged.cost).toBe(nanosToCredits(row.cost_nanos));
    const h = await health(router, key.id);
    expect(h.Today.Requests).toBe(1);
    expect(h.Today.Errors).toBe(0);
    expect(h.Today.Spend).toBeCloseTo(logged.cost, 9);
  });

  test("a translated call (OpenAI client, Anthropic-only key): translated_to, tokens and cost agree with the usage row, bill and balance", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING });
    await addKey(router, { provider: upstream.url, noSleep: true, config: { provider_type: "standard", formats: ["anthropic"] } });
    upstream.route("POST", /\/messages$/, () =>
      json({ id: "msg_1", type: "message", role: "assistant", model: "claude-x", content: [{ type: "text", text: "hello" }], stop_reason: "end_turn", usage: { input_tokens: 21, output_tokens: 9, cache_read_input_tokens: 4 } }),
    );
    const user = await createAccount(router, { CreditGranted: 1 });
    const { id, status } = await chat(router, "claude-x", user.key);
    expect(status).toBe(200);
    const logged = await record(router, id);
    expect(logged.attempts).toHaveLength(1);
    expect(logged.attempts[0]).toMatchObject({ translated_to: "anthropic-messages", answered: true });
    const row = (await usageRows(router)).find((r) => r.request_id === id)!;
    expect(logged.tokens).toEqual({ prompt: row.prompt_tokens, completion: row.completion_tokens, cache_read: row.cache_read_tokens, cache_write: row.cache_write_tokens, reasoning: row.reasoning_tokens });
    expect(logged.tokens.cache_read).toBe(4);
    expect(logged.cost).toBe(nanosToCredits(row.cost_nanos));
    const bill = await api(router, "/dashboard/bill", { key: user.key });
    expect(bill.body.total_credit_used).toBeCloseTo(logged.cost, 12);
    const status2 = await api(router, "/dashboard/status", { key: user.key });
    expect(status2.body.balance).toBeCloseTo(1 - logged.cost, 9);
  });

  // docs/api.md, What counts: "Days: a call belongs to the business date ... on which it started."
  test("a stream that starts before midnight and ends after: the log, the usage row and the bill put it on the day it started", async () => {
    const clock = createManualClock(Date.parse("2026-03-10T23:59:59Z"));
    const upstream = scope.upstream();
    const router = await scope.router({ clock, pricing: PRICING });
    await addKey(router, { provider: `${upstream.url}/v1`, noSleep: true });
    const chunk = (content: string) => ({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { content }, finish_reason: null }] });
    upstream.route("POST", "/v1/chat/completions", () => sse([chunk("a"), chunk("b"), { id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [], usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } }], { done: true, delayMs: 100 }));
    const user = await createAccount(router, { CreditGranted: 1 });
    const res = await router.fetch("/v1/chat/completions", { method: "POST", key: user.key, headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }) });
    const reader = res.body!.getReader();
    await reader.read();
    clock.set(Date.parse("2026-03-11T00:00:01Z"));
    while (!(await reader.read()).done);
    const id = res.headers.get("x-request-id")!;
    const logged = await record(router, id);
    expect(logged.time.slice(0, 10)).toBe("2026-03-10");
    const row = (await usageRows(router)).find((r) => r.request_id === id)!;
    expect(row.day).toBe("2026-03-10");
    const day1 = await api(router, "/dashboard/bill?date=2026-03-10", { key: user.key });
    const day2 = await api(router, "/dashboard/bill?date=2026-03-11", { key: user.key });
    expect(day1.body.total_credit_used).toBeCloseTo(logged.cost, 12);
    expect(day2.body.total_credit_used).toBe(0);
    expect((await api(router, "/x-requests?since=2026-03-10&until=2026-03-10")).body.map((r: any) => r.request_id)).toEqual([id]);
    expect((await api(router, "/x-requests?since=2026-03-11")).body).toEqual([]);
  });

  // docs/api.md, Automatic sleep: "3 retryable failures in a row ... reason `errors`, for a cool-down of 1 min".
  test("a key that sleeps after 3 failures shows SleepReason errors and SleepUntil; its health counts the 3 errors", async () => {
    const clock = createManualClock(Date.parse("2026-03-10T12:00:00Z"));
    const upstream = scope.upstream();
    const router = await scope.router({ clock, pricing: PRICING, config: { maxAttempts: 1 } });
    const key = await addKey(router, { provider: `${upstream.url}/v1` });
    upstream.route("POST", "/v1/chat/completions", () => json({ error: { message: "down" } }, 500));
    for (let i = 0; i < 3; i++) expect((await chat(router)).status).toBe(502);
    const refused = await chat(router);
    expect(refused.status).toBe(503);
    await router.deps.usageRecorder.flush();
    const rec = (await api(router, `/x-keys/${key.id}`)).body;
    expect(rec).toMatchObject({ Sleeping: true, SleepReason: "errors" });
    expect(Date.parse(rec.SleepUntil)).toBe(clock.now() + 60_000);
    expect(rec.Health.Today).toMatchObject({ Requests: 3, Errors: 3 });
    // After the cool-down, one probe that succeeds wakes it.
    upstream.reset();
    upstream.route("POST", "/v1/chat/completions", () => chatAnswer());
    clock.advance(60_001);
    expect((await chat(router)).status).toBe(200);
    await router.deps.usageRecorder.flush();
    const woken = (await api(router, `/x-keys/${key.id}`)).body;
    expect(woken).toMatchObject({ Sleeping: false, SleepReason: null, SleepUntil: null });
    expect(woken.Health.Today).toMatchObject({ Requests: 4, Errors: 3 });
  });
});

describe("more the review checked and found right", () => {
  // docs/api.md, Streaming: "Mid-stream failure: the stream ends with an error event"; usage records:
  // "status (499 client gone, 502/504 failures)"; "A stream cut before its final counts ... is charged
  // at least the estimate of what it delivered, marked `estimated`".
  test("a stream cut midway: 502 in the log (status=5xx finds it), attempt answered, estimated tokens = usage row, metrics status 502", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING });
    await addKey(router, { provider: `${upstream.url}/v1`, noSleep: true });
    const chunk = (content: string) => ({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { content }, finish_reason: null }] });
    upstream.route("POST", "/v1/chat/completions", () => sse([chunk("hello there "), chunk("general "), chunk("kenobi"), chunk("never")], { breakAfter: 2, delayMs: 20 }));
    const res = await router.fetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-cut", stream: true, messages: [{ role: "user", content: "hi" }] }) });
    const id = res.headers.get("x-request-id")!;
    const body = await res.text();
    expect(body).toContain("error");
    const logged = await record(router, id);
    expect(logged).toMatchObject({ status: 502, stream: true, source: "estimated" });
    expect(logged.attempts).toHaveLength(1);
    expect(logged.attempts[0]).toMatchObject({ answered: true, status: 200 });
    const row = (await usageRows(router)).find((r) => r.request_id === id)!;
    expect(row.status).toBe(502);
    expect(logged.tokens.completion).toBe(row.completion_tokens);
    expect(logged.tokens.completion).toBeGreaterThan(0);
    expect((await api(router, "/x-requests?status=5xx")).body.map((r: any) => r.request_id)).toEqual([id]);
    expect((await api(router, "/x-requests?status=502")).body.map((r: any) => r.request_id)).toEqual([id]);
    const metrics = await (await router.fetch("/metrics")).text();
    expect(metrics).toContain('router_requests_total{family="openai",model="gpt-cut",level="1",status="502"} 1');
  });

  test("filters: account by upper-cased email, level/key_id match any attempt of a failover across Levels, empty pages", async () => {
    const primary = scope.upstream();
    const backup = scope.upstream();
    const router = await scope.router({ pricing: PRICING, config: { maxAttempts: 2 } });
    await router.deps.settings.update({ SWITCH_OVER: "1=2" });
    const p = await addKey(router, { provider: `${primary.url}/v1`, level: 1, noSleep: true });
    const b = await addKey(router, { provider: `${backup.url}/v1`, level: 2, noSleep: true });
    primary.route("POST", "/v1/chat/completions", () => json({ error: { message: "down" } }, 500));
    backup.route("POST", "/v1/chat/completions", () => chatAnswer());
    const user = await createAccount(router, { CreditGranted: 1 });
    const { id, status } = await chat(router, "gpt-x", user.key);
    expect(status).toBe(200);
    const logged = await record(router, id);
    expect(logged.attempts.map((a: any) => [a.key_id, a.level, a.answered])).toEqual([[p.id, 1, false], [b.id, 2, true]]);
    const ids = async (q: string) => (await api(router, `/x-requests?${q}`)).body.map((r: any) => r.request_id);
    expect(await ids("level=1")).toEqual([id]);
    expect(await ids("level=2")).toEqual([id]);
    expect(await ids(`key_id=${p.id}`)).toEqual([id]);
    expect(await ids(`key_id=${b.id}`)).toEqual([id]);
    expect(await ids(`account=${encodeURIComponent(user.email.toUpperCase())}`)).toEqual([id]);
    expect(await ids(`since=${encodeURIComponent(logged.time)}&until=${encodeURIComponent(logged.time)}`)).toEqual([id]);
    const empty = await api(router, "/x-requests?model=nothing-like-this");
    expect(empty.body).toEqual([]);
    expect(empty.headers.get("x-total-count")).toBe("0");
    expect(empty.headers.get("x-total-pages")).toBe("0");
  });
});

describe("metrics: series past the cap", () => {
  // docs/api.md, Metrics: "Each metric keeps at most 1000 label combinations; further ones are counted
  // under `other`." A histogram past the cap drops the observation instead, so the per-key latency
  // count stops agreeing with the per-key attempt count for the same attempts.
  test("1001 keys each answering once: router_key_latency_seconds counts every attempt, as router_key_requests_total does", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING });
    upstream.route("POST", "/v1/chat/completions", () => chatAnswer());
    for (let i = 0; i < 1001; i++) {
      await router.deps.providerKeys.create({ provider: `${upstream.url}/v1`, level: 1, secret: `sk-upstream-many-${i}-0123456789abcdef`, status: true, noSleep: true });
    }
    await router.deps.pool.reload();
    for (let i = 0; i < 1001; i++) expect((await chat(router)).status).toBe(200);
    await router.deps.usageRecorder.flush();
    const text = await (await router.fetch("/metrics")).text();
    const sum = (prefix: string) =>
      text
        .split("\n")
        .filter((l) => l.startsWith(prefix))
        .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
    expect(sum("router_key_requests_total{")).toBe(1001);
    // Received: 1000 — the 1001st key's attempt is dropped from the histogram, not counted under `other`.
    expect(sum("router_key_latency_seconds_count{")).toBe(1001);
  }, 60_000);
});

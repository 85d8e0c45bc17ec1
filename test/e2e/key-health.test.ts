import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

/**
 * Issue 17, key health: each provider key's record (GET /x-keys, /x-keys/{id}, full and
 * overview forms) carries today's attempts, errors, spend and average latency, its last
 * error (redacted) and last success, read from the store. The figures are checked
 * against the calls made, as the request log tells them.
 */

const PRICING = { ChatPricing: { "*": { InputText: 2, OutputText: 8 } } };
const T0 = Date.parse("2026-03-10T12:00:00Z");

let router: TestRouter;
let upstream: MockUpstream;
let clock: ReturnType<typeof createManualClock>;
let first: { id: number; secret: string };
let second: { id: number; secret: string };
let idle: { id: number; secret: string };

const answer = () =>
  json({ id: "c", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } });

beforeAll(async () => {
  clock = createManualClock(T0);
  router = await startRouter({ clock, pricing: PRICING });
  upstream = startMockUpstream().route("POST", "/v1/chat/completions", answer);
  first = await addKey(router, { provider: `${upstream.url}/v1`, name: "first", noSleep: true });
  second = await addKey(router, { provider: `${upstream.url}/v1`, name: "second", noSleep: true });
  // Another Level's key no call reaches.
  idle = await addKey(router, { provider: `${upstream.url}/v1`, name: "idle", level: 7 });
});

afterAll(async () => {
  await upstream.stop();
  await router.stop();
});

async function call(): Promise<string> {
  const res = await router.fetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-h", messages: [{ role: "user", content: "hi" }] }) });
  expect(res.status).toBe(200);
  await res.text();
  return res.headers.get("x-request-id")!;
}

interface Attempt {
  key_id: number;
  status: number | null;
  error: string | null;
  message: string | null;
  duration_ms: number;
  answered: boolean;
}

/** Each key's expected figures, from the request log's records of `ids`. */
async function expected(ids: string[]) {
  const per = new Map<number, { requests: number; errors: number; spend: number; durations: number[] }>();
  for (const id of ids) {
    const record = (await api(router, `/x-requests/${id}`)).body as { attempts: Attempt[]; cost: number };
    for (const attempt of record.attempts) {
      const figures = per.get(attempt.key_id) ?? { requests: 0, errors: 0, spend: 0, durations: [] };
      figures.requests++;
      if (attempt.error) figures.errors++;
      if (attempt.answered) figures.spend += record.cost;
      figures.durations.push(attempt.duration_ms);
      per.set(attempt.key_id, figures);
    }
  }
  return per;
}

const keyList = async (fields: string) => {
  const res = await api(router, `/x-keys?fields=${fields}`);
  expect(res.status).toBe(200);
  return new Map((res.body as Array<{ ID: number; Health?: any }>).map((key) => [key.ID, key]));
};

describe("key health", () => {
  test("a key no call reached: zero counts, no average, no last error or success", async () => {
    const health = (await api(router, `/x-keys/${idle.id}`)).body.Health;
    expect(health).toEqual({ Today: { Requests: 0, Errors: 0, Spend: 0, AvgLatencyMs: null }, LastError: null, LastSuccessAt: null });
  });

  test("figures match the calls made: successes, a failover's failed attempt, spend, latency; the last error redacted", async () => {
    // The failing upstream echoes the credential it was sent: the health keeps none of it.
    upstream.once((request) => json({ error: { message: `boom; you sent ${request.headers.get("authorization")} and sk-proj-abcdefghijklmnop1234` } }, 500));
    const failover = await call();
    const ids = [failover, await call(), await call(), await call()];
    await router.deps.usageRecorder.flush();
    const want = await expected(ids);
    // The failover tried both keys: 5 attempts in all, one failed.
    expect([...want.values()].reduce((n, f) => n + f.requests, 0)).toBe(5);
    expect([...want.values()].reduce((n, f) => n + f.errors, 0)).toBe(1);

    const failoverRecord = (await api(router, `/x-requests/${failover}`)).body as { attempts: Attempt[] };
    const failedKey = failoverRecord.attempts[0]!.key_id;
    for (const form of ["full", "overview"]) {
      const keys = await keyList(form);
      for (const key of [first, second]) {
        const health = keys.get(key.id)!.Health;
        const figures = want.get(key.id) ?? { requests: 0, errors: 0, spend: 0, durations: [] };
        expect(health.Today.Requests).toBe(figures.requests);
        expect(health.Today.Errors).toBe(figures.errors);
        expect(health.Today.Spend).toBeCloseTo(figures.spend, 9);
        const mean = figures.durations.reduce((a, b) => a + b, 0) / figures.durations.length;
        expect(Math.abs(health.Today.AvgLatencyMs - mean)).toBeLessThanOrEqual(1);
        expect(health.LastSuccessAt === null).toBe(figures.requests === figures.errors);
      }
      const failed = keys.get(failedKey)!.Health;
      expect(failed.LastError).toMatchObject({ Status: 500 });
      expect(failed.LastError.Message).toContain("boom");
      expect(failed.LastError.Message).toContain("[redacted");
      for (const secret of [first.secret, second.secret, "abcdefghijklmnop1234"]) expect(failed.LastError.Message).not.toContain(secret);
      // The error happened at the first attempt of the failover, the success after it.
      expect(Date.parse(failed.LastError.At)).toBeGreaterThanOrEqual(T0);
      const other = keys.get(failedKey === first.id ? second.id : first.id)!.Health;
      expect(other.LastError).toBeNull();
      expect(Date.parse(other.LastSuccessAt)).toBeGreaterThanOrEqual(Date.parse(failed.LastError.At));
    }
    // The single record carries it too; the masked summary does not.
    expect((await api(router, `/x-keys/${failedKey}?fields=overview`)).body.Health.Today.Errors).toBe(1);
    const summary = await keyList("summary");
    expect(summary.get(first.id)!.Health).toBeUndefined();
  });

  test("a new business day starts the counts afresh; the last error and success stay", async () => {
    const before = (await api(router, `/x-keys/${first.id}`)).body.Health;
    clock.advance(86_400_000);
    const after = (await api(router, `/x-keys/${first.id}`)).body.Health;
    expect(after.Today).toEqual({ Requests: 0, Errors: 0, Spend: 0, AvgLatencyMs: null });
    expect(after.LastError).toEqual(before.LastError);
    expect(after.LastSuccessAt).toEqual(before.LastSuccessAt);
    // The next day's calls count from zero.
    await call();
    await router.deps.usageRecorder.flush();
    const keys = await keyList("full");
    expect(keys.get(first.id)!.Health.Today.Requests + keys.get(second.id)!.Health.Today.Requests).toBe(1);
  });
});

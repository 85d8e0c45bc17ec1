import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.ts";
import { startRouter, tempDir, waitFor, type TestRouter } from "../helpers/router.ts";

/**
 * Issue 17 with two instances on one PostgreSQL and one Redis: the rate-limit headers
 * count the calls of both (the shared State reports them), a key's health on either
 * instance sums both instances' attempts (read from the database), and a call one
 * instance refused is in the request log the other reads.
 */

const USAGE = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };

if (!skipServices) {
  let postgres: PostgresServer;
  let redis: RedisServer;
  let dataDir: string;
  let a: TestRouter;
  let b: TestRouter;
  let upstream: MockUpstream;
  let keyId: number;

  beforeAll(async () => {
    [postgres, redis] = await Promise.all([startPostgres(), startRedisServer()]);
    const database = postgres.url(await postgres.createDatabase());
    dataDir = tempDir("router-observe-");
    const config = { database, redis: redis.url };
    [a, b] = await Promise.all([startRouter({ dataDir, config }), startRouter({ dataDir, config })]);
    upstream = startMockUpstream();
    upstream.route("POST", "/v1/chat/completions", (req) =>
      json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: USAGE }),
    );
    const added = await api(a, "/x-keys", { body: { Provider: `${upstream.url}/v1`, SecretKey: "sk-observe-0123456789abcdef", Level: 1, Status: true, NoSleep: true } });
    expect(added.status).toBe(201);
    keyId = added.body.ID;
    expect((await api(a, "/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "gpt-*": { InputText: 2, OutputText: 8 } } } } })).status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await Promise.allSettled([a?.stop(), b?.stop()]);
    await upstream?.stop();
    await redis?.close();
    await postgres?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const chat = (router: TestRouter, key: string) =>
    router.fetch("/v1/chat/completions", { method: "POST", key, headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-o", messages: [{ role: "user", content: "hi" }] }) });

  describe("observability across two instances", () => {
    test("rate-limit headers count both instances' calls; the refusal on one is in the log the other reads; key health sums both", async () => {
      const account = await createAccount(a, { CreditGranted: 100, RPM: 4 });
      // B knows the key and the prices once the bus told it.
      await waitFor(() => b.deps.pool.all().length > 0, 5000, "B to hold the key");
      // The owner (no limits) probes B until B prices the model too; its calls count on the key.
      await waitFor(async () => {
        const res = await chat(b, b.ownerKey);
        await res.text();
        return res.status === 200;
      }, 5000, "B to price the model");
      const remaining: string[] = [];
      const routers = [a, b, a, b];
      for (const router of routers) {
        const res = await chat(router, account.key);
        await res.text();
        expect(res.status).toBe(200);
        remaining.push(res.headers.get("x-ratelimit-remaining-requests")!);
        expect(res.headers.get("x-ratelimit-limit-requests")).toBe("4");
      }
      expect(remaining).toEqual(["3", "2", "1", "0"]);
      const refused = await chat(b, account.key);
      await refused.text();
      expect(refused.status).toBe(429);
      expect(refused.headers.get("x-ratelimit-remaining-requests")).toBe("0");

      await a.deps.usageRecorder.flush();
      await b.deps.usageRecorder.flush();
      const record = await api(a, `/x-requests/${refused.headers.get("x-request-id")}`);
      expect(record.status).toBe(200);
      expect(record.body).toMatchObject({ status: 429, error: "rpm_limit_reached", attempts: [], account: { id: account.id } });

      for (const router of [a, b]) {
        const health = (await api(router, `/x-keys/${keyId}?fields=overview`)).body.Health;
        // Only answered calls reached the key (a call B refused for an unpriced model never went upstream).
        expect(health.Today).toMatchObject({ Requests: 5, Errors: 0 });
        // (10 × 2 + 10 × 8) × 1000 nano-credits per call, five calls.
        expect(health.Today.Spend).toBeCloseTo(5 * 0.0001, 9);
        expect(health.LastSuccessAt).not.toBeNull();
        expect(health.LastError).toBeNull();
      }
    });

    test("far from a limit, calls admitted against an instance's allowance count down its headers one by one", async () => {
      const account = await createAccount(a, { CreditGranted: 100, RPM: 1_000 });
      const remaining: string[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await chat(a, account.key);
        await res.text();
        expect(res.status).toBe(200);
        expect(res.headers.get("x-ratelimit-limit-requests")).toBe("1000");
        remaining.push(res.headers.get("x-ratelimit-remaining-requests")!);
      }
      expect(remaining).toEqual(["999", "998", "997", "996", "995", "994"]);
      // They were admitted against a block taken in advance (allowances.ts), not one by one in Redis.
      const metrics = await (await a.fetch("/metrics")).text();
      const admitted = Number(/^router_state_allowances_total\{event="admitted"\} (\d+)$/m.exec(metrics)?.[1]);
      expect(admitted).toBeGreaterThanOrEqual(5);
      expect(metrics).toContain("# TYPE router_state_allowances_total counter");
    });
  });
}

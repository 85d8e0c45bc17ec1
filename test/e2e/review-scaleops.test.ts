import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RedisClient } from "bun";
import { rmSync } from "node:fs";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, type Reply } from "../helpers/owner-ops.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.ts";
import { usageRowsInRedis, writeEverything as writeAll } from "../helpers/redis-usage.ts";
import { startRouter, tempDir, waitFor, type TestRouter } from "../helpers/router.ts";

/**
 * Two instances on one PostgreSQL and one Redis through what an operator meets: Redis
 * emptied under them with the connections up (FLUSHALL: no reconnection tells them) and
 * PostgreSQL restarted while both serve. Money must stay right: every answered call in
 * the ledger once, the balance the grant less exactly the stored rows, nothing left held.
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
const USAGE = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
/** (10 × 2 + 10 × 8) × 1000 nano-credits per call (Rates 1). */
const CALL_COST = (10 * 2 + 10 * 8) * 1000;

if (!skipServices) {
  let postgres: PostgresServer;
  let redis: RedisServer;
  let redisClient: RedisClient;
  let dataDir: string;
  let a: TestRouter;
  let b: TestRouter;
  let upstream: MockUpstream;

  const chat = (router: TestRouter, key: string): Promise<Reply> =>
    api(router, "/v1/chat/completions", { key, body: { model: "acme-chat", max_tokens: 20, messages: [{ role: "user", content: "hi" }] } });
  const rowsOf = async (accountId: number) => (await a.deps.store.usage.events(0, 1_000_000)).filter((row) => row.accountId === accountId);
  const ledgerOf = (accountId: number) => a.deps.store.credit.balance(accountId, Date.now());
  const ready = async (router: TestRouter) => (await router.fetch("/readyz", { key: null })).status === 200;
  const writeEverything = () => writeAll(() => redisClient, a, b);

  /**
   * Calls from `perInstance` clients on each instance until `stop` says so; the request ids
   * of the calls answered 200, and every other status seen.
   */
  const load = (key: string, perInstance: number) => {
    const answered: string[] = [];
    const others: number[] = [];
    let stopped = false;
    const client = async (router: TestRouter) => {
      while (!stopped) {
        const reply = await router.fetch("/v1/chat/completions", {
          key,
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "acme-chat", max_tokens: 20, messages: [{ role: "user", content: "hi" }] }),
        });
        await reply.text();
        if (reply.status === 200) answered.push(reply.headers.get("x-request-id")!);
        else others.push(reply.status);
      }
    };
    const clients = [a, b].flatMap((router) => Array.from({ length: perInstance }, () => client(router)));
    return {
      answered,
      others,
      /** Waits until `more` calls were answered since now. */
      more: (more: number) => {
        const from = answered.length;
        return waitFor(() => answered.length >= from + more, 30_000, `${more} more calls to be answered`);
      },
      async stop() {
        stopped = true;
        await Promise.all(clients);
      },
    };
  };

  /** Every answered call stored once, and the ledger the grant less exactly the rows stored. */
  const expectExact = async (account: { id: number }, answered: readonly string[], granted: number) => {
    const rows = await rowsOf(account.id);
    const stored = new Set(rows.map((row) => row.requestId));
    expect(stored.size).toBe(rows.length);
    expect(answered.filter((id) => !stored.has(id))).toEqual([]);
    expect(rows).toHaveLength(answered.length);
    expect(await ledgerOf(account.id)).toBe(granted * 1e9 - rows.length * CALL_COST);
  };

  beforeAll(async () => {
    [postgres, redis] = await Promise.all([startPostgres(), startRedisServer()]);
    redisClient = new RedisClient(redis.url);
    dataDir = tempDir("router-scaleops-");
    const config = { database: postgres.url(await postgres.createDatabase()), redis: redis.url };
    a = await startRouter({ dataDir, config, pricing: false });
    b = await startRouter({ dataDir, config, pricing: false });
    upstream = startMockUpstream();
    upstream.route("POST", "/v1/chat/completions", (req) =>
      json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: USAGE }),
    );
    expect((await api(a, "/x-config", { method: "PUT", body: { PRICING } })).status).toBe(200);
    expect((await api(a, "/x-keys", { body: { Provider: `${upstream.url}/v1`, SecretKey: "sk-scaleops-0123456789abcdef", Level: 1, Status: true } })).status).toBe(201);
    for (const router of [a, b]) await waitFor(async () => (await chat(router, a.ownerKey)).status !== 503, 5000, "both instances to serve");
  }, 60_000);

  afterAll(async () => {
    await Promise.allSettled([a, b].map((router) => router?.stop()));
    redisClient?.close();
    await upstream?.stop();
    await redis?.close();
    await postgres?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  describe("Redis flushed (FLUSHALL) with both instances connected", () => {
    test("while rows wait in it for a halted PostgreSQL: each instance queues its recent rows again, and every call is stored once and charged once", async () => {
      const account = await createAccount(a, { CreditGranted: 1000 });
      const answered: string[] = [];
      for (const router of [a, b]) {
        const reply = await chat(router, account.key);
        expect(reply.status).toBe(200);
        answered.push(reply.headers.get("x-request-id")!);
      }
      await writeEverything();
      await postgres.halt();
      try {
        const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => chat(i % 2 === 0 ? a : b, account.key)));
        for (const reply of replies) expect({ status: reply.status, body: reply.body }).toMatchObject({ status: 200 });
        answered.push(...replies.map((reply) => reply.headers.get("x-request-id")!));
        await waitFor(async () => (await usageRowsInRedis(redisClient)) >= 10, 5000, "the rows to wait in Redis");
        // The connections stay up: no reconnection tells the instances that Redis lost the rows.
        await redisClient.send("FLUSHALL", []);
        // Each instance notices on its next claim (every tick) and queues its rows of the last seconds again.
        await waitFor(async () => (await usageRowsInRedis(redisClient)) >= 10, 5000, "the rows to be queued again");
      } finally {
        await postgres.resume();
      }
      for (const router of [a, b]) await waitFor(() => ready(router), 10_000, "/readyz to be ready again");
      await writeEverything();
      // Before, the ten rows were lost: the calls were answered and never charged.
      await expectExact(account, answered, 1000);
      expect([...a.logs, ...b.logs].join("\n")).toContain("Redis no longer holds what this process stored there (flushed)");
    }, 40_000);

    test("under load with PostgreSQL up: every answered call is stored once, the balance is exact on both, nothing stays held, and the account is served after", async () => {
      const granted = 5;
      const account = await createAccount(a, { CreditGranted: granted });
      const traffic = load(account.key, 3);
      try {
        await traffic.more(150);
        await redisClient.send("FLUSHALL", []);
        await traffic.more(150);
      } finally {
        await traffic.stop();
      }
      // No refusal: a flushed Redis loses counts, never the right to call.
      expect(traffic.others).toEqual([]);
      await writeEverything();
      // Before, the rows waiting in the queue at the flush (a tick's worth, about a hundred) were lost.
      await expectExact(account, traffic.answered, granted);
      // Both report the ledger's balance once their blocks of credit reserved in advance went back.
      const expected = granted * 1e9 - traffic.answered.length * CALL_COST;
      for (const router of [a, b]) {
        await waitFor(async () => Math.round(((await api(router, "/dashboard/status", { key: account.key })).body.balance as number) * 1e9) === expected, 5000, "the balance to be exact");
      }
      // No phantom reservation or unwritten charge holds the account's credit.
      await waitFor(
        async () => {
          const fields = (await redisClient.send("HGETALL", [`router:c:${account.id}`])) as Record<string, string>;
          return Object.entries(fields).every(([field, value]) => !/^(r|q)|^unflushed$/.test(field) || Number(value) === 0);
        },
        5000,
        "nothing to be held in Redis",
      );
      expect((await chat(a, account.key)).status).toBe(200);
      expect((await chat(b, account.key)).status).toBe(200);
    }, 60_000);
  });
}

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RedisClient } from "bun";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, run, serveBinary, type ServingBinary } from "../helpers/binary.ts";
import type { MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, type Reply } from "../helpers/owner-ops.ts";
import { skipServices, type PostgresServer } from "../helpers/postgres-server.ts";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.ts";
import { PAIR_CALL_COST, PAIR_PRICING, startScaleOutPair, type ScaleOutPair } from "../helpers/scale-out-pair.ts";
import { usageRowsInRedis, writeEverything as writeAll } from "../helpers/redis-usage.ts";
import { tempDir, waitFor, type TestRouter } from "../helpers/router.ts";

/**
 * Two instances on one PostgreSQL and one Redis through what an operator meets: Redis
 * emptied under them with the connections up (FLUSHALL: no reconnection tells them),
 * PostgreSQL restarted while both serve, and the compiled binary started while one of
 * them is away. Money must stay right: every answered call in the ledger once, the
 * balance the grant less exactly the stored rows, nothing left held.
 */

const PRICING = PAIR_PRICING;
const CALL_COST = PAIR_CALL_COST;

if (!skipServices) {
  let postgres: PostgresServer;
  let redis: RedisServer;
  let redisClient: RedisClient;
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

  /**
   * Every answered call stored once and charged; a call admitted just before Redis went
   * away and failed then (503) leaves a row charged nothing; the ledger is the grant less
   * exactly the answered calls.
   */
  const expectExact = async (account: { id: number }, answered: readonly string[], granted: number) => {
    const rows = await rowsOf(account.id);
    const stored = new Set(rows.map((row) => row.requestId));
    expect(stored.size).toBe(rows.length);
    expect(answered.filter((id) => !stored.has(id))).toEqual([]);
    const said = new Set(answered);
    const unanswered = rows.filter((row) => !said.has(row.requestId));
    expect(unanswered.map((row) => ({ status: row.status, cost: row.costNanos }))).toEqual(unanswered.map(() => ({ status: 503, cost: 0 })));
    expect(await ledgerOf(account.id)).toBe(granted * 1e9 - answered.length * CALL_COST);
  };

  let pair: ScaleOutPair | undefined;
  beforeAll(async () => {
    pair = await startScaleOutPair("scaleops", "sk-scaleops-0123456789abcdef");
    ({ postgres, redis, redisClient, a, b, upstream } = pair);
    for (const router of [a, b]) await waitFor(async () => (await chat(router, a.ownerKey)).status !== 503, 5000, "both instances to serve");
  }, 60_000);

  afterAll(async () => {
    // A Redis restarted in a test has a client of its own.
    redisClient?.close();
    await pair?.stop();
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

    test("an RPM limit counts again from the flush: neither blocked for good nor lifted", async () => {
      const account = await createAccount(a, { CreditGranted: 1000, RPM: 5 });
      const round = async () => {
        const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => chat(i % 2 === 0 ? a : b, account.key)));
        for (const reply of replies.filter((r) => r.status !== 200)) expect(reply.body.error.code).toBe("rpm_limit_reached");
        return replies.filter((r) => r.status === 200).length;
      };
      expect(await round()).toBe(5);
      await redisClient.send("FLUSHALL", []);
      expect(await round()).toBe(5);
      await writeEverything();
      expect(await rowsOf(account.id)).toHaveLength(10);
    }, 30_000);
  });

  describe("Redis restarted without its data while both instances serve", () => {
    test("every answered call is stored once, the ledger is exact, no reservation or unwritten charge stays held, and both serve again", async () => {
      const granted = 5;
      const account = await createAccount(a, { CreditGranted: granted });
      const traffic = load(account.key, 2);
      try {
        await traffic.more(100);
        redisClient.close();
        await redis.stop();
        await Bun.sleep(300);
        await redis.start();
        redisClient = new RedisClient(redis.url);
        await traffic.more(100);
      } finally {
        await traffic.stop();
      }
      // While Redis was away calls were refused (503), never answered uncharged.
      expect(traffic.others.every((status) => status === 503)).toBe(true);
      await writeEverything();
      await expectExact(account, traffic.answered, granted);
      await waitFor(
        async () => {
          const fields = (await redisClient.send("HGETALL", [`router:c:${account.id}`])) as Record<string, string>;
          return Object.entries(fields).every(([field, value]) => !/^r|^unflushed$/.test(field) || Number(value) === 0);
        },
        5000,
        "nothing to be held in Redis",
      );
      for (const router of [a, b]) expect((await chat(router, account.key)).status).toBe(200);
    }, 60_000);
  });

  describe("the invalidation bus across a Redis restart", () => {
    test("a key rotated on one instance while Redis is down is refused on the other at once, and still once Redis is back (it started empty); the new key works there", async () => {
      const account = await createAccount(a, { CreditGranted: 1000 });
      // B holds the key in its cache before the rotation.
      expect((await chat(b, account.key)).status).toBe(200);
      redisClient.close();
      await redis.stop();
      let fresh: string;
      try {
        // B's probe and subscription have seen Redis go.
        await waitFor(async () => (await b.fetch("/healthz", { key: null }).then((r) => r.json() as Promise<{ redis: string }>)).redis === "down", 5000, "B to see Redis down");
        // A management write needs only the database: answered as done, its news sent again until Redis takes it.
        const rotated = await api(a, "/x-self", { key: account.key, body: { confirm: `${a.deps.clock.businessDate()}-ROTATE-SELF` } });
        expect(rotated.status).toBe(200);
        fresh = rotated.body.APIKey as string;
        // Meanwhile B cannot hear of it: it checks keys against the database instead of its cache
        // (before, the rotated key read the account's dashboard on B for up to a minute).
        expect((await api(b, "/dashboard/status", { key: account.key })).status).toBe(401);
        expect((await api(b, "/dashboard/status", { key: fresh })).status).toBe(200);
      } finally {
        await redis.start();
        redisClient = new RedisClient(redis.url);
      }
      await waitFor(async () => (await api(b, "/dashboard/status", { key: account.key })).status === 401, 10_000, "B to refuse the rotated key");
      expect((await chat(b, account.key)).status).toBe(401);
      await waitFor(async () => (await chat(b, fresh)).status === 200, 10_000, "B to serve the new key");
      for (const router of [a, b]) await waitFor(() => ready(router), 10_000, "/readyz to be ready again");
    }, 30_000);
  });

  describe("PostgreSQL restarted while both instances serve", () => {
    test("every answered call is stored once and the ledger is exact; /readyz and /healthz say the database is down meanwhile and both are ready again without help", async () => {
      const granted = 5;
      const account = await createAccount(a, { CreditGranted: granted });
      const traffic = load(account.key, 2);
      try {
        await traffic.more(100);
        await postgres.halt();
        try {
          // Calls go on being served (their rows wait in Redis) while the probes say where the fault is.
          for (const router of [a, b]) {
            await waitFor(async () => !(await ready(router)), 5000, "/readyz to say the database is down");
            expect(await (await router.fetch("/readyz", { key: null })).json()).toEqual({ status: "unavailable", database: "down", redis: "up" });
            expect(await (await router.fetch("/healthz", { key: null })).json()).toEqual({ status: "ok", database: "down", redis: "up" });
          }
          await traffic.more(50);
        } finally {
          await postgres.resume();
        }
        for (const router of [a, b]) await waitFor(() => ready(router), 10_000, "/readyz to be ready again");
        await traffic.more(100);
      } finally {
        await traffic.stop();
      }
      expect(traffic.others).toEqual([]);
      for (const router of [a, b]) expect(await (await router.fetch("/healthz", { key: null })).json()).toEqual({ status: "ok", database: "up", redis: "up" });
      await writeEverything();
      await expectExact(account, traffic.answered, granted);
    }, 60_000);
  });

  describe("the compiled binary started while a dependency is away", () => {
    const PASSWORD = "s3cret-Redis-77";
    const { dir, bin } = isolatedBinary();
    const env = (database: string, redisUrl: string) => ({ ROUTER_DATABASE: database, ROUTER_REDIS: redisUrl, NO_COLOR: "1" });

    test("Redis away: it starts, says which Redis it waits for (no password), answers 503 and /readyz unavailable, and serves once Redis answers (warning then of what its settings risk)", async () => {
      const away = await startRedisServer({ password: PASSWORD });
      await away.stop();
      const redisUrl = `redis://:${PASSWORD}@127.0.0.1:${away.port}`;
      const data = tempDir("router-scaleops-bin-");
      let server: ServingBinary | undefined;
      try {
        server = await serveBinary(bin, ["--port", "0", "--data", data], { cwd: dir, env: env(postgres.url(await postgres.createDatabase()), redisUrl), timeoutMs: 20_000 });
        const status = await fetch(`${server.url}/readyz`);
        expect(status.status).toBe(503);
        expect(await status.json()).toEqual({ status: "unavailable", database: "up", redis: "down" });
        const owner = readFileSync(join(data, "initial-owner-key"), "utf8").trim();
        const send = (path: string, body: unknown, method = "POST") =>
          fetch(`${server!.url}${path}`, { method, headers: { authorization: `Bearer ${owner}`, "content-type": "application/json" }, body: JSON.stringify(body) });
        // Management writes need only the database.
        expect((await send("/x-config", { PRICING }, "PUT")).status).toBe(200);
        expect((await send("/x-keys", { Provider: `${upstream.url}/v1`, SecretKey: "sk-scaleops-bin-0123456789abcdef", Level: 1, Status: true })).status).toBe(201);
        const call = () => send("/v1/chat/completions", { model: "acme-chat", max_tokens: 20, messages: [{ role: "user", content: "hi" }] });
        const refused = await call();
        expect(refused.status).toBe(503);
        expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "redis_unavailable", message: expect.stringContaining("Redis") });
        // Where it looked for Redis, the password masked (read from the pipe as it arrives).
        const where = `Redis at redis://:***@127.0.0.1:${away.port}`;
        await waitFor(() => server!.stderr().includes(where), 5000, "the warning naming Redis");
        await away.start();
        await waitFor(async () => (await fetch(`${server!.url}/readyz`)).status === 200, 10_000, "/readyz to be ready once Redis answers");
        const served = await call();
        expect({ status: served.status, body: await served.text() }).toMatchObject({ status: 200 });
        // What Redis's settings risk (this one keeps nothing on disk) is said once it answers (before, never: read once at start).
        await waitFor(() => server!.stderr().includes("Redis does not log writes to disk (appendonly no)"), 10_000, "the durability warning");
        server.kill("SIGTERM");
        expect(await server.exited).toBe(0);
        expect(server.stdout() + server.stderr()).not.toContain(PASSWORD);
      } finally {
        server?.kill("SIGKILL");
        await away.close();
      }
    }, 60_000);

    test("PostgreSQL away: each start (a supervisor's restart loop) fails at once, exit 1, naming PostgreSQL and its address without the password; once it is back the next start serves", async () => {
      const database = await postgres.createDatabase();
      const url = postgres.url(database).replace("postgres@", `postgres:${PASSWORD}@`);
      const data = tempDir("router-scaleops-bin-");
      await postgres.halt();
      try {
        for (let attempt = 0; attempt < 3; attempt++) {
          const result = run(bin, ["serve", "--port", "0", "--data", data], { cwd: dir, env: env(url, redis.url) });
          expect(result.exitCode).toBe(1);
          expect(result.stderr).toContain(`PostgreSQL at postgres://postgres:***@127.0.0.1:${postgres.port}/${database}`);
          expect(result.stdout + result.stderr).not.toContain(PASSWORD);
          expect(result.stdout).not.toContain("listening");
        }
      } finally {
        await postgres.resume();
      }
      const server = await serveBinary(bin, ["--port", "0", "--data", data], { cwd: dir, env: env(url, redis.url), timeoutMs: 20_000 });
      try {
        expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      } finally {
        server.kill("SIGTERM");
        expect(await server.exited).toBe(0);
      }
    }, 60_000);
  });
}

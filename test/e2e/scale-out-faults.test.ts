import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RedisClient } from "bun";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, type Reply } from "../helpers/owner-ops.ts";
import { skipServices, type PostgresServer } from "../helpers/postgres-server.ts";
import { PAIR_CALL_COST, PAIR_PRICING, startScaleOutPair, type ScaleOutPair } from "../helpers/scale-out-pair.ts";
import type { RedisServer } from "../helpers/redis-server.ts";
import { usageRowsInRedis, writeEverything as writeAll } from "../helpers/redis-usage.ts";
import { startRouter, tempDir, waitFor, type TestRouter } from "../helpers/router.ts";
import type { RedisState } from "../../src/state/redis/state.ts";
import type { ServeConfig } from "../../src/config.ts";
import { PRINCIPAL_TTL_MS } from "../../src/accounts/principal.ts";
import { createClock } from "../../src/core/clock.ts";

/**
 * Scale-out faults (issue 15): PostgreSQL down while calls run, an instance dying while
 * the usage rows it settled wait in Redis, the bound past which calls are refused, and
 * the drain pause of a graceful stop. Routers run in this process on one PostgreSQL
 * cluster and one Redis; PostgreSQL is stopped and started again on the same port.
 */

const PRICING = PAIR_PRICING;
const CALL_COST = PAIR_CALL_COST;
const GRANTED = 1000;

async function chat(router: TestRouter, key: string): Promise<Reply> {
  return api(router, "/v1/chat/completions", { key, body: { model: "acme-chat", max_tokens: 20, messages: [{ role: "user", content: "hi" }] } });
}

if (!skipServices) {
  let postgres: PostgresServer;
  let redis: RedisServer;
  let redisClient: RedisClient;
  let dataDir: string;
  let config: Partial<ServeConfig>;
  let a: TestRouter;
  let b: TestRouter;
  let upstream: MockUpstream;
  const extra: TestRouter[] = [];

  /** Usage rows of an account as PostgreSQL holds them. */
  const rowsOf = async (accountId: number) => (await a.deps.store.usage.events(0, 100_000)).filter((row) => row.accountId === accountId);
  /** The account's balance in nano-credits, as the router reports it once every row is written. */
  const balanceOf = async (router: TestRouter, key: string) => Math.round(((await api(router, "/dashboard/status", { key })).body.balance as number) * 1e9);
  const databaseReady = async (router: TestRouter) => (await router.fetch("/readyz", { key: null })).status === 200;
  /** Every instance writes what it holds, until nothing waits in Redis. */
  const writeEverything = (...routers: TestRouter[]) => writeAll(() => redisClient, ...routers);
  const waitingInRedis = () => usageRowsInRedis(redisClient);

  let pair: ScaleOutPair | undefined;
  beforeAll(async () => {
    pair = await startScaleOutPair("faults", "sk-faults-0123456789abcdef");
    ({ postgres, redis, redisClient, dataDir, config, a, b, upstream } = pair);
  }, 60_000);

  afterAll(async () => {
    // A Redis restarted in a test has a client of its own.
    redisClient?.close();
    await pair?.stop(...extra);
  });

  /** An account both instances (and `others`) have served once: its key and balance are in their caches and in Redis. */
  const warmAccount = async (...others: TestRouter[]) => {
    const account = await createAccount(a, { CreditGranted: GRANTED });
    const routers = [a, b, ...others];
    for (const router of routers) await waitFor(async () => (await chat(router, account.key)).status === 200, 5000, "the account to be served");
    return { ...account, warmUps: routers.length };
  };

  describe("PostgreSQL away", () => {
    test("calls are served and charged; /healthz says database down, /readyz 503; once it returns every row is stored once and the balance is right", async () => {
      const account = await warmAccount();
      await postgres.halt();
      let served = 0;
      try {
        for (const router of [a, b]) {
          await waitFor(async () => !(await databaseReady(router)), 5000, "/readyz to say PostgreSQL is down");
          const health = await router.fetch("/healthz", { key: null });
          expect(health.status).toBe(200);
          expect(await health.json()).toEqual({ status: "ok", database: "down", redis: "up" });
          expect((await router.fetch("/readyz", { key: null })).status).toBe(503);
        }
        // Management calls that need the database: 503 naming it, with Retry-After, with or without an Idempotency-Key.
        for (const headers of [{}, { "idempotency-key": "during-outage" }] as Record<string, string>[]) {
          const write = await a.fetch(`/x-users/${account.id}`, { method: "PUT", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ CreditGranted: 1 }) });
          expect(write.status).toBe(503);
          expect(write.headers.get("retry-after")).toBe("1");
          const error = ((await write.json()) as { error: { message: string; code: string } }).error;
          expect(error.code).toBe("database_unavailable");
          expect(error.message).toContain("PostgreSQL");
        }
        const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => chat(i % 2 === 0 ? a : b, account.key)));
        for (const reply of replies) expect({ status: reply.status, body: reply.body }).toMatchObject({ status: 200 });
        served = replies.length;
        // Settled and told to the clients, so in Redis until PostgreSQL takes them.
        await waitFor(async () => (await waitingInRedis()) >= served, 5000, "the rows to wait in Redis");
      } finally {
        await postgres.resume();
      }
      for (const router of [a, b]) await waitFor(() => databaseReady(router), 10_000, "/readyz to be ready again");
      await a.deps.usageRecorder.flush();
      await b.deps.usageRecorder.flush();
      const rows = await rowsOf(account.id);
      // The warm-up calls and the ones served during the outage, each once.
      expect(rows).toHaveLength(account.warmUps + served);
      expect(new Set(rows.map((row) => row.requestId)).size).toBe(rows.length);
      expect(await waitingInRedis()).toBe(0);
      const expected = GRANTED * 1e9 - (account.warmUps + served) * CALL_COST;
      expect(await balanceOf(a, account.key)).toBe(expected);
      expect(await balanceOf(b, account.key)).toBe(expected);
    }, 40_000);

    test("an instance killed while its rows wait in Redis loses none: another instance writes them once PostgreSQL returns", async () => {
      const c = await startRouter({ dataDir, config, pricing: false });
      const account = await warmAccount(c);
      const owner = (c.deps.state as RedisState).owner;
      await postgres.halt();
      let served = 0;
      try {
        // C claims rows to write and keeps them while PostgreSQL refuses: call until its claim holds some.
        await waitFor(
          async () => {
            expect((await chat(c, account.key)).status).toBe(200);
            served++;
            await c.deps.usageRecorder.flush();
            return Number(await redisClient.send("LLEN", [`router:usage:claim:${owner}`])) > 0;
          },
          10_000,
          "C to hold a claim of rows",
        );
        // Killed: no flush, no claim handed back, no more heartbeats; its lease is removed
        // here rather than waited for (30 s).
        c.deps.usageRecorder.halt();
        c.server.server.stop(true);
        (c.deps.state as RedisState).close();
        await redisClient.send("DEL", [`router:lease:${owner}`]);
        // Its rows are still in Redis (the others may have taken its claim over by now).
        expect(await waitingInRedis()).toBeGreaterThanOrEqual(served);
      } finally {
        await postgres.resume();
      }
      for (const router of [a, b]) await waitFor(() => databaseReady(router), 10_000, "/readyz to be ready again");
      // Whichever of the living instances holds the rows now writes them on its next tick; flushing asks at once.
      await a.deps.usageRecorder.flush();
      await b.deps.usageRecorder.flush();
      const rows = await rowsOf(account.id);
      expect(rows).toHaveLength(account.warmUps + served);
      expect(new Set(rows.map((row) => row.requestId)).size).toBe(rows.length);
      expect(await waitingInRedis()).toBe(0);
      expect(await balanceOf(a, account.key)).toBe(GRANTED * 1e9 - (account.warmUps + served) * CALL_COST);
    }, 40_000);

    test("an instance stopped cleanly while PostgreSQL is away hands its unwritten rows back to Redis for the others", async () => {
      const f = await startRouter({ dataDir, config, pricing: false });
      const account = await warmAccount(f);
      const owner = (f.deps.state as RedisState).owner;
      await postgres.halt();
      let served = 0;
      try {
        await waitFor(
          async () => {
            expect((await chat(f, account.key)).status).toBe(200);
            served++;
            await f.deps.usageRecorder.flush();
            return Number(await redisClient.send("LLEN", [`router:usage:claim:${owner}`])) > 0;
          },
          10_000,
          "F to hold a claim of rows",
        );
        await f.stop();
        // Its claim went back to the queue, at once (no lease to wait for).
        expect(await redisClient.send("EXISTS", [`router:usage:claim:${owner}`])).toBe(0);
        expect(await waitingInRedis()).toBeGreaterThanOrEqual(served);
      } finally {
        await postgres.resume();
      }
      for (const router of [a, b]) await waitFor(() => databaseReady(router), 10_000, "/readyz to be ready again");
      await a.deps.usageRecorder.flush();
      await b.deps.usageRecorder.flush();
      const rows = await rowsOf(account.id);
      expect(rows).toHaveLength(account.warmUps + served);
      expect(new Set(rows.map((row) => row.requestId)).size).toBe(rows.length);
      expect(await balanceOf(a, account.key)).toBe(GRANTED * 1e9 - (account.warmUps + served) * CALL_COST);
    }, 40_000);

    test("a claim whose writer committed it and died before clearing it is written once, and charged once", async () => {
      const account = await warmAccount();
      await a.deps.usageRecorder.flush();
      await b.deps.usageRecorder.flush();
      const stored = await rowsOf(account.id);
      const ledger = await a.deps.store.credit.balance(account.id, Date.now());
      // The same rows again, as the claim of a process whose lease is gone.
      const claim = "router:usage:claim:dead-writer";
      for (const { id: _id, ...row } of stored) await redisClient.send("RPUSH", [claim, JSON.stringify(row)]);
      await redisClient.send("SADD", ["router:usage:claims", "dead-writer"]);
      // Whichever instance claims next takes it over.
      await a.deps.usageRecorder.flush();
      await b.deps.usageRecorder.flush();
      expect(await redisClient.send("EXISTS", [claim])).toBe(0);
      expect(await waitingInRedis()).toBe(0);
      expect(await rowsOf(account.id)).toHaveLength(stored.length);
      expect(await a.deps.store.credit.balance(account.id, Date.now())).toBe(ledger);
      expect([...a.logs, ...b.logs].join("\n")).toContain("already written");
    }, 20_000);

    test("past the bound of rows waiting, model calls get 503 naming PostgreSQL in their family's envelope, until it returns", async () => {
      const d = await startRouter({ dataDir, config: { ...config, usageBacklogLimit: 5 }, pricing: false });
      extra.push(d);
      const account = await warmAccount(d);
      await postgres.halt();
      let served = 0;
      try {
        const refused = await waitFor(
          async () => {
            const reply = await chat(d, account.key);
            if (reply.status === 200) served++;
            return reply.status === 503 ? reply : undefined;
          },
          10_000,
          "calls to be refused",
        );
        expect(refused!.body.error.message).toContain("PostgreSQL");
        expect(refused!.body.error.code).toBe("database_unavailable");
        const anthropic = await api(d, "/v1/messages", { key: account.key, body: { model: "acme-chat", max_tokens: 20, messages: [{ role: "user", content: "hi" }] } });
        expect(anthropic.status).toBe(503);
        expect(anthropic.body.type).toBe("error");
        expect(anthropic.body.error.message).toContain("PostgreSQL");
      } finally {
        await postgres.resume();
      }
      await waitFor(async () => (await chat(d, account.key)).status === 200, 10_000, "calls to be served again");
      served++;
      // Every living instance writes what it holds (a claim waits for its holder's retry otherwise).
      await writeEverything(a, b, d);
      // A refused call is not charged: the warm-up calls and those served.
      expect(await rowsOf(account.id)).toHaveLength(account.warmUps + served);
      expect(await balanceOf(a, account.key)).toBe(GRANTED * 1e9 - (account.warmUps + served) * CALL_COST);
    }, 40_000);
  });

  describe("PostgreSQL away for long", () => {
    /**
     * An instance on a clock the test moves: warmed, then PostgreSQL halted and the clock
     * moved by `jump`; three calls are served and `warning` is logged once. Resolves once
     * PostgreSQL is back and the instances wrote what they held.
     */
    type Warmed = Awaited<ReturnType<typeof warmAccount>>;
    const servedThroughOutage = async (
      jump: (account: Warmed, e: TestRouter) => number | Promise<number>,
      warning: string,
      /** Checks made while PostgreSQL is still away, after the three calls. */
      during?: (account: Warmed, e: TestRouter) => Promise<void>,
    ) => {
      let skew = 0;
      const e = await startRouter({ dataDir, config, pricing: false, clock: createClock("UTC", () => Date.now() + skew) });
      extra.push(e);
      const account = await warmAccount(e);
      const moveBy = await jump(account, e);
      await postgres.halt();
      try {
        await waitFor(async () => !(await databaseReady(e)), 5000, "/readyz to say PostgreSQL is down");
        skew = moveBy;
        for (let i = 0; i < 3; i++) {
          const reply = await chat(e, account.key);
          expect({ status: reply.status, body: reply.body }).toMatchObject({ status: 200 });
        }
        // A total no limit checks is counted with the settlements, a few milliseconds after its call.
        await waitFor(async () => e.logs.some((line) => line.includes(warning)), 3000, `the warning "${warning}"`);
        expect(e.logs.filter((line) => line.includes(warning))).toHaveLength(1);
        await during?.(account, e);
      } finally {
        await postgres.resume();
      }
      await waitFor(() => databaseReady(e), 10_000, "/readyz to be ready again");
      await writeEverything(a, b, e);
      return { e, account };
    };

    test("keys and ancestors cached before the outage keep being served past their backstop; a warning says so once", async () => {
      // Past the principal cache's backstop: the key is read again, and the database does not answer.
      await servedThroughOutage(() => PRINCIPAL_TTL_MS + 1000, "keys are checked against the accounts cached before");
    }, 40_000);

    test("credit that expires during the outage leaves the balance on time, without the ledger; what is left is served and charged right", async () => {
      let expiresAt = 0;
      const flushAll = (router: TestRouter) => writeEverything(a, b, router);
      const { e } = await servedThroughOutage(async (warmed, router) => {
        // The warm-up calls are written (from the lasting credit); then a grant for one day.
        await flushAll(router);
        expect((await api(router, `/x-users/${warmed.id}`, { method: "PUT", body: { CreditGranted: 5, Days: 1 } })).status).toBe(200);
        const credit = (await api(router, "/dashboard/credit", { key: warmed.key })).body as { grants: Array<{ expires_at: string | null }> };
        expiresAt = Date.parse(credit.grants.find((grant) => grant.expires_at !== null)!.expires_at!);
        // The balance is read with that grant in it, and a call written from it, before the database goes.
        expect((await chat(router, warmed.key)).status).toBe(200);
        await flushAll(router);
        return expiresAt + 1000 - Date.now();
      }, "a period began while the database is away", async (warmed, router) => {
        // The day's grant paid for the call written before it expired and is gone with what
        // it had left: the lasting credit less the warm-up calls and the three not yet written
        // (written after the expiry, from the lasting credit).
        // (The State's own figure, once the last call settled: /dashboard/status reads the account from the database.)
        const spendable = () => router.deps.state.counts.read({ kind: "credit", accountId: warmed.id }, router.deps.clock.now());
        const expected = GRANTED * 1e9 - (warmed.warmUps + 3) * CALL_COST;
        await waitFor(async () => (await spendable()) === expected, 3000, "the calls to settle").catch(() => {});
        expect(await spendable()).toBe(expected);
      });
      expect(e.deps.clock.now()).toBeGreaterThan(expiresAt);
    }, 40_000);

    test("a day that begins during the outage is served and counted from zero: no total of it can be in a database away since before", async () => {
      const nextDay = () => {
        const now = new Date();
        return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1, 0, 0, 5) - now.getTime();
      };
      const { e, account } = await servedThroughOutage(nextDay, "a period began while the database is away");
      // The new day's calls reached the database once each.
      const tomorrow = e.deps.clock.businessDate();
      expect((await rowsOf(account.id)).filter((row) => row.day === tomorrow)).toHaveLength(3);
    }, 40_000);
  });

  describe("Redis restarted without its data", () => {
    test("while rows wait in it for PostgreSQL, each instance queues its recent rows again: every call is stored once and charged once", async () => {
      const account = await warmAccount();
      await writeEverything(a, b);
      await postgres.halt();
      let served = 0;
      try {
        const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => chat(i % 2 === 0 ? a : b, account.key)));
        for (const reply of replies) expect({ status: reply.status, body: reply.body }).toMatchObject({ status: 200 });
        served = replies.length;
        await waitFor(async () => (await waitingInRedis()) >= served, 5000, "the rows to wait in Redis");
        // A restart without persistence: what Redis held (rows, claims, counters) is gone.
        redisClient.close();
        await redis.stop();
        await redis.start();
        redisClient = new RedisClient(redis.url);
        // The instances notice the new connection and queue their rows of the last seconds again
        // (a Redis just started may still refuse a command: asked again).
        await waitFor(async () => (await waitingInRedis().catch(() => -1)) >= served, 5000, "the rows to be queued again");
      } finally {
        await postgres.resume();
      }
      for (const router of [a, b]) await waitFor(() => databaseReady(router), 10_000, "/readyz to be ready again");
      await writeEverything(a, b);
      const rows = await rowsOf(account.id);
      // What each instance said, should a row be missing (the cause shows in CI's output).
      if (rows.length !== account.warmUps + served) {
        for (const [name, router] of [["a", a], ["b", b], ...extra.map((router, i) => [`extra ${i}`, router] as const)] as const) {
          console.error(`--- ${name}:\n${router.logs.filter((line) => /usage|Redis|database/.test(line)).slice(-40).join("\n")}`);
        }
      }
      expect(rows).toHaveLength(account.warmUps + served);
      expect(new Set(rows.map((row) => row.requestId)).size).toBe(rows.length);
      expect(await a.deps.store.credit.balance(account.id, Date.now())).toBe(GRANTED * 1e9 - (account.warmUps + served) * CALL_COST);
      expect([...a.logs, ...b.logs].join("\n")).toContain("the connection to Redis was made again");
      // The test's Redis keeps nothing on disk: each instance said so when it started.
      for (const router of [a, b]) expect(router.logs.join("\n")).toMatch(/level=warn msg="Redis does not log writes to disk \(appendonly no\): a restart loses everything it holds/);
    }, 40_000);

    test("rows already written that a rolled-back Redis queues again are not written twice", async () => {
      const account = await warmAccount();
      // Every instance's claim cleared, the extra instances' too: the rows are all in the database.
      await writeEverything(a, b);
      const stored = await rowsOf(account.id);
      expect(stored).toHaveLength(account.warmUps);
      const ledger = await a.deps.store.credit.balance(account.id, Date.now());
      // A failover to a replica that received the rows but not their claims: the rows are
      // queued again, unflagged, as the instances' connections break (one transaction, so
      // no instance claims them on the old connection).
      await redisClient.send("MULTI", []);
      for (const { id: _id, ...row } of stored) await redisClient.send("RPUSH", ["router:usage:queue", JSON.stringify(row)]);
      await redisClient.send("CLIENT", ["KILL", "SKIPME", "yes", "TYPE", "normal"]);
      await redisClient.send("EXEC", []);
      await waitFor(
        async () => {
          await a.deps.usageRecorder.flush().catch(() => {});
          await b.deps.usageRecorder.flush().catch(() => {});
          return (await waitingInRedis()) === 0;
        },
        10_000,
        "the queue to drain",
      );
      expect(await rowsOf(account.id)).toHaveLength(stored.length);
      expect(await a.deps.store.credit.balance(account.id, Date.now())).toBe(ledger);
    }, 20_000);
  });

  describe("one instance on PostgreSQL without Redis", () => {
    test("after PostgreSQL restarts, a second instance without Redis is still refused", async () => {
      const soloConfig = { database: postgres.url(await postgres.createDatabase()) };
      const first = await startRouter({ dataDir: tempDir("router-solo-"), config: soloConfig, pricing: false });
      extra.push(first);
      await postgres.halt();
      await postgres.resume();
      // The first instance notices its lock went with its connection and takes it again (within a second).
      await Bun.sleep(1500);
      const second = await startRouter({ dataDir: tempDir("router-solo-"), config: soloConfig, pricing: false }).then(
        (router) => router,
        (error: Error) => error,
      );
      if (!(second instanceof Error)) extra.push(second);
      expect(second).toBeInstanceOf(Error);
      expect((second as Error).message).toContain("another instance already runs");
    }, 30_000);

    test("killed while PostgreSQL is away, it loses no charge: the rows it kept on disk are written once at its next start", async () => {
      const soloDir = tempDir("router-solo-");
      const soloConfig = { database: postgres.url(await postgres.createDatabase()) };
      const solo = await startRouter({ dataDir: soloDir, config: soloConfig, pricing: false });
      expect((await api(solo, "/x-config", { method: "PUT", body: { PRICING } })).status).toBe(200);
      expect((await api(solo, "/x-keys", { body: { Provider: `${upstream.url}/v1`, SecretKey: "sk-solo-0123456789abcdef", Level: 1, Status: true } })).status).toBe(201);
      const account = await createAccount(solo, { CreditGranted: GRANTED });
      await waitFor(async () => (await chat(solo, account.key)).status === 200, 5000, "the account to be served");
      await solo.deps.usageRecorder.flush();
      const spool = join(soloDir, "usage-spool.jsonl");
      expect(readFileSync(spool, "utf8")).toBe("");
      await postgres.halt();
      let served = 0;
      try {
        for (let i = 0; i < 5; i++) {
          expect((await chat(solo, account.key)).status).toBe(200);
          served++;
        }
        await waitFor(async () => readFileSync(spool, "utf8").split("\n").filter(Boolean).length >= served, 5000, "the rows to be kept on disk");
        // An operator sees them waiting, and where.
        const page = await (await solo.fetch("/metrics")).text();
        expect(page).toContain(`router_usage_rows_waiting{where="all"} ${served}`);
        expect(page).toContain(`router_usage_rows_waiting{where="disk"} ${served}`);
        // Killed: no flush, nothing handed anywhere.
        solo.deps.usageRecorder.halt();
        solo.server.server.stop(true);
        solo.deps.dependencies.stop();
        void Promise.resolve(solo.deps.store.close()).catch(() => {});
      } finally {
        await postgres.resume();
      }
      const restarted = await startRouter({ dataDir: soloDir, config: soloConfig, pricing: false });
      extra.push(restarted);
      await restarted.deps.usageRecorder.flush();
      const rows = (await restarted.deps.store.usage.events(0, 100_000)).filter((row) => row.accountId === account.id);
      expect(rows).toHaveLength(1 + served);
      expect(new Set(rows.map((row) => row.requestId)).size).toBe(rows.length);
      expect(await restarted.deps.store.credit.balance(account.id, Date.now())).toBe(GRANTED * 1e9 - (1 + served) * CALL_COST);
      expect(readFileSync(spool, "utf8")).toBe("");
      expect(restarted.logs.join("\n")).toContain("usage rows a previous run could not write are written now");
      rmSync(soloDir, { recursive: true, force: true });
    }, 40_000);
  });

  describe("graceful stop", () => {
    test("with --redis, /readyz answers 503 to a new connection during the drain pause, then the socket closes", async () => {
      const e = await startRouter({ dataDir, config, pricing: false });
      expect(await databaseReady(e)).toBe(true);
      let stopped = false;
      // With --redis, the pause is min(grace, 5 s): 1 s here.
      const stopping = e.server.stop(1).then(() => {
        stopped = true;
      });
      // A load balancer's health check on a fresh connection sees the instance leaving.
      const during = await fetch(`${e.url}/readyz`, { keepalive: false });
      expect(during.status).toBe(503);
      expect(((await during.json()) as { status: string }).status).toBe("stopping");
      expect(stopped).toBe(false);
      await stopping;
      const after = await fetch(`${e.url}/readyz`, { keepalive: false }).then(
        () => "answered",
        () => "refused",
      );
      expect(after).toBe("refused");
    }, 20_000);
  });
}

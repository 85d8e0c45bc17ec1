import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RedisClient } from "bun";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, type Reply } from "../helpers/owner-ops.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.ts";
import { writeEverything } from "../helpers/redis-usage.ts";
import { startRouter, tempDir, waitFor, type TestRouter } from "../helpers/router.ts";
import { greetingRealtimeUpstream } from "../helpers/tls.ts";

/**
 * Scale-out (issue 15): two router instances on one PostgreSQL database and one Redis,
 * as behind a load balancer. Each test talks to both over HTTP and checks that what one
 * instance admits, changes or counts holds on the other. Changes reach the other
 * instance through the Redis bus: tests wait for them, never on wall-clock time.
 */

const PASSWORD = "pg-Secret-7781";
const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
const USAGE = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
/** (10 × 2 + 10 × 8) × 1000 nano-credits per call (Rates 1). */
const CALL_COST = (10 * 2 + 10 * 8) * 1000;

const completion = (model: string, content = "ok") =>
  json({ id: "c", object: "chat.completion", created: 1, model, choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }], usage: USAGE });

async function chat(router: TestRouter, key: string, model = "acme-chat"): Promise<Reply> {
  return api(router, "/v1/chat/completions", { key, body: { model, max_tokens: 20, messages: [{ role: "user", content: "hi" }] } });
}

/** Usage rows the instances settled, written: whichever instance claimed them, nothing waits in Redis. */
async function flushBoth(redisUrl: string, ...routers: TestRouter[]): Promise<void> {
  const client = new RedisClient(redisUrl);
  try {
    await writeEverything(() => client, ...routers);
  } finally {
    client.close();
  }
}

if (!skipServices) {
  let postgres: PostgresServer;
  let redis: RedisServer;
  let database: string;
  let dataDir: string;
  let a: TestRouter;
  let b: TestRouter;
  let upstream: MockUpstream;

  beforeAll(async () => {
    [postgres, redis] = await Promise.all([startPostgres(), startRedisServer()]);
    // The test cluster trusts local connections: the password is carried (and must never show), not checked.
    database = postgres.url(await postgres.createDatabase()).replace("postgres@", `postgres:${PASSWORD}@`);
    // One data directory for both: the shared secret.key, and initial-owner-key written by whichever creates the owner.
    dataDir = tempDir("router-scale-");
    const config = { database, redis: redis.url };
    // Started together: the start-up lock lets one create the owner.
    [a, b] = await Promise.all([startRouter({ dataDir, config, pricing: false }), startRouter({ dataDir, config, pricing: false })]);
    upstream = startMockUpstream();
    upstream.route("POST", "/v1/chat/completions", (req) => completion(req.json.model));
    expect((await api(a, "/x-config", { method: "PUT", body: { PRICING } })).status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await Promise.allSettled([a?.stop(), b?.stop()]);
    // Nothing either instance logged, Redis outage included, holds the database password.
    for (const router of [a, b]) expect(router?.logs.join("\n") ?? "").not.toContain(PASSWORD);
    await upstream?.stop();
    await redis?.close();
    await postgres?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  describe("two instances on one PostgreSQL and one Redis", () => {
    test("instances started together created one owner, whose key works on both", async () => {
      expect(await a.deps.store.accounts.countLive()).toBe(1);
      expect(existsSync(join(dataDir, "initial-owner-key"))).toBe(true);
      expect(a.ownerKey).toBe(b.ownerKey);
      expect((await api(b, "/dashboard/status")).status).toBe(200);
    });

    test("/healthz names both dependencies up, /readyz is 200, and /metrics has a gauge for each", async () => {
      for (const router of [a, b]) {
        expect(await (await router.fetch("/healthz", { key: null })).json()).toEqual({ status: "ok", database: "up", redis: "up" });
        expect((await router.fetch("/readyz", { key: null })).status).toBe(200);
        const metrics = await (await router.fetch("/metrics")).text();
        expect(metrics).toContain('router_dependency_up{dependency="database"} 1');
        expect(metrics).toContain('router_dependency_up{dependency="redis"} 1');
        expect(metrics).not.toContain(PASSWORD);
      }
    });

    test("a provider key added on one serves on the other", async () => {
      const added = await api(a, "/x-keys", { body: { Provider: `${upstream.url}/v1`, SecretKey: "sk-scale-out-0123456789abcdef", Level: 1, Status: true } });
      expect(added.status).toBe(201);
      const account = await createAccount(a, { CreditGranted: 1000 });
      // B serves once its bus delivered the new key.
      await waitFor(async () => (await chat(b, account.key)).status === 200, 5000, "B to serve with the key added on A");
      expect(upstream.requests.at(-1)?.headers.get("authorization")).toBe("Bearer sk-scale-out-0123456789abcdef");
    });

    test("a key put to sleep or disabled on one is skipped by the other; a config change on one applies on the other", async () => {
      const second = startMockUpstream();
      second.route("POST", "/v1/chat/completions", (req) => completion(req.json.model, "from the second key"));
      try {
        await api(a, "/x-config", { method: "PUT", body: { LEVEL_MAPPER: "acme-two=2" } });
        const key = await api(a, "/x-keys", { body: { Provider: `${second.url}/v1`, SecretKey: "sk-scale-two-0123456789abcdef", Level: 2, Status: true } });
        expect(key.status).toBe(201);
        const account = await createAccount(a, { CreditGranted: 1000 });
        // The Level mapping made on A routes B's calls once B heard of it.
        await waitFor(async () => (await chat(b, account.key, "acme-two")).body?.choices?.[0]?.message?.content === "from the second key", 5000, "B to route acme-two to Level 2");
        // Asleep on A: B skips it (Level 2 has no other key, so B answers 503).
        expect((await api(a, `/x-keys/${key.body.ID}/sleep`, { method: "POST" })).status).toBe(200);
        await waitFor(async () => (await chat(b, account.key, "acme-two")).status === 503, 5000, "B to skip the key slept on A");
        const before = second.requests.length;
        expect((await chat(b, account.key, "acme-two")).status).toBe(503);
        expect(second.requests.length).toBe(before);
        // Woken, then disabled on A: B serves with it, then skips it again.
        expect((await api(a, `/x-keys/${key.body.ID}/wake`, { method: "POST" })).status).toBe(200);
        await waitFor(async () => (await chat(b, account.key, "acme-two")).status === 200, 5000, "B to use the woken key");
        expect((await api(a, `/x-keys/${key.body.ID}`, { method: "PUT", body: { Status: false } })).status).toBe(200);
        await waitFor(async () => (await chat(b, account.key, "acme-two")).status === 503, 5000, "B to skip the key disabled on A");
      } finally {
        await api(a, "/x-config", { method: "PUT", body: { LEVEL_MAPPER: "" } });
        await second.stop();
      }
    });

    test("a key that errors put to sleep on one is skipped by the other at once, though the other read its health a moment before", async () => {
      let failing = 0;
      let serving = true;
      const flaky = startMockUpstream();
      flaky.route("POST", "/v1/chat/completions", (req) => {
        if (serving) return completion(req.json.model, "from the flaky key");
        failing++;
        return json({ error: { message: "down" } }, 500);
      });
      const steady = startMockUpstream();
      steady.route("POST", "/v1/chat/completions", (req) => completion(req.json.model, "from the steady key"));
      try {
        await api(a, "/x-config", { method: "PUT", body: { LEVEL_MAPPER: "acme-flaky=5" } });
        for (const [provider, name] of [[flaky.url, "flaky"], [steady.url, "steady"]] as const) {
          expect((await api(a, "/x-keys", { body: { Provider: `${provider}/v1`, SecretKey: `sk-scale-${name}-0123456789abcdef`, Level: 5, Status: true } })).status).toBe(201);
        }
        const account = await createAccount(a, { CreditGranted: 1000 });
        await waitFor(async () => (await chat(b, account.key, "acme-flaky")).body?.choices?.[0]?.message?.content === "from the flaky key", 5000, "B to route acme-flaky to both keys");
        serving = false;
        // B reads the keys' health now (a call); A then sees the flaky key fail until it sleeps.
        expect((await chat(b, account.key, "acme-flaky")).status).toBe(200);
        const sleeping = () => a.deps.tenants.all().flatMap((tenant) => tenant.pool.all()).some((key) => key.provider.startsWith(flaky.url) && key.sleeping);
        while (!sleeping()) expect((await chat(a, account.key, "acme-flaky")).body.choices[0].message.content).toBe("from the steady key");
        const seen = failing;
        // Every call on B goes to the steady key: the sleep reached B through the bus, not after its reads aged.
        for (let i = 0; i < 4; i++) expect((await chat(b, account.key, "acme-flaky")).body.choices[0].message.content).toBe("from the steady key");
        expect(failing).toBe(seen);
      } finally {
        await api(a, "/x-config", { method: "PUT", body: { LEVEL_MAPPER: "" } });
        await flaky.stop();
        await steady.stop();
      }
    });

    test("a value PostgreSQL cannot store (a NUL character in a key's name or a mapping) is refused with 400, and nothing is written", async () => {
      const before = await api(a, "/x-config");
      const keysBefore = (await api(a, "/x-keys")).body.length;
      const key = await api(a, "/x-keys", { body: { Provider: "https://api.example.com/v1", SecretKey: "sk-nul-0123456789abcdef", Level: 7, Status: true, Name: "bad\u0000name" } });
      expect(key.status).toBe(400);
      expect(key.body.error.message).toContain("cannot store");
      for (const body of [{ MODEL_MAPPER: { "a\u0000b": "acme-chat" } }, { LEVEL_MAPPER: "x\u0000y=1" }]) {
        const reply = await api(a, "/x-config", { method: "PUT", body });
        expect(reply.status).toBe(400);
        expect(reply.body.error.type).toBe("invalid_request_error");
      }
      expect((await api(a, "/x-config")).body).toEqual(before.body);
      expect((await api(a, "/x-keys")).body).toHaveLength(keysBefore);
    });

    test("50 concurrent calls over both against credit for 3 end no lower than minus one call", async () => {
      // Both instances serve the model now (the tests before changed Levels and keys on A).
      const probe = await createAccount(a, { CreditGranted: 1000 });
      for (const router of [a, b]) await waitFor(async () => (await chat(router, probe.key)).status === 200, 5000, "both instances to serve acme-chat");
      const account = await createAccount(a, { CreditGranted: (3 * CALL_COST) / 1e9 });
      const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => chat(i % 2 === 0 ? a : b, account.key)));
      const served = replies.filter((r) => r.status === 200).length;
      for (const reply of replies) expect([200, 429]).toContain(reply.status);
      expect(served).toBeGreaterThanOrEqual(1);
      expect(served).toBeLessThanOrEqual(4);
      await flushBoth(redis.url, a, b);
      const balances = await Promise.all([a, b].map(async (r) => (await api(r, "/dashboard/status", { key: account.key })).body.balance as number));
      expect(balances[0]).toBe(balances[1]!);
      const balanceNanos = Math.round(balances[0]! * 1e9);
      expect(balanceNanos).toBe(3 * CALL_COST - served * CALL_COST);
      expect(balanceNanos).toBeGreaterThanOrEqual(-CALL_COST);
    });

    test("credit taken on one instance stops the other's calls at once, though it held a block of that credit in advance", async () => {
      const account = await createAccount(a, { CreditGranted: 1000 });
      await waitFor(async () => (await chat(b, account.key)).status === 200, 5000, "B to serve the account");
      // B admits these against a block of the account's credit reserved in advance (allowances).
      for (let i = 0; i < 3; i++) expect((await chat(b, account.key)).status).toBe(200);
      // Every charge written, the owner takes all that is left: nothing is available any more.
      await flushBoth(redis.url, a, b);
      const left = (await api(a, "/dashboard/status", { key: account.key })).body.balance as number;
      const taken = await api(a, `/x-users/${account.id}`, { method: "PUT", body: { CreditGranted: -left } });
      expect(taken.status).toBe(200);
      // The bus tells B (within milliseconds); its block goes back and Redis, which holds far
      // less than a call's reservation now, decides the very next call. (Without that, B went
      // on admitting against the block it held, up to a second after it took it.)
      await Bun.sleep(100);
      expect((await chat(b, account.key)).status).not.toBe(200);
    });

    test("a credit grant sent to both instances at once under one Idempotency-Key is granted once; the later one replays or waits", async () => {
      const account = await createAccount(a);
      const grant = (router: TestRouter) =>
        router.fetch(`/x-users/${account.id}`, { method: "PUT", headers: { "content-type": "application/json", "idempotency-key": "both-1" }, body: JSON.stringify({ CreditGranted: 6 }) });
      const replies = await Promise.all([grant(a), grant(b)]);
      const statuses = replies.map((reply) => reply.status).sort((x, y) => x - y);
      // One ran; the other saw it running (409) or replayed its answer (200).
      expect(statuses[0]).toBe(200);
      expect([200, 409]).toContain(statuses[1]!);
      // Sent again on the other instance, it is a replay.
      const again = await grant(b);
      expect(again.status).toBe(200);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      const balances = await Promise.all([a, b].map(async (r) => (await api(r, "/dashboard/status", { key: account.key })).body.balance as number));
      expect(balances).toEqual([6, 6]);
    });

    test("RPM 10 across both instances admits exactly 10", async () => {
      const account = await createAccount(a, { CreditGranted: 1000, RPM: 10 });
      const replies = await Promise.all(Array.from({ length: 24 }, (_, i) => chat(i % 2 === 0 ? a : b, account.key)));
      expect(replies.filter((r) => r.status === 200)).toHaveLength(10);
      for (const reply of replies.filter((r) => r.status !== 200)) expect(reply.body.error.code).toBe("rpm_limit_reached");
    });

    test("an RPM set on one counts the calls both made before it, though no limit checked them then", async () => {
      // An account with a limit has all its windows counted, the minute's too (without one, none is).
      const account = await createAccount(a, { CreditGranted: 1000, RPH: 1000 });
      // The minute's window is counted without a check: each instance gives these to Redis with its settlements.
      const before = await Promise.all(Array.from({ length: 6 }, (_, i) => chat(i % 2 === 0 ? a : b, account.key)));
      for (const reply of before) expect(reply.status).toBe(200);
      expect((await api(a, `/x-users/${account.id}`, { method: "PUT", body: { RPM: 10 } })).status).toBe(200);
      // B's calls carry the limit once B heard of it; each call until then counts too.
      let probes = 0;
      await waitFor(
        async () => {
          const reply = await chat(b, account.key);
          if (reply.status === 200) probes++;
          return reply.headers.get("x-ratelimit-limit-requests") === "10";
        },
        5000,
        "B to apply the RPM set on A",
      );
      const after = await Promise.all(Array.from({ length: 24 }, (_, i) => chat(i % 2 === 0 ? a : b, account.key)));
      const admitted = after.filter((reply) => reply.status === 200).length;
      // Within the minute: exactly 10 in all, the six made before the limit among them.
      expect(6 + probes + admitted).toBe(10);
      for (const reply of after.filter((r) => r.status !== 200)) expect(reply.body.error.code).toBe("rpm_limit_reached");
    });

    test("a key rotated on one is refused on the other once its bus delivered, and the new key works there", async () => {
      const account = await createAccount(a, { CreditGranted: 1000 });
      // B knows the key (its principal cache holds it) before the rotation.
      expect((await chat(b, account.key)).status).toBe(200);
      const rotated = await api(a, "/x-self", { key: account.key, body: { confirm: `${a.deps.clock.businessDate()}-ROTATE-SELF` } });
      expect(rotated.status).toBe(200);
      const fresh = rotated.body.APIKey as string;
      expect(fresh).toBeString();
      expect((await api(a, "/dashboard/status", { key: account.key })).status).toBe(401);
      await waitFor(async () => (await api(b, "/dashboard/status", { key: account.key })).status === 401, 5000, "B to refuse the rotated key");
      expect((await chat(b, account.key)).status).toBe(401);
      expect((await chat(b, fresh)).status).toBe(200);
    });

    test("a key rotated on one closes the realtime session it opened on the other", async () => {
      // A WSS realtime upstream that greets each session (the test CA signs its certificate).
      const realtime = greetingRealtimeUpstream();
      try {
        await api(a, "/x-config", { method: "PUT", body: { LEVEL_MAPPER: "gpt-realtime-*=5" } });
        expect((await api(a, "/x-keys", { body: { Provider: `https://127.0.0.1:${realtime.port}/v1`, SecretKey: "sk-scale-rt-0123456789abcdef", Level: 5, Status: true } })).status).toBe(201);
        const account = await createAccount(a, { CreditGranted: 1000 });
        const messages: string[] = [];
        let closed: { code: number; reason: string } | undefined;
        // The session lives on B; the rotation happens on A.
        await waitFor(async () => (await api(b, "/dashboard/status", { key: account.key })).status === 200, 5000, "B to know the account");
        const open = async () => {
          const ws = new WebSocket(`${b.url.replace(/^http/, "ws")}/v1/realtime?model=gpt-realtime-x`, { headers: { authorization: `Bearer ${account.key}` } } as unknown as string[]);
          ws.onmessage = (event) => messages.push(String(event.data));
          ws.onclose = (event) => (closed = { code: event.code, reason: event.reason });
          return ws;
        };
        await waitFor(async () => {
          if (messages.some((m) => m.includes("session.created"))) return true;
          if (closed || messages.length === 0) {
            closed = undefined;
            messages.length = 0;
            await open();
            await Bun.sleep(200);
          }
          return messages.some((m) => m.includes("session.created")) || undefined;
        }, 10_000, "a realtime session on B (once B routes the model to the key added on A)");
        const rotated = await api(a, "/x-self", { key: account.key, body: { confirm: `${a.deps.clock.businessDate()}-ROTATE-SELF` } });
        expect(rotated.status).toBe(200);
        await waitFor(() => closed, 5000, "B to close the session of the rotated key");
        expect(closed!.code).toBe(1008);
        const error = messages.map((m) => JSON.parse(m)).find((event) => event.type === "error");
        expect(error?.error?.code).toBe("session_revoked");
      } finally {
        await api(a, "/x-config", { method: "PUT", body: { LEVEL_MAPPER: "" } });
        realtime.stop(true);
      }
    });

    test("errors that trip SWITCH_OVER on one switch both", async () => {
      let failing = 0;
      const primary = startMockUpstream();
      primary.route("POST", "/v1/chat/completions", () => {
        failing++;
        return json({ error: { message: "down" } }, 500);
      });
      const backup = startMockUpstream();
      backup.route("POST", "/v1/chat/completions", (req) => completion(req.json.model, "from backup"));
      try {
        const config = await api(a, "/x-config", { method: "PUT", body: { LEVEL_MAPPER: "acme-switch=3", SWITCH_OVER: "3=4" } });
        expect(config.status).toBe(200);
        for (const [provider, level, noSleep] of [[primary.url, 3, true], [backup.url, 4, false]] as const) {
          const key = await api(a, "/x-keys", { body: { Provider: `${provider}/v1`, SecretKey: `sk-level-${level}-0123456789abcdef`, Level: level, Status: true, NoSleep: noSleep } });
          expect(key.status).toBe(201);
        }
        const account = await createAccount(a, { CreditGranted: 1000 });
        // B has the new config and keys once a call there reaches the backup.
        await waitFor(async () => (await chat(b, account.key, "acme-switch")).body?.choices?.[0]?.message?.content === "from backup", 5000, "B to route acme-switch");
        // Six errors in a minute on A switch Level 3 (B's probing call above counts too).
        while (!a.deps.switchOver.isSwitched(3)) {
          const reply = await chat(a, account.key, "acme-switch");
          expect(reply.body.choices[0].message.content).toBe("from backup");
          expect(failing).toBeLessThanOrEqual(6);
        }
        const errorsSeen = failing;
        for (let i = 0; i < 4; i++) expect((await chat(b, account.key, "acme-switch")).body.choices[0].message.content).toBe("from backup");
        // B went straight to the backup: the failing primary saw nothing more.
        expect(failing).toBe(errorsSeen);
        expect(b.deps.switchOver.isSwitched(3)).toBe(true);
      } finally {
        await api(a, "/x-config", { method: "PUT", body: { LEVEL_MAPPER: "", SWITCH_OVER: "" } });
        await primary.stop();
        await backup.stop();
      }
    });

    test("bills and live usage are identical from both", async () => {
      const account = await createAccount(a, { CreditGranted: 1000 });
      for (let i = 0; i < 6; i++) expect((await chat(i % 2 === 0 ? a : b, account.key)).status).toBe(200);
      await flushBoth(redis.url, a, b);
      // The account's own live usage and bill, and the owner's bill of everyone.
      for (const [path, key] of [["/dashboard/live", account.key], ["/dashboard/bill", account.key], ["/x-bill", a.ownerKey]] as const) {
        const [fromA, fromB] = await Promise.all([api(a, path, { key }), api(b, path, { key })]);
        expect([path, fromA.status]).toEqual([path, 200]);
        expect(fromB.body).toEqual(fromA.body);
      }
      const live = (await api(b, "/dashboard/live", { key: account.key })).body;
      expect(live.daily_usage.Requests).toBe(6);
    });

    // Last: it stops Redis (which loses everything it held).
    test("Redis away: model calls get 503 naming Redis in their family's envelope, management reads work, /readyz is 503; all recovers when it returns", async () => {
      const account = await createAccount(a, { CreditGranted: 1000 });
      expect((await chat(a, account.key)).status).toBe(200);
      await redis.stop();
      try {
        for (const router of [a, b]) {
          const openai = await chat(router, account.key);
          expect(openai.status).toBe(503);
          expect(openai.body.error.message).toContain("Redis");
          expect(JSON.stringify(openai.body)).not.toContain(redis.url);
          const anthropic = await api(router, "/v1/messages", {
            key: account.key,
            body: { model: "acme-chat", max_tokens: 20, messages: [{ role: "user", content: "hi" }] },
          });
          expect(anthropic.status).toBe(503);
          expect(anthropic.body.type).toBe("error");
          expect(anthropic.body.error.message).toContain("Redis");
          // Management reads come from PostgreSQL.
          expect((await api(router, "/x-users")).status).toBe(200);
          expect((await api(router, "/x-keys")).status).toBe(200);
          await waitFor(async () => (await router.fetch("/readyz", { key: null })).status === 503, 5000, "/readyz to say Redis is down");
          const health = await router.fetch("/healthz", { key: null });
          expect(health.status).toBe(200);
          expect(await health.json()).toEqual({ status: "ok", database: "up", redis: "down" });
          expect(await (await router.fetch("/metrics")).text()).toContain('router_dependency_up{dependency="redis"} 0');
        }
      } finally {
        await redis.start();
      }
      for (const router of [a, b]) {
        await waitFor(async () => (await chat(router, account.key)).status === 200, 10_000, "calls to be served again");
        await waitFor(async () => (await router.fetch("/readyz", { key: null })).status === 200, 5000, "/readyz to be ready again");
      }
    }, 30_000);
  });

  describe("shutdown", () => {
    test("/readyz answers 503 from the moment a graceful stop begins", async () => {
      const c = await startRouter({ dataDir, config: { database, redis: redis.url }, pricing: false });
      const ready = await c.fetch("/readyz", { key: null });
      expect(ready.status).toBe(200);
      const stopped = c.stop();
      expect(c.deps.lifecycle.stopping).toBe(true);
      const { createApp } = await import("../../src/app.ts");
      const readyz = await createApp(c.deps).handle(new Request("http://router/readyz"));
      expect(readyz.status).toBe(503);
      expect(((await readyz.json()) as { status: string }).status).toBe("stopping");
      await stopped;
      expect(readFileSync(join(dataDir, "initial-owner-key"), "utf8").trim()).toBe(a.ownerKey);
    });
  });
}

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { skipServices } from "../helpers/postgres-server.ts";
import { startRouter, waitFor } from "../helpers/router.ts";
import { writeEverything } from "../helpers/redis-usage.ts";
import { startRedisServer } from "../helpers/redis-server.ts";
import { runRouterCommand } from "../helpers/router-command.ts";
import { serveOnce } from "../helpers/serve-once.ts";
import pkg from "../../package.json" with { type: "json" };
import { PAIR_CALL_COST, startScaleOutPair, type ScaleOutPair } from "../helpers/scale-out-pair.ts";

/**
 * A rolling upgrade: instances of two versions side by side on one PostgreSQL and one
 * Redis while they are replaced one at a time. Without two builds, the newer version is
 * simulated by what it would leave in the shared services: bus messages of a kind this
 * router does not know, usage rows in Redis in a form it cannot read, a migration it does
 * not know applied under it. What the older instance must do: keep serving, lose no
 * usage row, drop what it cannot follow rather than misread it.
 */

const chat = (pair: ScaleOutPair, router: "a" | "b", key: string) =>
  api(pair[router], "/v1/chat/completions", { key, body: { model: "acme-chat", max_tokens: 20, messages: [{ role: "user", content: "hi" }] } });

if (!skipServices) {
  let pair: ScaleOutPair;
  let sql: SQL;

  beforeAll(async () => {
    pair = await startScaleOutPair("rolling", "sk-rolling-upstream-0001");
    sql = new SQL(pair.config.database!);
  }, 60_000);

  afterAll(async () => {
    await sql?.close();
    await pair?.stop();
  });

  describe("an older instance beside a newer one", () => {
    test("a bus message of a kind it does not know (or a known kind it cannot read) drops its caches instead of being ignored", async () => {
      // An unknown kind, a known kind with a field of another type, and another encoding altogether.
      const messages = [
        (id: number) => JSON.stringify({ from: "a-newer-instance", event: { kind: "accounts-v2", accountIds: [id] } }),
        (id: number) => JSON.stringify({ from: "a-newer-instance", event: { kind: "account", accountId: String(id) } }),
        (id: number) => `v2|account|${id}`,
      ];
      for (const message of messages) {
        const { key, id } = await createAccount(pair.a, { CreditGranted: 1000 });
        // b reads the account once: it is cached there (for a minute).
        expect((await chat(pair, "b", key)).status).toBe(200);
        // A newer instance deletes it in a way this version announces differently.
        await sql`UPDATE accounts SET deleted_at = ${Date.now()} WHERE id = ${id}`;
        await pair.redisClient.send("PUBLISH", ["router:invalidation", message(id)]);
        await waitFor(async () => (await chat(pair, "b", key)).status === 401, 5000, `b to drop its caches on ${message(id)}`);
      }
    }, 30_000);

    test("a usage row in Redis it cannot read (a newer form) does not hold up the rows claimed with it, and stays queued for an instance that can", async () => {
      const [owner] = await sql`SELECT id FROM accounts WHERE is_owner ORDER BY id LIMIT 1`;
      const now = Date.now();
      const row = {
        requestId: `rolling-row-${now}`,
        accountId: owner.id,
        day: new Date(now).toISOString().slice(0, 10),
        createdAt: now,
        endpoint: "/v1/chat/completions",
        requestedModel: "acme-chat",
        effectiveModel: "acme-chat",
        level: 1,
        keyId: null,
        status: 200,
        stream: false,
        promptTokens: 1,
        completionTokens: 1,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
        source: "upstream",
        latencyMs: 5,
        costNanos: 0,
        extra: null,
        // A field a newer version adds: this one writes the row without it.
        serviceTier: "flex",
      };
      const unreadable = `V2${JSON.stringify({ v: 2, row })}`;
      // Queued together, so one claim takes both.
      await pair.redisClient.send("RPUSH", ["router:usage:queue", unreadable, JSON.stringify(row)]);
      await waitFor(async () => {
        for (const router of [pair.a, pair.b]) await router.deps.usageRecorder.flush().catch(() => {});
        const [found] = await sql`SELECT count(*)::int AS n FROM usage_events WHERE request_id = ${row.requestId}`;
        return found.n === 1;
      }, 10_000, "the readable row to be written");
      // The row this version cannot read is neither dropped nor stuck in a claim: it waits in the queue.
      await waitFor(async () => ((await pair.redisClient.send("LRANGE", ["router:usage:queue", "0", "-1"])) as string[]).includes(unreadable), 5000, "the unreadable row to wait in the queue");
      // Claimed alone, again and again by either instance, it keeps neither from writing what they settle.
      const before = (await sql`SELECT count(*)::int AS n FROM usage_events`)[0].n;
      for (let round = 0; round < 3; round++) {
        await Promise.all([pair.a, pair.b].map((router) => router.deps.usageRecorder.flush().catch(() => {})));
        expect((await chat(pair, "a", pair.a.ownerKey)).status).toBe(200);
        expect((await chat(pair, "b", pair.b.ownerKey)).status).toBe(200);
      }
      await waitFor(async () => {
        for (const router of [pair.a, pair.b]) await router.deps.usageRecorder.flush().catch(() => {});
        return (await sql`SELECT count(*)::int AS n FROM usage_events`)[0].n === before + 6;
      }, 10_000, "the calls' usage rows to be written");
      // Still there once, in the queue (between a claim and its requeue it is in that claim for a moment).
      const queued = async () => ((await pair.redisClient.send("LRANGE", ["router:usage:queue", "0", "-1"])) as string[]).filter((text) => text === unreadable).length;
      await waitFor(async () => (await queued()) === 1, 5000, "the unreadable row back in the queue");
      await waitFor(async () => Number(await pair.redisClient.send("LREM", ["router:usage:queue", "0", unreadable])) === 1, 5000, "the unreadable row removed");
    }, 30_000);

    test("a newer version's additive migration applied under it: both keep serving and writing, every call billed once; restarted, it refuses naming both versions", async () => {
      const account = await createAccount(pair.a, { CreditGranted: 1 });
      for (const router of ["a", "b"] as const) expect((await chat(pair, router, account.key)).status).toBe(200);
      // What the next version may add while this one runs: a table, a column with a
      // default on the busiest table, a nullable one on accounts, an index; recorded under
      // a name this router does not know.
      await sql.begin(async (tx) => {
        await tx`CREATE TABLE rolling_next (id integer PRIMARY KEY, note text)`;
        await tx`ALTER TABLE usage_events ADD COLUMN service_tier text NOT NULL DEFAULT 'default'`;
        await tx`ALTER TABLE accounts ADD COLUMN display_color text`;
        await tx`CREATE INDEX usage_events_tier ON usage_events (service_tier, day)`;
        await tx`INSERT INTO schema_migrations (name, applied_at, router_version) VALUES ('0099_next_version', ${Date.now()}, '9.9.0')`;
      });
      const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => chat(pair, i % 2 === 0 ? "a" : "b", account.key)));
      for (const reply of replies) expect(reply.status).toBe(200);
      // Management writes and reads on the older schema's code.
      const child = await createAccount(pair.b, { CreditGranted: 1 });
      expect((await chat(pair, "b", child.key)).status).toBe(200);
      expect((await api(pair.a, `/x-users/${child.id}`)).status).toBe(200);
      await writeEverything(() => pair.redisClient, pair.a, pair.b);
      const [rows] = await sql`SELECT count(*)::int AS n FROM usage_events WHERE account_id = ${account.id}`;
      expect(rows.n).toBe(10);
      const balances = await Promise.all([pair.a, pair.b].map(async (r) => (await api(r, "/dashboard/status", { key: account.key })).body.balance as number));
      expect(balances.map((b) => Math.round(b * 1e9))).toEqual([1e9 - 10 * PAIR_CALL_COST, 1e9 - 10 * PAIR_CALL_COST]);
      // An instance of this version started again (a crash, a restart) cannot know what
      // else the newer version changed: it refuses, naming both versions.
      const restarted = startRouter({ dataDir: pair.dataDir, config: pair.config, pricing: false });
      await expect(restarted).rejects.toThrow(`migrated by router 9.9.0 (this is router ${pkg.version}, which does not know its migrations 0099_next_version)`);
      // The running instances still serve.
      expect((await chat(pair, "a", account.key)).status).toBe(200);
      // (The tests after this one start instances of this version again.)
      await sql`DELETE FROM schema_migrations WHERE name = '0099_next_version'`;
    }, 60_000);

    test("restarted during a rolling upgrade, it starts on migrations a newer router of its own generation applied (they only add), with a warning naming them", async () => {
      const [{ generation }] = await sql`SELECT DISTINCT generation FROM schema_migrations WHERE generation IS NOT NULL`;
      await sql`CREATE TABLE IF NOT EXISTS rolling_next_two (id integer PRIMARY KEY)`;
      await sql`INSERT INTO schema_migrations (name, applied_at, router_version, generation) VALUES ('0099_next_same', ${Date.now()}, '0.9.0', ${generation})`;
      try {
        const restarted = await startRouter({ dataDir: pair.dataDir, config: pair.config, pricing: false });
        try {
          expect(restarted.logs.join("\n")).toContain("0099_next_same");
          expect(restarted.logs.join("\n")).toContain("router 0.9.0");
          expect((await api(restarted, "/v1/chat/completions", { key: pair.a.ownerKey, body: { model: "acme-chat", max_tokens: 20, messages: [{ role: "user", content: "hi" }] } })).status).toBe(200);
        } finally {
          await restarted.stop();
        }
        // Of another generation (or of a router that recorded none), still refused.
        await sql`UPDATE schema_migrations SET generation = ${generation + 1} WHERE name = '0099_next_same'`;
        await expect(startRouter({ dataDir: pair.dataDir, config: pair.config, pricing: false })).rejects.toThrow("does not know its migrations 0099_next_same");
      } finally {
        await sql`DELETE FROM schema_migrations WHERE name = '0099_next_same'`;
      }
    }, 60_000);

    test("a version whose shared forms differ refuses to start beside live instances of the other, naming both versions; it starts once they stopped", async () => {
      // The running pair announce themselves with their version and shared-form generation.
      const entries = (await pair.redisClient.send("HGETALL", ["router:versions"])) as Record<string, string>;
      expect(Object.values(entries).length).toBeGreaterThanOrEqual(2);
      const [generation] = Object.values(entries)[0]!.split(" ");
      // An instance of another generation is live (its lease runs), as one of another release would be.
      await pair.redisClient.send("SET", ["router:lease:old-instance", "1", "PX", "30000"]);
      await pair.redisClient.send("HSET", ["router:versions", "old-instance", `${Number(generation) + 1} 9.9.0`]);
      const dbBefore = (await sql`SELECT count(*)::int AS n FROM schema_migrations`)[0].n;
      const refused = startRouter({ dataDir: pair.dataDir, config: pair.config, pricing: false });
      await expect(refused).rejects.toThrow(`an instance of router 9.9.0 runs on this Redis, and router ${pkg.version} cannot run beside it`);
      // `router serve` says it in one line and exits 1.
      const served = await serveOnce(["--data", pair.dataDir, "--database", pair.config.database!, "--redis", pair.config.redis!]);
      expect({ started: served.started, exitCode: served.exitCode }).toEqual({ started: false, exitCode: 1 });
      expect(served.stderr).toContain(`router: an instance of router 9.9.0 runs on this Redis, and router ${pkg.version} cannot run beside it`);
      expect(served.stderr).toContain("stop every instance of router 9.9.0 first");
      // Refused before it touched the database.
      expect((await sql`SELECT count(*)::int AS n FROM schema_migrations`)[0].n).toBe(dbBefore);
      // Of the same generation (a rolling upgrade the release allows), it starts.
      await pair.redisClient.send("HSET", ["router:versions", "old-instance", `${generation} 0.0.1`]);
      const beside = await startRouter({ dataDir: pair.dataDir, config: pair.config, pricing: false });
      expect((await chat(pair, "a", pair.a.ownerKey)).status).toBe(200);
      await beside.stop();
      // Stopped cleanly, an instance no longer counts: its entry goes at once.
      const after = (await pair.redisClient.send("HGETALL", ["router:versions"])) as Record<string, string>;
      expect(Object.keys(after)).toHaveLength(Object.keys(entries).length + 1);
      // And once the other generation's lease ended (stopped, or killed 30 s ago), the newer one starts.
      await pair.redisClient.send("HSET", ["router:versions", "old-instance", `${Number(generation) + 1} 9.9.0`]);
      await pair.redisClient.send("DEL", ["router:lease:old-instance"]);
      const started = await startRouter({ dataDir: pair.dataDir, config: pair.config, pricing: false });
      await started.stop();
      expect(Object.keys((await pair.redisClient.send("HGETALL", ["router:versions"])) as Record<string, string>)).not.toContain("old-instance");
    }, 60_000);

    test("a starting instance is seen by the next one's check as soon as it passed its own, before it migrates: two generations starting at once cannot both run", async () => {
      const before = Object.keys((await pair.redisClient.send("HGETALL", ["router:versions"])) as Record<string, string>);
      // The migrations' advisory lock held here keeps the starting instance just after its check.
      const hold = await sql.reserve();
      await hold`SELECT pg_advisory_lock(${0x726f7574}, 2)`;
      let starting: Promise<Awaited<ReturnType<typeof startRouter>>> | undefined;
      try {
        starting = startRouter({ dataDir: pair.dataDir, config: pair.config, pricing: false });
        const added = await waitFor(async () => {
          const now = (await pair.redisClient.send("HGETALL", ["router:versions"])) as Record<string, string>;
          return Object.keys(now).find((owner) => !before.includes(owner));
        }, 10_000, "the starting instance's entry");
        expect(await pair.redisClient.send("EXISTS", [`router:lease:${added}`])).toBe(1);
      } finally {
        await hold`SELECT pg_advisory_unlock(${0x726f7574}, 2)`;
        hold.release();
      }
      const started = await starting!;
      expect((await chat(pair, "a", pair.a.ownerKey)).status).toBe(200);
      await started.stop();
      // Its one entry went with its clean stop.
      expect(Object.keys((await pair.redisClient.send("HGETALL", ["router:versions"])) as Record<string, string>).sort()).toEqual(before.sort());
    }, 60_000);

    test("after a newer generation ran on this Redis, this version refuses to start (a downgrade would misread its data), naming both versions", async () => {
      const entries = (await pair.redisClient.send("HGETALL", ["router:versions"])) as Record<string, string>;
      const [generation] = Object.values(entries)[0]!.split(" ");
      // The newest generation that ran here is kept: this one, so far.
      expect(await pair.redisClient.send("GET", ["router:generation"])).toBe(`${generation} ${pkg.version}`);
      // A newer generation ran and stopped (no instance of it is live).
      await pair.redisClient.send("SET", ["router:generation", `${Number(generation) + 1} 9.9.0`]);
      try {
        await expect(startRouter({ dataDir: pair.dataDir, config: pair.config, pricing: false })).rejects.toThrow(
          `router 9.9.0 ran on this Redis and keeps data there in a form router ${pkg.version} cannot read`,
        );
      } finally {
        await pair.redisClient.send("SET", ["router:generation", `${generation} ${pkg.version}`]);
      }
      // The running instances are not stopped by it.
      expect((await chat(pair, "b", pair.b.ownerKey)).status).toBe(200);
    }, 60_000);

    test("router migrate, run with the service's environment, refuses to migrate under live instances of another generation", async () => {
      const entries = (await pair.redisClient.send("HGETALL", ["router:versions"])) as Record<string, string>;
      const [generation] = Object.values(entries)[0]!.split(" ");
      await pair.redisClient.send("SET", ["router:lease:old-instance", "1", "PX", "30000"]);
      await pair.redisClient.send("HSET", ["router:versions", "old-instance", `${Number(generation) + 1} 9.9.0`]);
      try {
        const env = { ROUTER_DATABASE: pair.config.database!, ROUTER_REDIS: pair.config.redis! };
        const refused = await runRouterCommand(["migrate"], { env });
        expect({ exitCode: refused.exitCode, stdout: refused.stdout }).toEqual({ exitCode: 1, stdout: "" });
        expect(refused.stderr).toContain(`an instance of router 9.9.0 runs on this Redis, and router ${pkg.version} cannot run beside it`);
        // Of the same generation, it runs.
        await pair.redisClient.send("HSET", ["router:versions", "old-instance", `${generation} 0.0.1`]);
        const done = await runRouterCommand(["migrate"], { env });
        expect(done.exitCode).toBe(0);
        expect(done.stdout).toContain("database is up to date");
      } finally {
        await pair.redisClient.send("DEL", ["router:lease:old-instance"]);
      }
    }, 60_000);

    test("with Redis away at start, the version check is skipped with a warning naming no password, and the instance starts, not ready until Redis answers", async () => {
      const away = await startRedisServer({ password: "rolling-Secret-42" });
      try {
        await away.stop();
        const started = await startRouter({ dataDir: pair.dataDir, config: { database: pair.config.database, redis: `redis://:rolling-Secret-42@127.0.0.1:${away.port}` }, pricing: false });
        try {
          expect(started.logs.join("\n")).toContain("the versions of the instances already running could not be checked");
          expect(started.logs.join("\n")).not.toContain("rolling-Secret-42");
          expect((await api(started, "/readyz")).status).toBe(503);
        } finally {
          await started.stop();
        }
      } finally {
        await away.close();
      }
    }, 60_000);
  });
}

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RedisClient, SQL, type Socket } from "bun";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, serveBinary, type ServingBinary } from "../helpers/binary.ts";
import { chatCompletion, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.ts";
import { usageRowsInRedis } from "../helpers/redis-usage.ts";
import { tempDir, waitFor } from "../helpers/router.ts";

/**
 * SIGKILL of one compiled instance (`dist/router serve --database … --redis …`) while
 * another serves on the same PostgreSQL and Redis: "never lose a billable call on abort,
 * restart or failover". Both are processes of their own, driven over HTTP; what the
 * database holds is read with SQL, what waits in Redis with a script. A killed instance's
 * lease (30 s) is removed here instead of waited for, as when it expires.
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
/** (10 × 2 + 10 × 8) × 1000 nano-credits per call (Rates 1). */
const CALL_COST = (10 * 2 + 10 * 8) * 1000;

/**
 * A TCP proxy in front of Redis that passes everything until `freezeAt` is armed, then
 * swallows the first command chunk that carries `marker` and every byte sent after it:
 * the instance behind it is cut off at that exact step (the test then kills it).
 */
async function freezingProxy(target: URL) {
  let marker: Buffer | undefined;
  let frozen = false;
  let onFrozen = () => {};
  interface Link {
    upstream?: Socket<undefined>;
    early: Uint8Array[];
  }
  const server = Bun.listen<Link>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      async open(client) {
        client.data = { early: [] };
        const upstream = await Bun.connect({
          hostname: target.hostname,
          port: Number(target.port),
          socket: {
            data: (_, bytes) => void client.write(bytes),
            close: () => void client.end(),
          },
        });
        client.data.upstream = upstream;
        for (const bytes of client.data.early.splice(0)) upstream.write(bytes);
      },
      data(client, bytes) {
        if (frozen) return;
        if (marker && Buffer.from(bytes).includes(marker)) {
          frozen = true;
          onFrozen();
          return;
        }
        if (client.data.upstream) client.data.upstream.write(bytes);
        else client.data.early.push(new Uint8Array(bytes));
      },
      close: (client) => void client.data.upstream?.end(),
    },
  });
  return {
    url: `redis://127.0.0.1:${server.port}`,
    /** Resolves once a chunk carrying `text` was swallowed (and nothing passes from then on). */
    freezeAt(text: string): Promise<void> {
      marker = Buffer.from(text);
      return new Promise((resolve) => (onFrozen = resolve));
    },
    stop: () => server.stop(true),
  };
}

const { dir, bin } = isolatedBinary();

describe("the data directory's disk refusing writes (embedded SQLite)", () => {
  test("a first start that cannot write its secret key (a full disk, a file-size limit) fails naming the file and leaves no empty key: the next start, with room, starts", async () => {
    const data = tempDir("router-nospace-");
    // `ulimit -f 0`: every write past 0 bytes fails (EFBIG, the signal ignored), as on a full disk.
    const refused = Bun.spawnSync(["sh", "-c", `trap '' XFSZ; ulimit -f 0; exec "$0" serve --port 0 --data "$1" --timezone UTC`, bin, data], {
      cwd: dir,
      env: { PATH: "/usr/bin:/bin", HOME: dir },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr.toString()).toContain(join(data, "secret.key"));
    // (Written in place, the key file was left empty, and every later start refused it:
    // "does not hold a 32-byte base64 key", until removed by hand.)
    const server = await serveBinary(bin, ["--port", "0", "--data", data, "--timezone", "UTC"], { cwd: dir });
    try {
      expect(readFileSync(join(data, "secret.key"), "utf8").trim()).toHaveLength(44);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      server.kill("SIGTERM");
      expect(await server.exited).toBe(0);
    }
  }, 30_000);
});

if (!skipServices) {
  let postgres: PostgresServer;
  let redis: RedisServer;
  let redisClient: RedisClient;
  let sql: SQL;
  let databaseUrl: string;
  let upstream: MockUpstream;
  const running: ServingBinary[] = [];

  beforeAll(async () => {
    [postgres, redis] = await Promise.all([startPostgres(), startRedisServer()]);
    redisClient = new RedisClient(redis.url);
    databaseUrl = postgres.url(await postgres.createDatabase());
    sql = new SQL(databaseUrl, { max: 2 });
    upstream = startMockUpstream();
    upstream.route("POST", "/v1/chat/completions", async (req) => {
      const model = req.json.model as string;
      if (req.json.stream === true) {
        const chunk = (content: string) => ({ id: "s", object: "chat.completion.chunk", created: 1, model, choices: [{ index: 0, delta: { content }, finish_reason: null }] });
        return sse([chunk("one "), chunk("two "), chunk("three "), { id: "s", object: "chat.completion.chunk", created: 1, model, choices: [], usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 } }], {
          delayMs: 300,
          done: true,
        });
      }
      if (model === "acme-slow") await Bun.sleep(1500);
      return chatCompletion(model, { prompt: 10, completion: 10 });
    });
  }, 60_000);

  afterAll(async () => {
    for (const server of running) server.kill("SIGKILL");
    await Promise.all(running.map((server) => server.exited));
    redisClient?.close();
    await sql?.close();
    await upstream?.stop();
    await redis?.close();
    await postgres?.stop();
  });

  interface Instance {
    server: ServingBinary;
    /** Its State's owner id (its lease is `router:lease:<owner>`). */
    owner: string;
  }

  const leases = async () => new Set((await redisClient.send("KEYS", ["router:lease:*"])) as string[]);

  /** `router serve` on the shared database and data directory (one sealing key), Redis at `redisUrl`. */
  async function instance(data: string, redisUrl = redis.url, args: string[] = []): Promise<Instance> {
    const before = await leases();
    const server = await serveBinary(bin, ["--port", "0", "--data", data, "--timezone", "UTC", "--database", databaseUrl, "--redis", redisUrl, ...args], { cwd: dir, timeoutMs: 20_000 });
    running.push(server);
    // Its lease is the one that was not there before it started.
    const lease = await waitFor(async () => [...(await leases())].find((key) => !before.has(key)), 5000, "the new instance's lease");
    return { server, owner: lease!.slice("router:lease:".length) };
  }

  /** Kills an instance and ends its lease at once (as 30 s without heartbeats would). */
  async function killed(target: Instance): Promise<void> {
    target.server.kill("SIGKILL");
    await target.server.exited;
    await redisClient.send("DEL", [`router:lease:${target.owner}`]);
  }

  const call = (server: ServingBinary, path: string, key: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method: body === undefined ? "GET" : path.startsWith("/x-config") ? "PUT" : "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  /** A priced deployment with one provider key on the mock upstream (once per data directory) and a funded account. */
  async function provision(server: ServingBinary, owner: string, credit: number, first: boolean): Promise<{ id: number; key: string }> {
    if (first) {
      expect((await call(server, "/x-config", owner, { PRICING })).status).toBe(200);
      expect((await call(server, "/x-keys", owner, { Provider: `${upstream.url}/v1`, SecretKey: "sk-kill-0123456789abcdef", Level: 1, Status: true })).status).toBe(201);
    }
    const created = await call(server, "/x-users", owner, { Email: `kill-${Math.random().toString(36).slice(2, 8)}@example.com`, CreditGranted: credit });
    expect(created.status).toBe(201);
    const body = (await created.json()) as { ID: number; APIKey: string };
    return { id: body.ID, key: body.APIKey };
  }

  async function chat(server: ServingBinary, key: string, model = "acme-chat", stream = false): Promise<{ status: number; id: string; cut: boolean }> {
    const res = await call(server, "/v1/chat/completions", key, { model, max_tokens: 20, stream, messages: [{ role: "user", content: "hi" }] }).catch(() => undefined);
    if (res === undefined) return { status: 0, id: "", cut: true };
    let cut = false;
    await res.text().catch(() => (cut = true));
    return { status: res.status, id: res.headers.get("x-request-id") ?? "", cut };
  }

  const balanceOf = async (server: ServingBinary, key: string) => Math.round((((await (await call(server, "/dashboard/status", key)).json()) as { balance: number }).balance) * 1e9);
  const rowsOf = async (accountId: number) =>
    ((await sql`SELECT request_id, cost_nanos FROM usage_events WHERE account_id = ${accountId}`) as Array<{ request_id: string; cost_nanos: string | number }>).map((row) => ({
      id: row.request_id,
      cost: Number(row.cost_nanos),
    }));
  /** Nothing waits in Redis: every row that reached it is in the database. */
  const drained = () => waitFor(async () => (await usageRowsInRedis(redisClient)) === 0, 15_000, "every usage row in Redis to be written");

  describe("two compiled instances on PostgreSQL + Redis, one killed", () => {
    let data: string;
    let ownerKey: string;
    let a: Instance;
    let provisioned = false;

    beforeAll(async () => {
      data = tempDir("router-scale-kill-");
      a = await instance(data);
      ownerKey = readFileSync(join(data, "initial-owner-key"), "utf8").trim();
    }, 30_000);

    const account = async (credit: number) => {
      const made = await provision(a.server, ownerKey, credit, !provisioned);
      provisioned = true;
      return made;
    };

    test("killed with calls in flight and rows waiting for a halted PostgreSQL: the survivor writes them once, and once the lease ends the account spends its whole balance there", async () => {
      const b = await instance(data);
      const acct = await account(1);
      for (const server of [a.server, b.server]) expect((await chat(server, acct.key)).status).toBe(200);
      await waitFor(async () => (await rowsOf(acct.id)).length === 2, 10_000, "the first calls' rows to be written");
      await postgres.halt();
      const answered: string[] = [];
      let slow: Array<Promise<unknown>> = [];
      try {
        for (let i = 0; i < 20; i++) {
          const result = await chat(b.server, acct.key);
          expect(result.status).toBe(200);
          answered.push(result.id);
        }
        await waitFor(async () => (await usageRowsInRedis(redisClient)) >= answered.length, 5000, "B's rows to wait in Redis");
        // Calls in flight on B (1.5 s upstream) hold reservations when it dies.
        const before = upstream.requests.length;
        slow = Array.from({ length: 4 }, () => chat(b.server, acct.key, "acme-slow"));
        await waitFor(() => upstream.requests.length - before >= 4, 5000, "the slow calls to reach the upstream");
        await killed(b);
      } finally {
        await postgres.resume();
      }
      await Promise.all(slow);
      await drained();
      const rows = await rowsOf(acct.id);
      expect(new Set(rows.map((row) => row.id)).size).toBe(rows.length);
      for (const id of answered) expect(rows.filter((row) => row.id === id)).toHaveLength(1);
      expect(rows).toHaveLength(2 + answered.length);
      // B's reservations ended with its lease: A reports (and admits against) the whole rest.
      await waitFor(async () => (await balanceOf(a.server, acct.key)) === 1e9 - rows.length * CALL_COST, 5000, "A to see the balance less exactly the rows stored");
    }, 40_000);

    test("killed between counting a settled call's charge in Redis and appending its usage row: once its lease ended, the charge no longer holds the account's credit", async () => {
      const proxy = await freezingProxy(new URL(redis.url));
      try {
        const b = await instance(data, proxy.url);
        // Credit for three calls: one on each instance, then one on B that is cut.
        const acct = await account((3 * CALL_COST) / 1e9);
        for (const server of [a.server, b.server]) expect((await chat(server, acct.key)).status).toBe(200);
        await waitFor(async () => (await rowsOf(acct.id)).length === 2, 10_000, "the first calls' rows to be written");
        // The append of B's next row (the only command that carries a row's JSON) goes only
        // once the call's settlement (its charge counted as unwritten, credit's `unflushed`)
        // ran in Redis. Cut there, then killed: the client had its answer; the row never
        // reached Redis.
        const frozen = proxy.freezeAt("costNanos");
        expect((await chat(b.server, acct.key)).status).toBe(200);
        await frozen;
        await killed(b);
        await drained();
        // The ledger holds the two rows and the account one call's worth: nothing is in
        // flight, nothing waits to be written, so its next call is admitted (alone, its
        // worst case past the balance). The cut call is the crash window's loss, unbilled.
        expect(await rowsOf(acct.id)).toHaveLength(2);
        expect(await balanceOf(a.server, acct.key)).toBe(CALL_COST);
        const next = await call(a.server, "/v1/chat/completions", acct.key, { model: "acme-chat", max_tokens: 20, messages: [{ role: "user", content: "hi" }] });
        expect({ status: next.status, body: await next.text() }).toMatchObject({ status: 200 });
      } finally {
        proxy.stop();
      }
    }, 40_000);

    test("B killed again and again under load while A serves: every row stored once, none unknown, the ledger charged exactly the rows, nothing left held", async () => {
      const acct = await account(1);
      const answered = new Set<string>();
      const begun = new Set<string>();
      let unknown = 0;
      let b = await instance(data);
      const loop = async (server: ServingBinary, stop: () => boolean) => {
        while (!stop()) {
          const result = await chat(server, acct.key);
          if (result.id !== "") begun.add(result.id);
          else unknown++;
          if (result.status === 200 && !result.cut) answered.add(result.id);
          if (result.status === 0) return;
        }
      };
      let done = false;
      const onA = Array.from({ length: 2 }, () => loop(a.server, () => done));
      const kills = 3;
      for (let kill = 0; kill < kills; kill++) {
        let stop = false;
        const current = b;
        const onB = Array.from({ length: 6 }, () => loop(current.server, () => stop));
        const before = answered.size;
        await waitFor(() => answered.size - before >= 300, 15_000, "calls to be answered");
        await killed(current);
        stop = true;
        await Promise.all(onB);
        b = await instance(data);
      }
      done = true;
      await Promise.all(onA);
      await drained();
      const rows = await rowsOf(acct.id);
      const stored = new Set(rows.map((row) => row.id));
      expect(stored.size).toBe(rows.length);
      expect(rows.filter((row) => !begun.has(row.id)).length).toBeLessThanOrEqual(unknown);
      const lost = [...answered].filter((id) => !stored.has(id)).length;
      console.log(`${kills} kills: ${answered.size} calls answered, ${rows.length} rows stored, ${lost} answered calls lost`);
      expect(lost).toBeLessThan(answered.size / 10);
      // The ledger is the grant less exactly the rows; nothing is held once the dead leases are gone.
      expect(await balanceOf(a.server, acct.key)).toBe(1e9 - rows.reduce((sum, row) => sum + row.cost, 0));
      await waitFor(async () => Number(await redisClient.send("HGET", [`router:c:${acct.id}`, "unflushed"])) === 0, 5000, "no charge to be held as unwritten");
      b.server.kill("SIGTERM");
      expect(await b.server.exited).toBe(0);
    }, 50_000);
  });
}

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createSealer, loadOrCreateSecretKey } from "../../src/store/crypto.ts";
import { openPostgresStore } from "../../src/store/postgres/index.ts";
import type { Store } from "../../src/store/store.ts";
import { createAccount, api } from "../helpers/owner-ops.ts";
import { chatCompletion, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { startRouter, tempDir, type TestRouter } from "../helpers/router.ts";
import { usageEvent } from "../helpers/usage-events.ts";
import { runRouterCommand } from "../helpers/router-command.ts";

// `router migrate-data` moves a single-machine deployment into PostgreSQL. The deployment
// is built through the router's HTTP API (accounts with credit, provider keys, config,
// a notice, calls that leave usage rows), the router is stopped, the command runs as a
// process, and the copy is then read through the PostgreSQL store.

const PROVIDER_SECRET = "sk-upstream-migrate-0123456789abcdef";
/** The test cluster trusts every local connection, so a password is accepted and ignored: it is here to be hidden. */
const PASSWORD = "hunter2-never-shown";
const PRICING = { ChatPricing: { "*": { InputText: 2, OutputText: 8 } } };

interface Result {
  exitCode: number;
  stdout: string;
  stderr: string;
}

async function router(args: string[], env: Record<string, string> = {}): Promise<Result> {
  const { exitCode, stdout, stderr } = await runRouterCommand(args, { env });
  // Whatever happened, the password never shows.
  expect(stdout + stderr).not.toContain(PASSWORD);
  return { exitCode, stdout, stderr };
}

/** What the SQLite file holds at rest, read after the router stopped. */
interface Expected {
  counts: Record<string, number>;
  accountIds: number[];
  balances: Map<number, number>;
  usageIds: number[];
  keyIds: number[];
  /** The highest provider key id SQLite ever gave out (a deleted key's included). */
  keySequence: number;
}

const TABLES = ["accounts", "credit_grants", "provider_keys", "settings", "usage_events", "usage_daily", "notices", "operation_log", "soft_limit_notices", "upstream_objects"];

describe.skipIf(skipServices)("router migrate-data", () => {
  let pg: PostgresServer;
  let upstream: MockUpstream;
  let dataDir: string;
  let scratch: string;
  let expected: Expected;
  const withPassword = (database: string) => pg.url(database).replace("postgres@", `postgres:${PASSWORD}@`);

  beforeAll(async () => {
    pg = await startPostgres();
    upstream = startMockUpstream();
    upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model, { prompt: 10, completion: 10 }));
    dataDir = tempDir("router-migrate-data-");
    scratch = tempDir("router-migrate-scratch-");

    const r: TestRouter = await startRouter({ dataDir, pricing: false });
    try {
      expect((await api(r, "/x-config", { method: "PUT", body: { PRICING } })).status).toBe(200);
      // A key deleted before the copy: its id must never be given out again.
      const kept = await api(r, "/x-keys", { body: { Provider: upstream.url, SecretKey: PROVIDER_SECRET, Level: 1, Status: true } });
      expect(kept.status).toBe(201);
      const dropped = await api(r, "/x-keys", { body: { Provider: upstream.url, SecretKey: "sk-upstream-dropped-0123456789abcdef", Level: 2, Status: true } });
      expect(dropped.status).toBe(201);
      expect((await api(r, `/x-keys/${dropped.body.ID}?force=true`, { method: "DELETE" })).status).toBe(200);

      const alice = await createAccount(r, { CreditGranted: 5 });
      const bob = await createAccount(r, { CreditGranted: 2 });
      const gone = await createAccount(r, { CreditGranted: 1 });
      expect((await api(r, `/x-users/${gone.id}`, { method: "DELETE" })).status).toBe(200);
      expect((await api(r, "/x-news", { body: { title: "moving", content: "to PostgreSQL" } })).status).toBe(201);
      for (const key of [alice.key, alice.key, bob.key]) {
        const res = await r.fetch("/v1/chat/completions", {
          method: "POST",
          key,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
        });
        expect(res.status).toBe(200);
        await res.text();
      }
      // History beyond one page of the copy (1,000 rows), on more than 1,000 rollup keys,
      // recorded as the relay records a call.
      for (let i = 0; i < 2500; i++) {
        r.deps.usageRecorder.record({
          requestId: `req-history-${i}`,
          accountId: 1,
          endpoint: "/v1/chat/completions",
          requestedModel: `model-${i % 1100}`,
          effectiveModel: `model-${i % 1100}`,
          level: 1,
          keyId: kept.body.ID,
          status: 200,
          stream: false,
          usage: { prompt: 3, completion: 4, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
          source: "upstream",
          latencyMs: 1,
          at: Date.now(),
          costNanos: 0,
        });
      }
      await r.deps.usageRecorder.flush();
    } finally {
      await r.stop();
    }

    const db = new Database(join(dataDir, "router.db"), { readonly: true });
    try {
      const now = Date.now();
      const ids = (query: string) => db.query<{ id: number }, []>(query).all().map((row) => row.id);
      const accountIds = ids("SELECT id FROM accounts ORDER BY id");
      expected = {
        counts: Object.fromEntries(TABLES.map((t) => [t, db.query<{ n: number }, []>(`SELECT count(*) AS n FROM ${t}`).get()!.n])),
        accountIds,
        balances: new Map(
          accountIds.map((id) => [
            id,
            db.query<{ b: number }, [number, number]>("SELECT coalesce(sum(remaining), 0) AS b FROM credit_grants WHERE account_id = ? AND (expires_at IS NULL OR expires_at > ?)").get(id, now)!.b,
          ]),
        ),
        usageIds: ids("SELECT id FROM usage_events ORDER BY id"),
        keyIds: ids("SELECT id FROM provider_keys ORDER BY id"),
        keySequence: db.query<{ seq: number }, []>("SELECT seq FROM sqlite_sequence WHERE name = 'provider_keys'").get()!.seq,
      };
    } finally {
      db.close();
    }
    // The deployment is what the test meant to build.
    expect(expected.counts.usage_events).toBe(2503);
    expect(expected.counts.usage_daily).toBeGreaterThan(1100);
    expect(expected.keyIds).toHaveLength(1);
    expect(expected.keySequence).toBeGreaterThan(expected.keyIds[0]!);
    expect([...expected.balances.values()].some((b) => b > 0 && b < 5e9)).toBe(true);
  }, 60_000);

  afterAll(async () => {
    await upstream?.stop();
    await pg?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  });

  describe("a copy into a new database", () => {
    let database: string;
    let result: Result;
    let store: Store;

    beforeAll(async () => {
      database = await pg.createDatabase();
      result = await router(["migrate-data", "--from", dataDir, "--to", withPassword(database)]);
      store = await openPostgresStore(pg.url(database), { migrate: false });
    }, 60_000);
    afterAll(() => store?.close());

    test("succeeds, warns that the password was on the command line, and prints a summary of every table", () => {
      expect(result.exitCode).toBe(0);
      expect(result.stderr).toContain("--to holds a password");
      expect(result.stderr).toContain("ROUTER_DATABASE");
      expect(result.stdout).toContain("postgres:***@");
      expect(result.stdout).toContain("applied 0000_initial");
      for (const table of TABLES) {
        const n = expected.counts[table];
        expect(result.stdout).toMatch(new RegExp(`^${table}\\s+${n}\\s+${n}\\s+ok$`, "m"));
      }
      expect(result.stdout).toContain(`balances: ${expected.accountIds.length} accounts, equal on both sides`);
      expect(result.stdout).toContain(join(dataDir, "secret.key"));
    });

    test("every account keeps its id and its balance", async () => {
      for (const id of expected.accountIds) {
        expect((await store.accounts.anyById(id))?.id).toBe(id);
        expect(await store.credit.balance(id, Date.now())).toBe(expected.balances.get(id)!);
      }
    });

    test("usage rows keep their ids; bills read the same rollups", async () => {
      const rows = await store.usage.events(0, 10_000);
      expect(rows.map((row) => row.id)).toEqual(expected.usageIds);
      const sums = await store.usage.sumsByModel({ path: "/1/", includeRoot: true }, { start: "2000-01-01", end: "2999-12-31" });
      expect(sums.reduce((n, s) => n + s.requests, 0)).toBe(2503);
      expect(sums.find((s) => s.model === "gpt-4o-mini")).toMatchObject({ requests: 3, prompt: 30, completion: 30 });
    });

    test("the provider key keeps its id and opens with the deployment's secret key", async () => {
      const [key] = await store.providerKeys.all(0);
      expect(key?.id).toBe(expected.keyIds[0]);
      expect(key?.secretSealed).not.toContain(PROVIDER_SECRET);
      const sealer = createSealer(loadOrCreateSecretKey(join(dataDir, "secret.key")));
      expect(sealer.open(key!.secretSealed)).toBe(PROVIDER_SECRET);
      // Its PartialKey, sealed too, is copied as stored and opens with the same key.
      expect(key?.partialKey).not.toContain(PROVIDER_SECRET.slice(-20));
      expect(sealer.open(key!.partialKey)).toBe(`…${PROVIDER_SECRET.slice(-20)}`);
    });

    test("ids given out after the copy come after every id SQLite ever gave out", async () => {
      const maxAccount = Math.max(...expected.accountIds);
      const account = await store.accounts.insert({ parentId: null, depth: 0, email: "after@example.com", name: "after-copy", keyHash: "h".repeat(64), keyPrefix: "sk-rt-x", createdAt: 1, updatedAt: 1 }, "");
      expect(account.id).toBe(maxAccount + 1);
      const key = await store.providerKeys.create(0, { level: 1, provider: upstream.url, secretSealed: "v1:x", partialKey: "…x", status: true }, 1);
      expect(key.id).toBe(expected.keySequence + 1);
    });

    test("a second copy into the same database is refused, naming what it holds", async () => {
      const again = await router(["migrate-data", "--from", dataDir, "--to", pg.url(database)]);
      expect(again.exitCode).toBe(1);
      expect(again.stderr).toContain("not empty");
      expect(again.stderr).toMatch(/accounts: \d+ rows/);
      expect(again.stdout).not.toContain("ok");
    });
  });

  test("a freshly migrated target is accepted; `router migrate --database` applies the migrations once", async () => {
    const database = await pg.createDatabase();
    const first = await router(["migrate", "--database", pg.url(database)]);
    expect(first).toMatchObject({ exitCode: 0, stderr: "" });
    expect(first.stdout).toContain("applied 0000_initial");
    // Through the environment: no warning, and the password stays hidden.
    const second = await router(["migrate"], { ROUTER_DATABASE: withPassword(database) });
    expect(second).toMatchObject({ exitCode: 0, stderr: "" });
    expect(second.stdout).toContain("database is up to date");
    expect(second.stdout).toContain("postgres:***@");
    const copy = await router(["migrate-data", "--from", join(dataDir, "router.db")], { ROUTER_DATABASE: pg.url(database) });
    expect(copy.exitCode).toBe(0);
    expect(copy.stdout).not.toContain("applied 0000_initial");
    expect(copy.stdout).toContain("equal on both sides");
  });

  test("`router migrate --database` with a password on the command line warns, and refuses --data with it", async () => {
    const database = await pg.createDatabase();
    const warned = await router(["migrate", "--database", withPassword(database)]);
    expect(warned.exitCode).toBe(0);
    expect(warned.stderr).toContain("--database holds a password");
    const both = await router(["migrate", "--database", pg.url(database), "--data", scratch]);
    expect(both.exitCode).toBe(2);
    expect(both.stderr).toContain("not both");
    // --data on the command line still means SQLite where ROUTER_DATABASE is set for the service.
    const sqlite = await router(["migrate", "--data", join(scratch, "sqlite")], { ROUTER_DATABASE: pg.url(database) });
    expect(sqlite).toMatchObject({ exitCode: 0, stderr: "" });
    expect(sqlite.stdout).toStartWith("applied 0000_accounts\n");
    expect(sqlite.stdout).not.toContain("PostgreSQL");
  });

  test("a source written to during the copy fails the check and exits non-zero", async () => {
    const live = await startRouter();
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        for (let i = 0; i < 20; i++) {
          live.deps.usageRecorder.record({ ...usageEvent(0), requestId: `req-live-${++written}`, at: Date.now() });
        }
        await live.deps.usageRecorder.flush();
        await Bun.sleep(1);
      }
    })();
    try {
      const database = await pg.createDatabase();
      const moving = await router(["migrate-data", "--from", live.dataDir, "--to", pg.url(database)]);
      expect(moving.exitCode).toBe(1);
      expect(moving.stdout).toMatch(/^usage_events\s+\d+\s+\d+\s+MISMATCH$/m);
      expect(moving.stderr).toContain("does not match the source");
    } finally {
      writing = false;
      await writer;
      await live.stop();
    }
  });

  describe("refusals", () => {
    test("a source that does not exist", async () => {
      const missing = await router(["migrate-data", "--from", join(scratch, "nowhere"), "--to", pg.url("postgres")]);
      expect(missing.exitCode).toBe(1);
      expect(missing.stderr).toContain("nothing at");
      const empty = join(scratch, "empty");
      mkdirSync(empty);
      const noDb = await router(["migrate-data", "--from", empty, "--to", pg.url("postgres")]);
      expect(noDb.exitCode).toBe(1);
      expect(noDb.stderr).toContain("holds no router.db");
    });

    test("a source behind this router's migrations, untouched", async () => {
      const old = join(scratch, "old");
      mkdirSync(old);
      // VACUUM INTO: one self-contained file, whatever the source's WAL still holds.
      const source = new Database(join(dataDir, "router.db"), { readonly: true });
      source.run(`VACUUM INTO '${join(old, "router.db")}'`);
      source.close();
      const migrated = () => {
        const db = new Database(join(old, "router.db"), { readonly: true });
        const n = db.query<{ n: number }, []>("SELECT count(*) AS n FROM schema_migrations").get()!.n;
        db.close();
        return n;
      };
      const db = new Database(join(old, "router.db"));
      db.run("DELETE FROM schema_migrations WHERE name = (SELECT max(name) FROM schema_migrations)");
      db.close();
      const before = migrated();
      const database = await pg.createDatabase();
      const refused = await router(["migrate-data", "--from", old, "--to", pg.url(database)]);
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toContain("lacks migrations");
      expect(refused.stderr).toContain(`router migrate --data ${old}`);
      expect(migrated()).toBe(before);
    });

    test("a row PostgreSQL refuses names its table and leaves the target empty, so the copy can be run again", async () => {
      const broken = join(scratch, "broken");
      mkdirSync(broken);
      const source = new Database(join(dataDir, "router.db"), { readonly: true });
      source.run(`VACUUM INTO '${join(broken, "router.db")}'`);
      source.close();
      const db = new Database(join(broken, "router.db"));
      // PostgreSQL text cannot hold NUL; SQLite's can.
      db.run("UPDATE notices SET content = 'to' || char(0) || 'PostgreSQL'");
      db.close();
      const database = await pg.createDatabase();
      const refused = await router(["migrate-data", "--from", broken, "--to", pg.url(database)]);
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toContain("copying notices");
      // The reason, not the statement's parameters (rows of data, sealed secrets).
      expect(refused.stderr).not.toContain("params:");
      expect(refused.stderr.trim().split("\n")).toHaveLength(1);
      // Nothing of the failed copy stayed: the whole deployment copies into the same database.
      const retried = await router(["migrate-data", "--from", dataDir, "--to", pg.url(database)]);
      expect(retried.exitCode).toBe(0);
      expect(retried.stdout).toContain("equal on both sides");
    });

    test("bad URLs, without ever showing the password", async () => {
      for (const to of [`mysql://root:${PASSWORD}@127.0.0.1/db`, `not a url ${PASSWORD}`, `postgres://:${PASSWORD}@/db`]) {
        const bad = await router(["migrate-data", "--from", dataDir, "--to", to]);
        expect(bad.exitCode).toBe(2);
        expect(bad.stderr).toContain("--to");
      }
      const unreachable = await router(["migrate-data", "--from", dataDir], { ROUTER_DATABASE: `postgres://postgres:${PASSWORD}@127.0.0.1:1/db` });
      expect(unreachable.exitCode).toBe(1);
      expect(unreachable.stderr).toContain("PostgreSQL at postgres://postgres:***@127.0.0.1:1/db");
      const missing = await router(["migrate-data", "--from", dataDir]);
      expect(missing.exitCode).toBe(2);
      expect(missing.stderr).toContain("--to is required");
    });
  });
});

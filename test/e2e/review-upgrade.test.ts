import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { chatCompletion, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, MANAGER_RESOURCES } from "../helpers/owner-ops.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { runRouterCommand } from "../helpers/router-command.ts";
import { startRouter, tempDir, waitFor, type TestRouter } from "../helpers/router.ts";
import { serveOnce } from "../helpers/serve-once.ts";

// Upgrading a deployment that holds data, black-box: a data directory written by this
// router, taken back by hand to the shape an older one left (migration 0019 undone, the
// request log in router.db), is started again, or copied into PostgreSQL; a migration
// stopped halfway; stored configuration an older router accepted; and what an older
// router does with a database a newer one migrated (a downgrade after a failed upgrade).
// From a review: a stored price above today's bound failing the start, the refusals
// naming no version, a request log file in a newer format being written to, and a failed
// SQLite migration not named as one failed before their fixes; the data, balances and ids
// kept across the upgrade and the copy, and the all-or-nothing migration, are what the
// review found right.

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
const SECRET = "sk-review-upgrade-0123456789abcdefghij";
const CHAT = { model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };

let upstream: MockUpstream;
beforeAll(() => {
  upstream = startMockUpstream();
  upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model, { prompt: 30, completion: 30 }));
});
afterAll(async () => {
  await upstream?.stop();
});


/**
 * Undoes migration 0019 on a stopped router's file: accounts lose `root_id` and get back
 * the deployment-wide unique indexes, and the migration is no longer recorded. What is
 * left is the file a router of the previous version would have written.
 */
function backToBeforeTreeScopedIdentities(dataDir: string): void {
  const db = new Database(join(dataDir, "router.db"));
  try {
    db.transaction(() => {
      for (const index of ["accounts_root_email_live", "accounts_root_name_live", "accounts_owner_email_live"]) db.run(`DROP INDEX ${index}`);
      db.run("ALTER TABLE accounts DROP COLUMN root_id");
      db.run("CREATE UNIQUE INDEX accounts_email_live ON accounts (email) WHERE deleted_at IS NULL");
      db.run("CREATE UNIQUE INDEX accounts_name_live ON accounts (name) WHERE deleted_at IS NULL");
      db.run("DELETE FROM schema_migrations WHERE name = '0019_tenant_scoped_identities'");
      // Routers before this one did not record their version with each migration.
      db.run("ALTER TABLE schema_migrations DROP COLUMN router_version");
    })();
  } finally {
    db.close();
  }
}

/** What the API shows of a deployment: every account with its balance and settings, keys, notices, bills, logs. */
async function shown(router: TestRouter): Promise<Record<string, unknown>> {
  const seen: Record<string, unknown> = {};
  for (const path of ["/x-dna?size=100", "/x-keys", "/x-news", "/x-bill", "/dashboard/logs?size=100", "/x-requests?size=100", "/dashboard/status"]) {
    const reply = await api(router, path);
    expect(reply.status).toBe(200);
    seen[path] = reply.body;
  }
  return seen;
}

/**
 * A deployment with data of every kind, written by this router in `dataDir`: a provider
 * key, a manager with limits and JSON fields, its child with expiring credit, a deleted
 * child, calls (usage, rollups, key health, request log), a notice. Returns what the API
 * showed of it before it stopped.
 */
async function populated(dataDir: string): Promise<{ before: Record<string, unknown>; kidKey: string; deletedId: number }> {
  const router = await startRouter({ dataDir, pricing: PRICING });
  try {
    await router.deps.settings.update({ PRICING });
    expect((await api(router, "/x-keys", { body: { Provider: upstream.url, SecretKey: SECRET, Level: 1, Status: true } })).status).toBe(201);
    const manager = await createAccount(router, {
      CreditGranted: 50,
      Resources: MANAGER_RESOURCES,
      RPM: 100,
      HardLimit: 500,
      SoftLimit: 40,
      ModelLimits: { "acme-*": { rpm: 10 } },
      AllowIPs: "127.0.0.1,::1",
      AllowModels: "acme-*",
      Alias: "Manager",
      BillingEmail: "bills@example.com",
    });
    const kid = await createAccount(router, { CreditGranted: 5, Days: 30 }, manager.key);
    const gone = await createAccount(router, { CreditGranted: 2 }, manager.key);
    for (const key of [kid.key, kid.key, gone.key]) expect((await api(router, "/v1/chat/completions", { key, body: CHAT })).status).toBe(200);
    expect((await api(router, `/x-users/${gone.id}`, { method: "DELETE", key: manager.key })).status).toBe(200);
    expect((await api(router, "/x-news", { body: { title: "maintenance", content: "tonight", days: 30 } })).status).toBe(201);
    await router.deps.usageRecorder.flush();
    await waitFor(async () => ((await api(router, "/x-requests?size=100")).body?.length ?? 0) >= 3 || undefined);
    return { before: await shown(router), kidKey: kid.key, deletedId: gone.id };
  } finally {
    await router.stop();
  }
}

describe("a data directory from before emails and names were unique per tree", () => {
  test("keeps every account (deleted ones too), balance, key, notice, bill and log line, and gives out no id twice", async () => {
    const dataDir = tempDir("review-upgrade-");
    const { before, kidKey, deletedId } = await populated(dataDir);
    backToBeforeTreeScopedIdentities(dataDir);

    const router = await startRouter({ dataDir });
    try {
      expect(await shown(router)).toEqual(before);
      // The provider key's sealed secret still opens with the same secret.key: a call goes through.
      expect((await api(router, "/v1/chat/completions", { key: kidKey, body: CHAT })).status).toBe(200);
      // The deleted account's id is never given out again.
      const fresh = await createAccount(router);
      expect(fresh.id).toBeGreaterThan(deletedId);
      // The record of migrations gained the router's version: the one applied now has it.
      const db = new Database(join(dataDir, "router.db"), { readonly: true });
      const recorded = db.query("SELECT name, router_version FROM schema_migrations WHERE router_version IS NOT NULL").all();
      db.close();
      expect(recorded).toEqual([{ name: "0019_tenant_scoped_identities", router_version: pkg.version }]);
    } finally {
      await router.stop();
    }
  }, 60_000);
});

/** Puts the request log back in router.db, where routers before its own file kept it (migrations 0010, 0011). */
function logBackInMainFile(dataDir: string): void {
  const db = new Database(join(dataDir, "router.db"));
  db.run(`ATTACH DATABASE '${join(dataDir, "router-requests.db")}' AS log`);
  const ddl = db.query<{ sql: string }, []>("SELECT sql FROM log.sqlite_master WHERE name = 'request_log'").get()!.sql;
  db.run(ddl.replace(/log\.request_log|request_log/, "main.request_log"));
  db.run("INSERT INTO main.request_log SELECT * FROM log.request_log");
  db.run("DETACH DATABASE log");
  db.close();
  for (const suffix of ["", "-wal", "-shm"]) rmSync(join(dataDir, `router-requests.db${suffix}`), { force: true });
}

describe.skipIf(skipServices)("an older data directory copied into PostgreSQL", () => {
  let pg: PostgresServer;
  beforeAll(async () => {
    pg = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await pg?.stop();
  });

  test("after `router migrate`, migrate-data copies everything (the request log in router.db too), and a router on PostgreSQL shows the same", async () => {
    const dataDir = tempDir("review-upgrade-pg-");
    const { before, kidKey, deletedId } = await populated(dataDir);
    backToBeforeTreeScopedIdentities(dataDir);
    logBackInMainFile(dataDir);
    const url = pg.url(await pg.createDatabase());
    const behind = await runRouterCommand(["migrate-data", "--from", dataDir, "--to", url]);
    expect(behind.exitCode).toBe(1);
    expect(behind.stderr).toContain(`run \`router migrate --data ${dataDir}\` first`);
    expect((await runRouterCommand(["migrate", "--data", dataDir])).exitCode).toBe(0);
    const copy = await runRouterCommand(["migrate-data", "--from", dataDir, "--to", url]);
    expect(copy.exitCode).toBe(0);
    expect(copy.stdout).toMatch(/request_log\s+3\s+3\s+ok/);
    expect(copy.stdout).toContain("equal on both sides");

    const router = await startRouter({ dataDir, config: { database: url } });
    try {
      expect(await shown(router)).toEqual(before);
      expect((await api(router, "/v1/chat/completions", { key: kidKey, body: CHAT })).status).toBe(200);
      expect((await createAccount(router)).id).toBeGreaterThan(deletedId);
    } finally {
      await router.stop();
    }
  }, 120_000);
});

describe("configuration an older router accepted and this one bounds", () => {
  // Before prices were capped at 10,000 a price above it was stored as given (a model
  // "blocked" by a prohibitive price, say). The router read it back with the checks of
  // new input, and its start failed on it: the deployment was down after the upgrade,
  // with no way to set PRICING again but editing the database.
  test("a stored price above the bound is read as the bound, with a warning; the router starts and charges it", async () => {
    const dataDir = tempDir("review-old-pricing-");
    const first = await startRouter({ dataDir });
    await first.stop();
    const db = new Database(join(dataDir, "router.db"));
    db.run("DELETE FROM settings WHERE key = 'PRICING'");
    db.run("INSERT INTO settings (tenant_id, key, value, updated_at) VALUES (0, 'PRICING', ?, 1)", [
      JSON.stringify({ ChatPricing: { "acme-*": { InputText: 1_000_000, OutputText: 8 } } }),
    ]);
    db.close();

    const router = await startRouter({ dataDir });
    try {
      expect(router.logs.some((line) => line.includes("PRICING") && line.includes('ChatPricing[\\"acme-*\\"].InputText'))).toBe(true);
      const shownConfig = await api(router, "/x-config");
      expect(shownConfig.body.configs.PRICING.ChatPricing["acme-*"].InputText).toBe(1_000_000);
      expect((await api(router, "/x-keys", { body: { Provider: upstream.url, SecretKey: SECRET, Level: 1, Status: true } })).status).toBe(201);
      const account = await createAccount(router, { CreditGranted: 10 });
      expect((await api(router, "/v1/chat/completions", { key: account.key, body: CHAT })).status).toBe(200);
      await router.deps.usageRecorder.flush();
      // 30 prompt tokens at 10,000 per 1M and 30 completion tokens at 8 per 1M.
      const status = await api(router, "/dashboard/status", { key: account.key });
      expect(Math.round(status.body.balance * 1e9)).toBe(10e9 - 30 * 10_000 * 1000 - 30 * 8 * 1000);
    } finally {
      await router.stop();
    }
  }, 60_000);
});

describe("a migration that fails halfway", () => {
  test("leaves the table it rebuilds as it was and unrecorded; the next run applies it", async () => {
    const dataDir = tempDir("review-half-");
    const router = await startRouter({ dataDir });
    const child = await createAccount(router, { CreditGranted: 3 });
    await router.stop();
    backToBeforeTreeScopedIdentities(dataDir);
    // Something in the way of one of the migration's last statements (as a full disk would stop it
    // there): by then the accounts table has been copied, dropped and renamed.
    const db = new Database(join(dataDir, "router.db"));
    db.run("CREATE TABLE in_the_way (x integer)");
    db.run("CREATE INDEX accounts_owner_email_live ON in_the_way (x)");
    db.close();
    const failed = await runRouterCommand(["migrate", "--data", dataDir]);
    expect(failed.exitCode).toBe(1);
    expect(failed.stderr).toContain("migration 0019_tenant_scoped_identities failed (nothing of it was applied): ");
    const left = new Database(join(dataDir, "router.db"), { readonly: true });
    const columns = left.query<{ name: string }, []>("SELECT name FROM pragma_table_info('accounts')").all().map((c) => c.name);
    const ids = left.query<{ id: number }, []>("SELECT id FROM accounts ORDER BY id").all().map((r) => r.id);
    const recorded = left.query<{ n: number }, []>("SELECT count(*) AS n FROM schema_migrations WHERE name = '0019_tenant_scoped_identities'").get()?.n;
    const leftovers = left.query<{ n: number }, []>("SELECT count(*) AS n FROM sqlite_master WHERE name = '__new_accounts'").get()?.n;
    left.close();
    expect({ hasRoot: columns.includes("root_id"), ids, recorded, leftovers }).toEqual({ hasRoot: false, ids: [1, child.id], recorded: 0, leftovers: 0 });

    const fixed = new Database(join(dataDir, "router.db"));
    fixed.run("DROP TABLE in_the_way");
    fixed.close();
    expect((await runRouterCommand(["migrate", "--data", dataDir])).exitCode).toBe(0);
    const again = await startRouter({ dataDir });
    try {
      const record = await api(again, `/x-users/${child.id}`);
      expect({ status: record.status, balance: record.body.Balance }).toEqual({ status: 200, balance: 3 });
    } finally {
      await again.stop();
    }
  }, 60_000);
});

describe("a database migrated by a newer router, opened by this one (a downgrade after a failed upgrade)", () => {
  /** A data directory this router created and migrated, then "upgraded" by a router 9.9.0 that added a migration. */
  async function migratedByNewer(): Promise<string> {
    const dataDir = tempDir("review-downgrade-");
    expect((await runRouterCommand(["migrate", "--data", dataDir])).exitCode).toBe(0);
    const db = new Database(join(dataDir, "router.db"));
    db.run("INSERT INTO schema_migrations (name, applied_at, router_version) VALUES ('0020_future', 1, '9.9.0')");
    db.close();
    return dataDir;
  }

  /** The file's schema and every row of every table. */
  function contents(dataDir: string): Record<string, unknown> {
    const db = new Database(join(dataDir, "router.db"), { readonly: true });
    try {
      const tables = db.query<{ name: string; sql: string }, []>("SELECT name, sql FROM sqlite_master ORDER BY name").all();
      return Object.fromEntries(tables.map(({ name, sql }) => [name, { sql, rows: sql?.startsWith("CREATE TABLE") ? db.query(`SELECT * FROM "${name}"`).all() : [] }]));
    } finally {
      db.close();
    }
  }

  test("this router records its version with each migration it applies", async () => {
    const dataDir = tempDir("review-version-");
    expect((await runRouterCommand(["migrate", "--data", dataDir])).exitCode).toBe(0);
    const db = new Database(join(dataDir, "router.db"), { readonly: true });
    const versions = db.query<{ router_version: string }, []>("SELECT DISTINCT router_version FROM schema_migrations").all();
    db.close();
    expect(versions).toEqual([{ router_version: pkg.version }]);
  }, 30_000);

  test("serve and migrate refuse it naming both versions, and leave the file as it was", async () => {
    const dataDir = await migratedByNewer();
    const before = contents(dataDir);
    for (const result of [await serveOnce(["--data", dataDir]), await runRouterCommand(["migrate", "--data", dataDir])]) {
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toContain(`migrated by router 9.9.0 (this is router ${pkg.version}`);
      expect(result.stderr).toContain("0020_future");
    }
    expect(contents(dataDir)).toEqual(before);
  }, 60_000);
});

describe("the request log's file, opened by a router older than the one that wrote it", () => {
  test("a format this router does not know is refused, naming the file and this version", async () => {
    const dataDir = tempDir("review-log-format-");
    // This router creates the log's file; a newer one then changed its table and format number.
    expect((await serveOnce(["--data", dataDir])).started).toBe(true);
    const log = new Database(join(dataDir, "router-requests.db"));
    log.run("ALTER TABLE request_log ADD COLUMN region text NOT NULL DEFAULT ''");
    log.run("PRAGMA user_version = 2");
    log.close();
    const result = await serveOnce(["--data", dataDir]);
    expect(result.started).toBe(false);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain("router-requests.db");
    expect(result.stderr).toContain(`this is router ${pkg.version}`);
  }, 60_000);
});

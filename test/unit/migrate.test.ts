import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { join } from "node:path";
import { openConnection as openStore } from "../../src/store/sqlite/connection.ts";
import { migrate } from "../../src/store/sqlite/migrate.ts";
import { migrations } from "../../src/store/migrations/index.ts";
import { tempDir } from "../helpers/router.ts";
import { expectRepeatsRemoved, USAGE_REPEATS_SEED } from "../helpers/usage-repeats.ts";
import { ACCOUNT_TREES_SEED, expectTreesMigrated } from "../helpers/account-trees.ts";

test("a database created by the first migration upgrades in place and keeps its rows", () => {
  const path = join(tempDir(), "router.db");
  const old = new Database(path, { create: true, strict: true });
  expect(migrate(old, migrations.slice(0, 1))).toEqual([migrations[0]!.name]);
  old.run(
    "INSERT INTO accounts (depth, is_owner, email, name, key_hash, key_prefix, created_at, updated_at, path) VALUES (1, 1, 'a@b.c', 'first', 'h', 'p', 1, 1, '/1/')",
  );
  old.run("INSERT INTO settings (key, value, updated_at) VALUES ('LEVEL_MAPPER', 'gpt-*=2', 1)");
  old.close();

  const store = openStore(path);
  const applied = store.sqlite.query<{ name: string }, []>("SELECT name FROM schema_migrations ORDER BY name").all();
  expect(applied.map((row) => row.name)).toEqual(migrations.map((m) => m.name));
  expect(store.sqlite.query<{ email: string }, []>("SELECT email FROM accounts").get()?.email).toBe("a@b.c");
  // Tables rebuilt by later migrations keep their rows (settings gained a tenant column).
  expect(store.sqlite.query<{ tenant_id: number; value: string }, []>("SELECT tenant_id, value FROM settings").get()).toEqual({ tenant_id: 0, value: "gpt-*=2" });
  expect(migrate(store.sqlite, migrations)).toEqual([]); // idempotent
  store.close();
});

test("daily rollups survive the rebuild into a clustered (WITHOUT ROWID) table", () => {
  const path = join(tempDir(), "router.db");
  const old = new Database(path, { create: true, strict: true });
  const before = migrations.findIndex((m) => m.name === "0009_usage_daily_clustered");
  migrate(old, migrations.slice(0, before));
  old.run("INSERT INTO usage_daily (account_id, day, model, requests, prompt_tokens, completion_tokens, cost_nanos) VALUES (3, '2026-11-01', 'm', 2, 10, 5, 700)");
  old.close();

  const store = openStore(path);
  expect(store.sqlite.query("SELECT account_id, day, model, requests, prompt_tokens, completion_tokens, cost_nanos FROM usage_daily").all()).toEqual([
    { account_id: 3, day: "2026-11-01", model: "m", requests: 2, prompt_tokens: 10, completion_tokens: 5, cost_nanos: 700 },
  ]);
  const ddl = store.sqlite.query<{ sql: string }, []>("SELECT sql FROM sqlite_master WHERE name = 'usage_daily'").get()?.sql ?? "";
  expect(ddl).toContain("WITHOUT ROWID");
  // The rollup upsert still finds its row by the primary key.
  store.sqlite.run("INSERT INTO usage_daily (account_id, day, model, requests) VALUES (3, '2026-11-01', 'm', 1) ON CONFLICT (account_id, day, model) DO UPDATE SET requests = requests + excluded.requests");
  expect(store.sqlite.query<{ requests: number }, []>("SELECT requests FROM usage_daily").get()?.requests).toBe(3);
  store.close();
});

test("a call stored twice before usage rows had a unique identity is kept once, and its second charge given back", async () => {
  const path = join(tempDir(), "router.db");
  const old = new Database(path, { create: true, strict: true });
  migrate(old, migrations.slice(0, migrations.findIndex((m) => m.name === "0014_usage_row_identity")));
  for (const statement of USAGE_REPEATS_SEED) old.run(statement);
  old.close();

  const store = openStore(path);
  try {
    await expectRepeatsRemoved(async (text) => store.sqlite.query<Record<string, unknown>, []>(text).all());
  } finally {
    store.close();
  }
});

test("accounts of a database from before per-tree uniqueness get their tree's root, and ids are never handed out twice", async () => {
  const path = join(tempDir(), "router.db");
  const old = new Database(path, { create: true, strict: true });
  migrate(old, migrations.slice(0, migrations.findIndex((m) => m.name === "0019_tenant_scoped_identities")));
  for (const statement of ACCOUNT_TREES_SEED) old.run(statement);
  // Ids up to 9 were handed out once (the sequence is the record of that, not the highest row).
  old.run("UPDATE sqlite_sequence SET seq = 9 WHERE name = 'accounts'");
  old.close();

  const store = openStore(path);
  try {
    // The rebuilt table carries the sequence over as it was, not as its highest row.
    expect(store.sqlite.query("SELECT name, seq FROM sqlite_sequence WHERE name LIKE '%accounts'").all()).toEqual([{ name: "accounts", seq: 9 }]);
    await expectTreesMigrated(async (text) => store.sqlite.query<Record<string, unknown>, []>(text).all());
  } finally {
    store.close();
  }
});

test("a database migrated by a newer router is refused rather than damaged", () => {
  const sqlite = new Database(":memory:");
  migrate(sqlite, migrations);
  sqlite.run("INSERT INTO schema_migrations (name, applied_at) VALUES ('9999_future', 1)");
  expect(() => migrate(sqlite, migrations)).toThrow(/newer router/);
});

test("the store runs in WAL mode with foreign keys and a busy timeout", () => {
  const store = openStore(join(tempDir(), "router.db"));
  expect(store.sqlite.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()?.journal_mode).toBe("wal");
  expect(store.sqlite.query<{ foreign_keys: number }, []>("PRAGMA foreign_keys").get()?.foreign_keys).toBe(1);
  expect(store.sqlite.query<{ timeout: number }, []>("PRAGMA busy_timeout").get()?.timeout).toBe(5000);
  store.close();
});

import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { join } from "node:path";
import { openStore } from "../../src/store/db.ts";
import { migrate } from "../../src/store/migrate.ts";
import { migrations } from "../../src/store/migrations/index.ts";
import { tempDir } from "../helpers/router.ts";

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

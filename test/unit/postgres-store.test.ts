import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { acquireSingleInstanceLock, migrateDatabase, openPostgresStore } from "../../src/store/postgres/index.ts";
import { migratePostgres } from "../../src/store/postgres/migrate.ts";
import { migrations } from "../../src/store/postgres/migrations/index.ts";
import { VERSION } from "../../src/version.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { createLogger } from "../../src/core/log.ts";
import { waitFor } from "../helpers/router.ts";
import { expectRepeatsRemoved, USAGE_REPEATS_SEED } from "../helpers/usage-repeats.ts";
import { ACCOUNT_TREES_SEED, expectTreesMigrated } from "../helpers/account-trees.ts";

/**
 * What only the PostgreSQL store has: its migration runner, the single-instance lock a
 * `serve --database` without Redis takes, and connection errors that never show the
 * URL's password. The repositories themselves are held by the store contract suite.
 */
if (!skipServices) {
  describe("PostgreSQL store", () => {
    let server: PostgresServer;
    beforeAll(async () => {
      server = await startPostgres();
    }, 60_000);
    afterAll(() => server?.stop(), 30_000);

    const appliedIn = async (url: string) => {
      const client = new SQL(url, { max: 1 });
      try {
        return ((await client`SELECT name FROM schema_migrations ORDER BY name`) as Array<{ name: string }>).map((row) => row.name);
      } finally {
        await client.close();
      }
    };

    test("migrations are recorded as applied, once, even when two instances start together", async () => {
      const url = server.url(await server.createDatabase());
      const [first, second] = await Promise.all([migrateDatabase(url), migrateDatabase(url)]);
      // One of them applied everything, the other found it done.
      expect([first, second].sort((a, b) => a.length - b.length)).toEqual([[], migrations.map((m) => m.name)]);
      expect(await appliedIn(url)).toEqual(migrations.map((m) => m.name));
      expect(await migrateDatabase(url)).toEqual([]);
    });

    test("a call stored twice before usage rows had a unique identity is kept once, and its second charge given back", async () => {
      const client = new SQL(server.url(await server.createDatabase()), { max: 1 });
      try {
        await migratePostgres(client, migrations.slice(0, migrations.findIndex((m) => m.name === "0005_usage_row_identity")));
        for (const statement of USAGE_REPEATS_SEED) await client.unsafe(statement);
        await migratePostgres(client, migrations);
        await expectRepeatsRemoved(async (text) => (await client.unsafe(text)) as Array<Record<string, unknown>>);
      } finally {
        await client.close();
      }
    });

    test("accounts of a database from before per-tree uniqueness get their tree's root", async () => {
      const client = new SQL(server.url(await server.createDatabase()), { max: 1 });
      try {
        await migratePostgres(client, migrations.slice(0, migrations.findIndex((m) => m.name === "0010_tenant_scoped_identities")));
        for (const statement of ACCOUNT_TREES_SEED) await client.unsafe(statement);
        await migratePostgres(client, migrations);
        await expectTreesMigrated(async (text) => (await client.unsafe(text)) as Array<Record<string, unknown>>);
      } finally {
        await client.close();
      }
    });

    test("a database migrated by a newer router is refused rather than damaged", async () => {
      const url = server.url(await server.createDatabase());
      const client = new SQL(url, { max: 1 });
      try {
        await migratePostgres(client, migrations.slice(0, -1));
        // A record kept by a router before versions were recorded gains the column.
        await client`ALTER TABLE schema_migrations DROP COLUMN router_version`;
        await migratePostgres(client, migrations);
        expect(await client`SELECT count(*)::int AS n FROM schema_migrations WHERE router_version IS NULL`).toEqual([{ n: migrations.length - 1 }]);
        await client`UPDATE schema_migrations SET router_version = ${VERSION} WHERE router_version IS NULL`;
        // Each migration names the router that applied it, so an older one can name it back.
        expect(await client`SELECT DISTINCT router_version FROM schema_migrations`).toEqual([{ router_version: VERSION }]);
        await client`INSERT INTO schema_migrations (name, applied_at) VALUES ('9999_future', 1)`;
        await expect(migratePostgres(client, migrations)).rejects.toThrow("does not know its migrations 9999_future");
        await expect(openPostgresStore(url)).rejects.toThrow("newer router");
        await client`UPDATE schema_migrations SET router_version = '9.9.0' WHERE name = '9999_future'`;
        await expect(migratePostgres(client, migrations)).rejects.toThrow(`migrated by router 9.9.0 (this is router ${VERSION}`);
      } finally {
        await client.close();
      }
    });

    test("a failing migration leaves nothing of itself behind", async () => {
      const url = server.url(await server.createDatabase());
      const client = new SQL(url, { max: 1 });
      try {
        const broken = [{ name: "0000_broken", sql: "CREATE TABLE half (id integer);\n--> statement-breakpoint\nSELECT no_such_function()" }];
        await expect(migratePostgres(client, broken)).rejects.toThrow("migration 0000_broken failed");
        const [row] = (await client`SELECT to_regclass('half') AS half, (SELECT count(*) FROM schema_migrations)::int AS applied`) as Array<{ half: string | null; applied: number }>;
        expect(row).toEqual({ half: null, applied: 0 });
      } finally {
        await client.close();
      }
    });

    test("one instance holds the single-instance lock; a second is refused until it lets go or its connection ends", async () => {
      const url = server.url(await server.createDatabase());
      const a = await openPostgresStore(url);
      const b = await openPostgresStore(url);
      try {
        const held = await acquireSingleInstanceLock(a);
        expect(held).toBeDefined();
        expect(await acquireSingleInstanceLock(b)).toBeUndefined();
        await held!.release();
        const taken = await acquireSingleInstanceLock(b);
        expect(taken).toBeDefined();
        expect(await acquireSingleInstanceLock(a)).toBeUndefined();
        // An instance that dies (its connections close) leaves the lock behind it.
        b.close();
        let again: Awaited<ReturnType<typeof acquireSingleInstanceLock>>;
        for (let i = 0; i < 50 && !(again = await acquireSingleInstanceLock(a)); i++) await Bun.sleep(50);
        expect(again).toBeDefined();
        await again!.release();
      } finally {
        a.close();
        b.close();
      }
    });

    test("after PostgreSQL restarts, the holder takes the lock again, so a second instance is still refused; one that got in first is named in the log", async () => {
      const url = server.url(await server.createDatabase());
      const a = await openPostgresStore(url);
      const b = await openPostgresStore(url);
      const logs: string[] = [];
      const log = createLogger("info", (line) => logs.push(line));
      try {
        const held = await acquireSingleInstanceLock(a, log, 100);
        expect(held).toBeDefined();
        // The restart ends the lock's connection, and the lock with it.
        await server.halt();
        await server.resume();
        await Bun.sleep(600);
        expect(await acquireSingleInstanceLock(b)).toBeUndefined();
        await held!.release();

        // A holder that checks rarely: another instance takes the lock first after a restart.
        const slow = await acquireSingleInstanceLock(a, log, 1500);
        expect(slow).toBeDefined();
        await server.halt();
        await server.resume();
        let other: Awaited<ReturnType<typeof acquireSingleInstanceLock>>;
        for (let i = 0; i < 50 && !(other = await acquireSingleInstanceLock(b)); i++) await Bun.sleep(20);
        expect(other).toBeDefined();
        await waitFor(() => logs.some((line) => line.includes("another instance took the database without Redis")), 5000, "the holder to notice");
        // Once the other lets go, the holder has it again, and says so.
        await other!.release();
        await waitFor(() => logs.some((line) => line.includes("holds the database alone again")), 5000, "the holder to take it again");
        expect(await acquireSingleInstanceLock(b)).toBeUndefined();
        await slow!.release();
      } finally {
        a.close();
        b.close();
      }
    }, 30_000);

    test("connection errors name the server but never the URL's password", async () => {
      const closedPort = server.port + 1 === 65536 ? 1 : server.port + 1;
      const url = `postgres://router:s3cret-pw@127.0.0.1:${closedPort}/router`;
      const error = await openPostgresStore(url).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(error).toBeInstanceOf(Error);
      expect(error!.message).toContain(`127.0.0.1:${closedPort}`);
      expect(error!.message).not.toContain("s3cret-pw");
    });

    test("the URL's sslmode is honoured: `require` refuses a server without TLS", async () => {
      const url = `${server.url(await server.createDatabase())}?sslmode=require`;
      await expect(openPostgresStore(url)).rejects.toThrow(/SSL|TLS/i);
      const plain = await openPostgresStore(url.replace("require", "disable"));
      expect(await plain.accounts.countLive()).toBe(0);
      plain.close();
    });
  });
}

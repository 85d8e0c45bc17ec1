import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { desc } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sql";
import { openPostgresStore } from "../../src/store/postgres/index.ts";
import { postgresRequestLogWhere } from "../../src/store/postgres/request-log.ts";
import { requestLog } from "../../src/store/postgres/schema/request-log.ts";
import type { Store } from "../../src/store/store.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";

/**
 * A manager's request log on PostgreSQL among many rows: the subtree's accounts are
 * selected with a LIKE the path index (pattern operator class) serves, so the planner
 * knows a small subtree is small and reads its rows through the account index. With a
 * key range it estimated dozens of accounts, scanned every account, and walked the time
 * index backwards through 400,000 rows of a million for a one-account manager's page.
 */

const ACCOUNTS = 5_000;
const ROWS = 200_000;

if (!skipServices) {
  describe("PostgreSQL: a manager's request log among many rows", () => {
    let postgres: PostgresServer;
    let store: Store;
    let client: SQL;

    beforeAll(async () => {
      postgres = await startPostgres();
      const url = postgres.url(await postgres.createDatabase());
      store = await openPostgresStore(url);
      client = new SQL(url, { max: 1 });
      await client.unsafe(
        `INSERT INTO accounts (id, parent_id, path, root_id, depth, is_owner, email, name, key_hash, key_prefix, created_at, updated_at)
         SELECT i, CASE WHEN i = 1 THEN NULL ELSE 1 END, CASE WHEN i = 1 THEN '/1/' ELSE '/1/' || i || '/' END, 1, CASE WHEN i = 1 THEN 0 ELSE 1 END,
                i = 1, 'u' || i || '@x', 'u' || i, 'h' || i, 'sk', 0, 0
         FROM generate_series(1, ${ACCOUNTS}) i`,
      );
      // Account 5 has one call in 4,000, the others none of it (accounts 6 and up); four calls to a millisecond, so ties are broken by request id.
      await client.unsafe(
        `INSERT INTO request_log (request_id, tenant_id, account_id, created_at, family, endpoint, status, duration_ms, source)
         SELECT 'req_' || lpad(i::text, 7, '0'), 0, CASE WHEN i % 4000 = 0 THEN 5 ELSE 6 + (i % ${ACCOUNTS - 6}) END, 1700000000000 + i / 4,
                'openai', '/v1/chat/completions', CASE WHEN i % 8000 = 0 THEN 429 ELSE 200 END, 5, 'upstream'
         FROM generate_series(1, ${ROWS}) i`,
      );
      await client.unsafe("ANALYZE");
    }, 60_000);

    afterAll(async () => {
      await client?.close();
      store?.close();
      await postgres?.stop();
    });

    test("the store's condition: a one-account manager's page is planned from the path index and the account index, not the time index", async () => {
      const db = drizzle({ client });
      const query = db
        .select()
        .from(requestLog)
        .where(postgresRequestLogWhere({ tenantId: 0, under: "/1/5/" }))
        .orderBy(desc(requestLog.createdAt), desc(requestLog.requestId))
        .limit(20)
        .toSQL();
      const plan = (await client.unsafe(`EXPLAIN ${query.sql}`, query.params)).map((row: Record<string, string>) => Object.values(row)[0]).join("\n");
      expect(plan).toContain("accounts_path");
      expect(plan).toContain("request_log_account_created");
      expect(plan).not.toContain("request_log_created");
      expect(plan).not.toContain("Seq Scan on accounts");
    });

    test("the store's pages of that manager: the total, and every row once in newest-first order", async () => {
      const expected = Array.from({ length: ROWS / 4000 }, (_, k) => `req_${String((k + 1) * 4000).padStart(7, "0")}`).reverse();
      const first = await store.requests.list({ tenantId: 0, under: "/1/5/" }, 1, 30);
      const second = await store.requests.list({ tenantId: 0, under: "/1/5/" }, 2, 30);
      expect(first.total).toBe(ROWS / 4000);
      expect([...first.rows, ...second.rows].map((row) => row.requestId)).toEqual(expected);
      const refused = await store.requests.list({ tenantId: 0, under: "/1/5/", statusFrom: 429, statusTo: 429 }, 1, 30);
      expect(refused.total).toBe(ROWS / 8000);
      expect(refused.rows.map((row) => row.requestId)).toEqual(expected.filter((id) => Number(id.slice(4)) % 8000 === 0));
    });
  });
}

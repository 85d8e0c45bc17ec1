import { Database } from "bun:sqlite";
import type { Sealer } from "../crypto.ts";
import { createResealer, RekeyRefusal, type RekeyCounts } from "./reseal.ts";
import { resealAll, type RekeyTx } from "./tables.ts";

/**
 * Re-seals the SQLite file's sealed values in one transaction, taken with the write lock
 * first (IMMEDIATE): it commits whole, or a failure (or a crash: the WAL is rolled back)
 * leaves every value as it was, readable with the old key.
 */
export async function rekeySqlite(path: string, from: Sealer, to: Sealer, secretItems: readonly string[]): Promise<RekeyCounts> {
  const sqlite = new Database(path, { readwrite: true, create: false, strict: true });
  try {
    sqlite.run("PRAGMA busy_timeout = 5000");
    const resealer = createResealer(from, to);
    const tx: RekeyTx = {
      rows: async (sql, params) => sqlite.query(sql).all(...(params as string[])) as Array<Record<string, unknown>>,
      run: async (sql, params) => void sqlite.query(sql).run(...(params as string[])),
      lockRows: "",
    };
    sqlite.run("BEGIN IMMEDIATE");
    try {
      await resealAll(tx, resealer, secretItems);
      sqlite.run("COMMIT");
    } catch (error) {
      sqlite.run("ROLLBACK");
      throw error;
    }
    return resealer.counts;
  } finally {
    sqlite.close();
  }
}

/**
 * The same on PostgreSQL, while instances serve: the rows are locked as they are read (a
 * provider key updated meanwhile waits for the commit, then writes over the re-sealed
 * value with one sealed by the new key, which the instances run with).
 */
export async function rekeyPostgres(url: string, from: Sealer, to: Sealer, secretItems: readonly string[]): Promise<RekeyCounts> {
  const { SQL } = await import("bun");
  const { describeFailure } = await import("../postgres/url.ts");
  const client = new SQL(url, { max: 1 });
  const resealer = createResealer(from, to);
  try {
    await client.begin(async (sql) => {
      const numbered = (text: string) => {
        let n = 0;
        return text.replace(/\?/g, () => `$${++n}`);
      };
      const tx: RekeyTx = {
        rows: async (text, params) => (await sql.unsafe(numbered(text), params as unknown[])) as Array<Record<string, unknown>>,
        run: async (text, params) => void (await sql.unsafe(numbered(text), params as unknown[])),
        lockRows: " FOR UPDATE",
      };
      await resealAll(tx, resealer, secretItems);
    });
  } catch (error) {
    if (error instanceof RekeyRefusal) throw error;
    throw new Error(describeFailure(error, url));
  } finally {
    await client.close().catch(() => {});
  }
  return resealer.counts;
}

import type { Db } from "./db.ts";
import { sql } from "drizzle-orm";

/**
 * Advisory lock keys, in PostgreSQL's two-int4 key space (which never meets the
 * one-int8 space another application on the same database may use). The class
 * spells "rout" / "rouc" so a DBA reading pg_locks can tell whose they are.
 */
const ROUTER = 0x726f7574;
const CREDIT = 0x726f7563;

export const LOCKS = {
  /** Held by every store transaction: one writer at a time across instances, as SQLite's BEGIN IMMEDIATE. */
  writer: [ROUTER, 1],
  /** Held while migrations run, so two instances starting together do not both apply one. */
  migrations: [ROUTER, 2],
  /** Held for the life of an instance running without a shared State (Redis). */
  singleInstance: [ROUTER, 3],
  /** Held while an instance checks the sealing key and creates the first owner, so two starting together create one. */
  startup: [ROUTER, 4],
} as const satisfies Record<string, readonly [number, number]>;

/** Serialises credit draws of one account until the surrounding transaction ends. */
export async function lockAccountCredit(db: Db, accountId: number): Promise<void> {
  await db.execute(sql`SELECT pg_advisory_xact_lock(${CREDIT}, ${accountId})`);
}

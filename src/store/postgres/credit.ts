import { and, asc, eq, gt, isNull, lt, ne, or, sql } from "drizzle-orm";
import type { CreditStore, Piece } from "../store.ts";
import type { Db, Scope } from "./db.ts";
import { lockAccountCredit } from "./locks.ts";
import { creditGrants } from "./schema/accounts.ts";
import { usageEvents } from "./schema/usage.ts";
import { expiringOf, settleDebts } from "../expiring-grants.ts";

const unexpired = (accountId: number, now: number) =>
  and(eq(creditGrants.accountId, accountId), or(isNull(creditGrants.expiresAt), gt(creditGrants.expiresAt, now)));

/** The order grants are drawn in: the earliest expiry first, grants without expiry last. */
const drawOrder = [sql`${creditGrants.expiresAt} IS NULL`, asc(creditGrants.expiresAt), asc(creditGrants.id)];

async function balanceIn(db: Db, accountId: number, now: number): Promise<number> {
  const [row] = await db
    .select({ total: sql<number>`coalesce(sum(${creditGrants.remaining}), 0)`.mapWith(Number) })
    .from(creditGrants)
    .where(unexpired(accountId, now));
  return row?.total ?? 0;
}

/** Grants with credit left, in draw order (the caller holds the account's credit lock). */
const spendable = (db: Db, accountId: number, now: number) =>
  db
    .select({ id: creditGrants.id, remaining: creditGrants.remaining, expiresAt: creditGrants.expiresAt })
    .from(creditGrants)
    .where(and(unexpired(accountId, now), gt(creditGrants.remaining, 0)))
    .orderBy(...drawOrder);

/**
 * Draws run under a per-account advisory lock held to the end of the transaction: two
 * instances charging one account at once draw one after the other, each from what the
 * other left (a row lock alone would not cover the balance read of `take(Infinity)`).
 */
export function postgresCredit({ db, atomic }: Scope): CreditStore {
  return {
    balance: (accountId, now) => balanceIn(db, accountId, now),
    async ledgerBalance(accountId, now) {
      // One statement, so one snapshot holds all three.
      const [row] = await db
        .select({
          balance: sql<number>`coalesce(sum(${creditGrants.remaining}), 0)`.mapWith(Number),
          version: sql<number>`(SELECT coalesce(max(${usageEvents.id}), 0) FROM ${usageEvents})`.mapWith(Number),
          expiring: sql<string>`coalesce(json_agg(json_build_array(${creditGrants.expiresAt}, ${creditGrants.remaining})) FILTER (WHERE ${creditGrants.expiresAt} IS NOT NULL AND ${creditGrants.remaining} > 0), '[]')::text`,
        })
        .from(creditGrants)
        .where(unexpired(accountId, now));
      return { balance: row?.balance ?? 0, version: row?.version ?? 0, expiring: expiringOf(row?.expiring) };
    },
    take: (accountId, amount, now) =>
      atomic(async (db) => {
        await lockAccountCredit(db, accountId);
        const pieces: Piece[] = [];
        let left = amount === Infinity ? Math.max(0, await balanceIn(db, accountId, now)) : amount;
        for (const grant of await spendable(db, accountId, now)) {
          if (left <= 0) break;
          const used = Math.min(grant.remaining, left);
          await db.update(creditGrants).set({ remaining: grant.remaining - used }).where(eq(creditGrants.id, grant.id));
          pieces.push({ amount: used, expiresAt: grant.expiresAt });
          left -= used;
        }
        return pieces;
      }),
    async give(accountId, given, grantedBy, now) {
      await atomic(async (db) => {
        await lockAccountCredit(db, accountId);
        const debts = await db.select({ id: creditGrants.id, remaining: creditGrants.remaining }).from(creditGrants).where(and(eq(creditGrants.accountId, accountId), lt(creditGrants.remaining, 0))).orderBy(asc(creditGrants.id));
        const { paid, rest } = settleDebts(debts, given);
        for (const debt of paid) await db.update(creditGrants).set({ remaining: debt.remaining }).where(eq(creditGrants.id, debt.id));
        const rows = rest.map((piece) => ({ accountId, amount: piece.amount, remaining: piece.amount, expiresAt: piece.expiresAt, grantedBy, createdAt: now }));
        if (rows.length > 0) await db.insert(creditGrants).values(rows);
      });
    },
    async consume(accountId, amount, now) {
      if (amount <= 0) return;
      await atomic(async (db) => {
        await lockAccountCredit(db, accountId);
        let left = amount;
        for (const grant of await spendable(db, accountId, now)) {
          if (left <= 0) break;
          const used = Math.min(grant.remaining, left);
          await db.update(creditGrants).set({ remaining: grant.remaining - used }).where(eq(creditGrants.id, grant.id));
          left -= used;
        }
        if (left > 0) await db.insert(creditGrants).values({ accountId, amount: 0, remaining: -left, expiresAt: null, grantedBy: null, createdAt: now });
      });
    },
    grants: (accountId, now) =>
      db
        .select()
        .from(creditGrants)
        .where(and(unexpired(accountId, now), ne(creditGrants.remaining, 0)))
        .orderBy(...drawOrder),
    async clearDebt(accountId) {
      await db.update(creditGrants).set({ remaining: 0 }).where(and(eq(creditGrants.accountId, accountId), lt(creditGrants.remaining, 0)));
    },
  };
}

import { and, asc, eq, gt, isNull, lt, or, sql } from "drizzle-orm";
import { creditGrants } from "../schema/accounts.ts";
import { usageEvents } from "../schema/usage.ts";
import { expiringOf, settleDebts } from "../expiring-grants.ts";
import type { CreditStore, Piece } from "../store.ts";
import type { Connection } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";
import { creditConsumer } from "./usage-statements.ts";

const unexpired = (accountId: number, now: number) =>
  and(eq(creditGrants.accountId, accountId), or(isNull(creditGrants.expiresAt), gt(creditGrants.expiresAt, now)));

/** The order grants are drawn in: the earliest expiry first, grants without expiry last. */
const drawOrder = [sql`${creditGrants.expiresAt} IS NULL`, asc(creditGrants.expiresAt), asc(creditGrants.id)];

export function sqliteCredit({ db, sqlite }: Connection): Synchronous<CreditStore> {
  // Consumption is prepared once on the raw connection (usage-statements.ts): usage
  // batches charge several times a second.
  const consume = creditConsumer(sqlite);
  const balance = (accountId: number, now: number): number =>
    db.select({ total: sql<number>`coalesce(sum(${creditGrants.remaining}), 0)` }).from(creditGrants).where(unexpired(accountId, now)).get()?.total ?? 0;

  const take = sqlite.transaction((accountId: number, amount: number, now: number): Piece[] => {
    const grants = db
      .select()
      .from(creditGrants)
      .where(and(unexpired(accountId, now), gt(creditGrants.remaining, 0)))
      .orderBy(...drawOrder)
      .all();
    const pieces: Piece[] = [];
    let left = amount === Infinity ? Math.max(0, balance(accountId, now)) : amount;
    for (const grant of grants) {
      if (left <= 0) break;
      const used = Math.min(grant.remaining, left);
      db.update(creditGrants).set({ remaining: grant.remaining - used }).where(eq(creditGrants.id, grant.id)).run();
      pieces.push({ amount: used, expiresAt: grant.expiresAt });
      left -= used;
    }
    return pieces;
  });
  const give = sqlite.transaction((accountId: number, given: readonly Piece[], grantedBy: number | null, now: number) => {
    const debts = db.select({ id: creditGrants.id, remaining: creditGrants.remaining }).from(creditGrants).where(and(eq(creditGrants.accountId, accountId), lt(creditGrants.remaining, 0))).orderBy(asc(creditGrants.id)).all();
    const { paid, rest: pieces } = settleDebts(debts, given);
    for (const debt of paid) db.update(creditGrants).set({ remaining: debt.remaining }).where(eq(creditGrants.id, debt.id)).run();
    for (const piece of pieces) {
      if (piece.amount <= 0) continue;
      db.insert(creditGrants)
        .values({ accountId, amount: piece.amount, remaining: piece.amount, expiresAt: piece.expiresAt, grantedBy, createdAt: now })
        .run();
    }
  });
  return {
    balance,
    ledgerBalance(accountId, now) {
      const row = db
        .select({
          balance: sql<number>`coalesce(sum(${creditGrants.remaining}), 0)`,
          version: sql<number>`(SELECT coalesce(max(${usageEvents.id}), 0) FROM ${usageEvents})`,
          expiring: sql<string>`json_group_array(json_array(${creditGrants.expiresAt}, ${creditGrants.remaining})) FILTER (WHERE ${creditGrants.expiresAt} IS NOT NULL AND ${creditGrants.remaining} > 0)`,
        })
        .from(creditGrants)
        .where(unexpired(accountId, now))
        .get();
      return { balance: row?.balance ?? 0, version: row?.version ?? 0, expiring: expiringOf(row?.expiring) };
    },
    take: (accountId, amount, now) => take(accountId, amount, now),
    give: (accountId, pieces, grantedBy, now) => give(accountId, pieces, grantedBy, now),
    consume,
    grants: (accountId, now) =>
      db
        .select()
        .from(creditGrants)
        .where(and(unexpired(accountId, now), sql`${creditGrants.remaining} != 0`))
        .orderBy(...drawOrder)
        .all(),
    clearDebt(accountId) {
      db.update(creditGrants).set({ remaining: 0 }).where(and(eq(creditGrants.accountId, accountId), lt(creditGrants.remaining, 0))).run();
    },
  };
}

import { and, asc, eq, gt, isNull, or, sql } from "drizzle-orm";
import { badRequest } from "../core/errors.ts";
import type { Db } from "../store/db.ts";
import { creditGrants } from "../store/schema/accounts.ts";

/** A transaction handle or the database itself; ledger steps run inside the caller's transaction. */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0] | Db;

/** An amount of credit (nano-credits) with the expiry it carries. */
export interface Piece {
  amount: number;
  expiresAt: number | null;
}

const spendable = (accountId: number, now: number) =>
  and(eq(creditGrants.accountId, accountId), gt(creditGrants.remaining, 0), or(isNull(creditGrants.expiresAt), gt(creditGrants.expiresAt, now)));

/** Unexpired credit of an account, in nano-credits. */
export function balanceOf(tx: Tx, accountId: number, now: number): number {
  return tx.select({ total: sql<number>`coalesce(sum(${creditGrants.remaining}), 0)` }).from(creditGrants).where(spendable(accountId, now)).get()?.total ?? 0;
}

/**
 * Removes `amount` from an account's grants, the earliest expiry first (grants without
 * expiry last), and returns the pieces taken with their expiries. Throws 400 when
 * the unexpired balance is smaller. `amount` Infinity takes everything.
 */
export function take(tx: Tx, accountId: number, amount: number, now: number): Piece[] {
  const grants = tx
    .select()
    .from(creditGrants)
    .where(spendable(accountId, now))
    .orderBy(sql`${creditGrants.expiresAt} IS NULL`, asc(creditGrants.expiresAt), asc(creditGrants.id))
    .all();
  const available = grants.reduce((sum, g) => sum + g.remaining, 0);
  if (amount !== Infinity && available < amount) {
    throw badRequest(`Insufficient credit: ${available / 1e9} available, ${amount / 1e9} needed`, "CreditGranted", "insufficient_credit");
  }
  const pieces: Piece[] = [];
  let left = amount === Infinity ? available : amount;
  for (const grant of grants) {
    if (left <= 0) break;
    const used = Math.min(grant.remaining, left);
    tx.update(creditGrants).set({ remaining: grant.remaining - used }).where(eq(creditGrants.id, grant.id)).run();
    pieces.push({ amount: used, expiresAt: grant.expiresAt });
    left -= used;
  }
  return pieces;
}

/** Adds pieces as new grants of an account. */
export function give(tx: Tx, accountId: number, pieces: Piece[], grantedBy: number | null, now: number): void {
  for (const piece of pieces) {
    if (piece.amount <= 0) continue;
    tx.insert(creditGrants)
      .values({ accountId, amount: piece.amount, remaining: piece.amount, expiresAt: piece.expiresAt, grantedBy, createdAt: now })
      .run();
  }
}

/** Caps each piece's expiry at `latest` (credit given for N days never outlives them, nor its source). */
export function capExpiry(pieces: Piece[], latest: number | null): Piece[] {
  if (latest === null) return pieces;
  return pieces.map((p) => ({ amount: p.amount, expiresAt: p.expiresAt === null ? latest : Math.min(p.expiresAt, latest) }));
}

import { and, asc, eq, gt, isNull, or, sql } from "drizzle-orm";
import type { Database } from "bun:sqlite";
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

const unexpired = (accountId: number, now: number) =>
  and(eq(creditGrants.accountId, accountId), or(isNull(creditGrants.expiresAt), gt(creditGrants.expiresAt, now)));
const spendable = (accountId: number, now: number) => and(unexpired(accountId, now), gt(creditGrants.remaining, 0));

/**
 * Unexpired credit of an account, in nano-credits: the positive grants less any debt
 * (a call that cost more than was left leaves a negative, non-expiring entry).
 */
export function balanceOf(tx: Tx, accountId: number, now: number): number {
  return tx.select({ total: sql<number>`coalesce(sum(${creditGrants.remaining}), 0)` }).from(creditGrants).where(unexpired(accountId, now)).get()?.total ?? 0;
}

/** Grants with credit left, in the order they are drawn: the earliest expiry first, grants without expiry last. */
function spendableGrants(tx: Tx, accountId: number, now: number) {
  return tx
    .select()
    .from(creditGrants)
    .where(spendable(accountId, now))
    .orderBy(sql`${creditGrants.expiresAt} IS NULL`, asc(creditGrants.expiresAt), asc(creditGrants.id))
    .all();
}

/**
 * Charges consumption: draws from the grants that expire first; what the grants cannot
 * cover becomes debt, settled by the next credit the account receives. Consumption is
 * never refused here: admission already decided the call could run.
 *
 * Prepared once on the raw connection: usage batches charge several times a second,
 * and building the same queries through drizzle each time cost more than running them.
 * The caller runs it inside its own transaction.
 */
export function createConsumer(sqlite: Database): (accountId: number, amount: number, now: number) => void {
  const grants = sqlite.query<{ id: number; remaining: number }, [number, number]>(
    `SELECT id, remaining FROM credit_grants
     WHERE account_id = ? AND (expires_at IS NULL OR expires_at > ?) AND remaining > 0
     ORDER BY expires_at IS NULL, expires_at, id`,
  );
  const draw = sqlite.query<unknown, [number, number]>("UPDATE credit_grants SET remaining = ? WHERE id = ?");
  const owe = sqlite.query<unknown, [number, number, number]>(
    "INSERT INTO credit_grants (account_id, amount, remaining, expires_at, granted_by, created_at) VALUES (?, 0, ?, NULL, NULL, ?)",
  );
  return (accountId, amount, now) => {
    if (amount <= 0) return;
    let left = amount;
    for (const grant of grants.all(accountId, now)) {
      if (left <= 0) break;
      const used = Math.min(grant.remaining, left);
      draw.run(grant.remaining - used, grant.id);
      left -= used;
    }
    if (left > 0) owe.run(accountId, -left, now);
  };
}

/**
 * Removes `amount` from an account's grants, the earliest expiry first (grants without
 * expiry last), and returns the pieces taken with their expiries. Throws 400 when
 * the unexpired balance is smaller. `amount` Infinity takes everything.
 */
export function take(tx: Tx, accountId: number, amount: number, now: number): Piece[] {
  const grants = spendableGrants(tx, accountId, now);
  // Debt counts against what may be given away.
  const available = Math.max(0, balanceOf(tx, accountId, now));
  if (amount !== Infinity && available < amount) {
    throw badRequest(`Insufficient credit: ${available / 1e9} available, ${amount / 1e9} needed`, "CreditGranted", "insufficient_credit");
  }
  const pieces: Piece[] = [];
  let left = amount === Infinity ? available : amount;
  if (left <= 0) return pieces;
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

/** The grants that make up an account's balance: unexpired, with credit left or owed, soonest expiry first. */
export function grantsOf(tx: Tx, accountId: number, now: number) {
  return tx
    .select()
    .from(creditGrants)
    .where(and(unexpired(accountId, now), sql`${creditGrants.remaining} != 0`))
    .orderBy(sql`${creditGrants.expiresAt} IS NULL`, asc(creditGrants.expiresAt), asc(creditGrants.id))
    .all();
}

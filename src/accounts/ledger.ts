import { badRequest } from "../core/errors.ts";
import type { Piece, Repositories } from "../store/store.ts";

export type { Piece };

/** The repositories of the open transaction (ledger steps run inside the caller's). */
export type Tx = Pick<Repositories, "accounts" | "credit">;

/**
 * What an account's calls hold back from its balance (reservations in flight, charges not
 * yet written), read outside the transaction, with the ledger balance seen beside it.
 */
export interface Held {
  amount: number;
  ledger: number;
}

/**
 * What of `held` still stands beside `balance`, the ledger read now: a charge written to
 * the ledger since `held` was read has left what is held (the ledger fell by it), and
 * must not count twice. (The ledger falling for another reason only counts less held.)
 */
export function stillHeld(held: Held | undefined, balance: number): number {
  if (!held) return 0;
  return Math.max(0, held.amount - Math.max(0, held.ledger - balance));
}

/**
 * Removes `amount` from an account's grants, the earliest expiry first (grants without
 * expiry last), and returns the pieces taken with their expiries. Throws 400 when the
 * unexpired balance less what the account's calls hold (`held`: those calls spend it)
 * is smaller; debt counts against what may be given away too. `amount` Infinity takes
 * everything.
 */
export async function take(tx: Tx, accountId: number, amount: number, now: number, heldBefore?: Held): Promise<Piece[]> {
  const balance = await tx.credit.balance(accountId, now);
  const held = stillHeld(heldBefore, balance);
  const available = Math.max(0, balance - held);
  if (amount !== Infinity && available < amount) {
    const heldNote = held > 0 && balance > available ? ` (${Math.min(held, balance) / 1e9} of the balance is held by calls in flight)` : "";
    throw badRequest(`Insufficient credit: ${available / 1e9} available${heldNote}, ${amount / 1e9} needed`, "CreditGranted", "insufficient_credit");
  }
  if ((amount === Infinity ? available : amount) <= 0) return [];
  return tx.credit.take(accountId, amount, now);
}

/** Caps each piece's expiry at `latest` (credit given for N days never outlives them, nor its source). */
export function capExpiry(pieces: Piece[], latest: number | null): Piece[] {
  if (latest === null) return pieces;
  return pieces.map((p) => ({ amount: p.amount, expiresAt: p.expiresAt === null ? latest : Math.min(p.expiresAt, latest) }));
}

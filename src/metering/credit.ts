import { and, eq, gt, isNotNull, min } from "drizzle-orm";
import { balanceOf } from "../accounts/ledger.ts";
import type { Store } from "../store/db.ts";
import { creditGrants } from "../store/schema/accounts.ts";

/**
 * An account's ledger balance as the State reads it when it holds none (or holds a
 * stale one): admission then counts spendable credit as this balance less charges not
 * yet written and reservations of calls in flight. A call reserves its worst-case cost
 * before it is forwarded and settles to the actual cost when it ends; it is admitted
 * while something is left after the reservations in flight, so N concurrent calls can
 * never together overspend the balance by more than one call.
 *
 * `staleAt` is when the earliest unexpired grant expires: from then on the balance is
 * smaller than the one read, so it is read again.
 */
export function createBalanceLoader(store: Store): (accountId: number, now: number) => { balance: number; staleAt: number } {
  return (accountId, now) => {
    const next = store.db
      .select({ at: min(creditGrants.expiresAt) })
      .from(creditGrants)
      .where(and(eq(creditGrants.accountId, accountId), gt(creditGrants.remaining, 0), isNotNull(creditGrants.expiresAt), gt(creditGrants.expiresAt, now)))
      .get()?.at;
    return { balance: balanceOf(store.db, accountId, now), staleAt: next ?? Infinity };
  };
}

import type { Store } from "../store/store.ts";

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
export function createBalanceLoader(store: Store): (accountId: number, now: number) => Promise<{ balance: number; staleAt: number }> {
  return async (accountId, now) => {
    const [balance, next] = await Promise.all([store.credit.balance(accountId, now), store.credit.nextExpiry(accountId, now)]);
    return { balance, staleAt: next ?? Infinity };
  };
}

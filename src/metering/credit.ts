import type { LoadedBalance } from "../state/state.ts";
import type { Store } from "../store/store.ts";
import type { ChargeWrites } from "./charge-writes.ts";

/**
 * An account's ledger balance as the State reads it when it holds none (or holds a
 * stale one): admission then counts spendable credit as this balance less charges not
 * yet written and reservations of calls in flight. A call reserves its worst-case cost
 * before it is forwarded and settles to the actual cost when it ends; it is admitted
 * while something is left after the reservations in flight, so N concurrent calls can
 * never together overspend the balance by more than one call.
 *
 * `staleAt` is when the earliest unexpired grant expires: from then on the balance is
 * smaller than the one read, so it is read again. `version` is the ledger's as the read
 * saw it: charges written at that version or before are in the balance already, so
 * their `credit.flushed` does not take them off it again (another instance's write,
 * committed just before this read and announced after it). `expiring` lets the State
 * take expired grants off by itself when the ledger cannot be read at their expiry.
 */
export function createBalanceLoader(
  store: Store,
  /** This process's usage writes (charge-writes.ts): a read is ordered after them. */
  underWay?: ChargeWrites,
): (accountId: number, now: number) => Promise<LoadedBalance> {
  return async (accountId, now) => {
    for (let attempt = 1; ; attempt++) {
      await underWay?.settled(SETTLE_WAIT_MS);
      const began = underWay?.started();
      const { balance, version, expiring } = await store.credit.ledgerBalance(accountId, now);
      // A write that began meanwhile may have committed before this read and announce its charges after it.
      if (underWay === undefined || underWay.started() === began || attempt >= MAX_READS) return { balance, staleAt: expiring[0]?.at ?? Infinity, version, expiring };
    }
  };
}

/** Longest wait for the writes under way before a balance is read anyway. */
const SETTLE_WAIT_MS = 1000;
/** Reads of one balance at most, while writes keep beginning. */
const MAX_READS = 3;

import { and, eq, gt, isNotNull, min } from "drizzle-orm";
import { balanceOf } from "../accounts/ledger.ts";
import type { Clock } from "../core/clock.ts";
import type { Store } from "../store/db.ts";
import { creditGrants } from "../store/schema/accounts.ts";

interface CreditState {
  /** Balance in the ledger when last read, less charges flushed since. */
  stored: number;
  /** Charges settled in memory and not yet written to the ledger. */
  unflushed: number;
  /** Worst-case costs of calls in flight. */
  reserved: number;
  /** When the earliest unexpired grant expires: the cached balance is stale from then on. */
  staleAt: number;
}

/**
 * Account balances in memory for admission: what the ledger holds, less charges not
 * yet written and reservations of calls in flight. A call reserves its worst-case
 * cost before it is forwarded and settles to the actual cost when it ends. A call is
 * admitted while something is left after the reservations in flight, so N concurrent
 * calls can never together overspend the balance by more than one call.
 */
export interface CreditBook {
  /** Spendable now (nano-credits): the balance less unwritten charges and reservations in flight. */
  available(accountId: number): number;
  /** Worst-case costs of the account's calls in flight (nano-credits). */
  reserved(accountId: number): number;
  reserve(accountId: number, amount: number): void;
  /** Ends a reservation and charges the actual cost in its place. */
  settle(accountId: number, reserved: number, charged: number): void;
  /** Re-reads the ledger (credit was granted, deducted or returned). */
  invalidate(accountId: number): void;
  /** Called when charges reached the ledger. */
  flushed(charged: ReadonlyMap<number, number>): void;
  /** What the account's calls hold back from its ledger balance: reservations in flight and unwritten charges. */
  held(accountId: number): number;
  /**
   * The account was deleted: `settled` runs once nothing is held any more (at once when
   * nothing is), so what is left can go to its parent after its last call's charge is
   * written.
   */
  retire(accountId: number, settled: () => void): void;
}

export function createCreditBook(deps: { store: Store; clock: Clock }): CreditBook {
  const states = new Map<number, CreditState>();
  /** Deleted accounts whose calls still hold credit, and what to do when they no longer do. */
  const retired = new Map<number, () => void>();
  const held = (accountId: number) => {
    const state = states.get(accountId);
    return state ? state.reserved + state.unflushed : 0;
  };
  const settleRetired = (accountId: number) => {
    const settled = retired.get(accountId);
    if (!settled || held(accountId) > 0) return;
    retired.delete(accountId);
    states.delete(accountId);
    settled();
  };

  const load = (accountId: number, previous?: CreditState): CreditState => {
    const now = deps.clock.now();
    const next = deps.store.db
      .select({ at: min(creditGrants.expiresAt) })
      .from(creditGrants)
      .where(and(eq(creditGrants.accountId, accountId), gt(creditGrants.remaining, 0), isNotNull(creditGrants.expiresAt), gt(creditGrants.expiresAt, now)))
      .get()?.at;
    const state: CreditState = {
      stored: balanceOf(deps.store.db, accountId, now),
      unflushed: previous?.unflushed ?? 0,
      reserved: previous?.reserved ?? 0,
      staleAt: next ?? Infinity,
    };
    states.set(accountId, state);
    return state;
  };

  const stateOf = (accountId: number) => {
    const state = states.get(accountId);
    if (!state) return load(accountId);
    return deps.clock.now() >= state.staleAt ? load(accountId, state) : state;
  };

  return {
    available(accountId) {
      const state = stateOf(accountId);
      return state.stored - state.unflushed - state.reserved;
    },
    reserved(accountId) {
      return states.get(accountId)?.reserved ?? 0;
    },
    reserve(accountId, amount) {
      stateOf(accountId).reserved += amount;
    },
    settle(accountId, reserved, charged) {
      const state = stateOf(accountId);
      state.reserved = Math.max(0, state.reserved - reserved);
      state.unflushed += charged;
      if (retired.size > 0) settleRetired(accountId);
    },
    invalidate(accountId) {
      const state = states.get(accountId);
      if (state) load(accountId, state);
    },
    flushed(charged) {
      for (const [accountId, amount] of charged) {
        const state = states.get(accountId);
        if (!state) continue;
        state.stored -= amount;
        state.unflushed = Math.max(0, state.unflushed - amount);
        if (retired.size > 0) settleRetired(accountId);
      }
    },
    held,
    retire(accountId, settled) {
      retired.set(accountId, settled);
      settleRetired(accountId);
    },
  };
}

import type { Clock } from "../core/clock.ts";
import type { Store } from "../store/store.ts";
import { ancestorIds } from "./chain.ts";

/**
 * What is left of a deleted account once its last call has settled: a deleted account
 * keeps back the credit its calls in flight reserved and its unwritten charges (see
 * `AccountsService.remove`); when those calls have ended and their charges reached the
 * ledger, the rest goes to its nearest live ancestor, and a debt (a call that cost more
 * than was left) is charged to that ancestor instead of staying on an account nobody
 * can pay for. Returns the ancestor, or undefined when there is none.
 */
export function createRetiredCreditSweeper(deps: { store: Store; clock: Clock }) {
  return (accountId: number): Promise<number | undefined> => {
    const now = deps.clock.now();
    return deps.store.transaction(async (tx) => {
      const row = await tx.accounts.anyById(accountId);
      if (!row) return undefined;
      let heir: number | undefined;
      for (const id of ancestorIds(row).reverse()) {
        if (await tx.accounts.byId(id)) {
          heir = id;
          break;
        }
      }
      if (heir === undefined) return undefined;
      await tx.credit.give(heir, await tx.credit.take(accountId, Infinity, now), accountId, now);
      const debt = await tx.credit.balance(accountId, now);
      if (debt < 0) {
        await tx.credit.clearDebt(accountId);
        await tx.credit.consume(heir, -debt, now);
      }
      return heir;
    });
  };
}

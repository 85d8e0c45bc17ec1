import { and, eq, isNull, lt } from "drizzle-orm";
import type { Clock } from "../core/clock.ts";
import type { Store } from "../store/db.ts";
import { accounts, creditGrants } from "../store/schema/accounts.ts";
import { ancestorIds } from "./chain.ts";
import { balanceOf, createConsumer, give, take } from "./ledger.ts";

/**
 * What is left of a deleted account once its last call has settled: a deleted account
 * keeps back the credit its calls in flight reserved and its unwritten charges (see
 * `AccountsService.remove`); when those calls have ended and their charges reached the
 * ledger, the rest goes to its nearest live ancestor, and a debt (a call that cost more
 * than was left) is charged to that ancestor instead of staying on an account nobody
 * can pay for. Returns the ancestor, or undefined when there is none.
 */
export function createRetiredCreditSweeper(deps: { store: Store; clock: Clock }) {
  const consume = createConsumer(deps.store.sqlite);
  return (accountId: number): number | undefined => {
    const now = deps.clock.now();
    return deps.store.db.transaction(
      (tx) => {
        const row = tx.select({ id: accounts.id, path: accounts.path }).from(accounts).where(eq(accounts.id, accountId)).get();
        if (!row) return undefined;
        const heir = ancestorIds(row)
          .reverse()
          .find((id) => tx.select({ id: accounts.id }).from(accounts).where(and(eq(accounts.id, id), isNull(accounts.deletedAt))).get() !== undefined);
        if (heir === undefined) return undefined;
        give(tx, heir, take(tx, accountId, Infinity, now), accountId, now);
        const debt = balanceOf(tx, accountId, now);
        if (debt < 0) {
          tx.update(creditGrants).set({ remaining: 0 }).where(and(eq(creditGrants.accountId, accountId), lt(creditGrants.remaining, 0))).run();
          consume(heir, -debt, now);
        }
        return heir;
      },
      { behavior: "immediate" },
    );
  };
}

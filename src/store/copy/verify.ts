import type { Store } from "../store.ts";
import type { Source } from "./source.ts";
import { COPIED_TABLES } from "./tables.ts";
import type { Target } from "./target.ts";

export interface TableCount {
  name: string;
  source: number;
  target: number;
}

export interface BalanceMismatch {
  accountId: number;
  /** Nano-credits. */
  source: number;
  target: number;
}

export interface Verification {
  tables: TableCount[];
  /** Accounts whose balance was compared (deleted ones included). */
  accounts: number;
  balances: BalanceMismatch[];
  ok: boolean;
}

/**
 * Compares the two sides after the copy: rows per table, and each account's balance as
 * each side's credit repository computes it (the same question a running router
 * asks). Read after the copy committed and outside the source's snapshot, so a router
 * still writing to the source shows up here as a difference.
 */
export async function verifyCopy(source: Source, target: Target, targetStore: Store, now: number): Promise<Verification> {
  const tables: TableCount[] = [];
  for (const table of COPIED_TABLES) tables.push({ name: table.name, source: source.count(table), target: await target.count(table) });
  const ids = source.accountIds();
  const balances: BalanceMismatch[] = [];
  for (const accountId of ids) {
    const [here, there] = [source.balance(accountId, now), await targetStore.credit.balance(accountId, now)];
    if (here !== there) balances.push({ accountId, source: here, target: there });
  }
  const ok = balances.length === 0 && tables.every((t) => t.source === t.target);
  return { tables, accounts: ids.length, balances, ok };
}

import type { AccountRow } from "../store/schema/accounts.ts";

/**
 * An account and its ancestors, nearest first: the accounts whose DailyLimit, HardLimit
 * and SoftLimit a call of that account spends against (each bounds its whole subtree).
 * Ancestor rows are cached until any account changes, so admission reads no database.
 */
export interface AccountChains {
  of(account: Readonly<AccountRow>): readonly Readonly<AccountRow>[];
  /** Forgets every cached row (an account was created, changed, rotated or deleted). */
  clear(): void;
}

/** The ancestor ids in a materialised path (`/1/4/9/` → 1, 4 for account 9), root first. */
export function ancestorIds(account: Pick<AccountRow, "id" | "path">): number[] {
  const ids: number[] = [];
  for (const part of account.path.split("/")) {
    if (!part) continue;
    const id = Number(part);
    if (Number.isInteger(id) && id !== account.id) ids.push(id);
  }
  return ids;
}

export function createAccountChains(load: (accountId: number) => AccountRow | undefined): AccountChains {
  let rows = new Map<number, AccountRow | undefined>();
  let chains = new WeakMap<Readonly<AccountRow>, readonly Readonly<AccountRow>[]>();
  const row = (id: number) => {
    if (!rows.has(id)) rows.set(id, load(id));
    return rows.get(id);
  };
  return {
    of(account) {
      let chain = chains.get(account);
      if (chain) return chain;
      const ancestors = ancestorIds(account)
        .reverse()
        .map(row)
        .filter((found): found is AccountRow => found !== undefined);
      chain = [account, ...ancestors];
      chains.set(account, chain);
      return chain;
    },
    clear() {
      rows = new Map();
      chains = new WeakMap();
    },
  };
}

import type { AccountRow } from "../store/store.ts";

/**
 * An account and its ancestors, nearest first: the accounts whose DailyLimit, HardLimit
 * and SoftLimit a call of that account spends against (each bounds its whole subtree).
 * Ancestor rows are cached until any account changes, so admission reads no database.
 */
export interface AccountChains {
  of(account: Readonly<AccountRow>): Promise<readonly Readonly<AccountRow>[]>;
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

export function createAccountChains(load: (accountId: number) => Promise<AccountRow | undefined>): AccountChains {
  let rows = new Map<number, Promise<AccountRow | undefined>>();
  // Each snapshot's chain as a settled promise, made once: a hit makes no promise.
  let chains = new WeakMap<Readonly<AccountRow>, Promise<readonly Readonly<AccountRow>[]>>();
  const row = (id: number) => {
    let loaded = rows.get(id);
    if (!loaded) rows.set(id, (loaded = load(id)));
    return loaded;
  };
  const build = async (account: Readonly<AccountRow>) => {
    // A clear while the ancestors load means they may be older than the change: used once, not kept.
    const kept = chains;
    const ancestors = (await Promise.all(ancestorIds(account).reverse().map(row))).filter((found): found is AccountRow => found !== undefined);
    const chain = [account, ...ancestors];
    kept.set(account, Promise.resolve(chain));
    return chain;
  };
  return {
    of: (account) => chains.get(account) ?? build(account),
    clear() {
      rows = new Map();
      chains = new WeakMap();
    },
  };
}

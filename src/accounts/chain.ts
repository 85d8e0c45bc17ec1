import type { AccountRow } from "../store/store.ts";

/**
 * An account and its ancestors, nearest first: the accounts whose DailyLimit, HardLimit
 * and SoftLimit a call of that account spends against (each bounds its whole subtree).
 * Ancestor rows are cached until that account changes, so admission reads no database.
 */
export interface AccountChains {
  of(account: Readonly<AccountRow>): Promise<readonly Readonly<AccountRow>[]>;
  /** Forgets one account's row (it was created, changed, rotated or deleted). */
  changed(accountId: number): void;
  /** Every row is read again on its next use (messages may have been missed). */
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
  /** The rows before a clear: one is used again only while the store cannot be read. */
  let before = new Map<number, Promise<AccountRow | undefined>>();
  /** Reads answered from `before`: a chain built meanwhile is not kept. */
  let fallbacks = 0;
  // Each snapshot's chain as a settled promise, made once: a hit makes no promise.
  let chains = new WeakMap<Readonly<AccountRow>, Promise<readonly Readonly<AccountRow>[]>>();
  const row = (id: number) => {
    let loaded = rows.get(id);
    if (!loaded) {
      const kept = rows;
      loaded = load(id).then(
        (found) => {
          before.delete(id);
          return found;
        },
        (error: unknown) => {
          // A failed read is not kept (it would fail every call of the subtree until the next change).
          if (kept.get(id) === loaded) kept.delete(id);
          const known = before.get(id);
          if (known === undefined) throw error;
          fallbacks++;
          return known;
        },
      );
      rows.set(id, loaded);
    }
    return loaded;
  };
  const build = async (account: Readonly<AccountRow>) => {
    // A change while the ancestors load means they may be older than it: used once, not kept.
    const kept = chains;
    const fellBack = fallbacks;
    const ancestors = (await Promise.all(ancestorIds(account).reverse().map(row))).filter((found): found is AccountRow => found !== undefined);
    const chain = [account, ...ancestors];
    // A chain of rows known before a clear is read again on the next call.
    if (fallbacks === fellBack) kept.set(account, Promise.resolve(chain));
    return chain;
  };
  return {
    of: (account) => chains.get(account) ?? build(account),
    changed(accountId) {
      rows.delete(accountId);
      before.delete(accountId);
      // Chains are rebuilt from the rows kept: only the changed one is read.
      chains = new WeakMap();
    },
    clear() {
      before = new Map([...before, ...rows]);
      rows = new Map();
      chains = new WeakMap();
    },
  };
}

import type { AccountRow } from "../store/schema/accounts.ts";

/**
 * The authenticated caller as the request path sees it: a read-only snapshot of
 * the account, cached by key hash so authentication costs one hash and one map hit.
 */
export interface Principal {
  readonly account: Readonly<AccountRow>;
}

export interface PrincipalCache {
  /** The principal for a key hash, loading it on a miss; undefined for unknown keys. */
  get(keyHash: string): Principal | undefined;
  /** Drops the account's cached principal (rotation, deletion, update). */
  invalidateAccount(accountId: number): void;
  clear(): void;
}

export function createPrincipalCache(load: (keyHash: string) => AccountRow | undefined): PrincipalCache {
  const byHash = new Map<string, Principal>();
  const hashOf = new Map<number, string>();
  return {
    get(keyHash) {
      const hit = byHash.get(keyHash);
      if (hit) return hit;
      // Unknown keys are not cached, so a key created by another process
      // (`router owner create`) works on its very first request.
      const account = load(keyHash);
      if (!account) return undefined;
      const principal: Principal = { account };
      byHash.set(keyHash, principal);
      hashOf.set(account.id, keyHash);
      return principal;
    },
    invalidateAccount(accountId) {
      const hash = hashOf.get(accountId);
      if (hash === undefined) return;
      byHash.delete(hash);
      hashOf.delete(accountId);
    },
    clear() {
      byHash.clear();
      hashOf.clear();
    },
  };
}

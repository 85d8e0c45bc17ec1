import { compilePattern, splitList, type CompiledPattern } from "../routing/patterns.ts";
import type { AccountRow } from "../store/schema/accounts.ts";
import { resourcesOf } from "./access.ts";
import { parseRange, type IpRange } from "./ip-ranges.ts";

/**
 * The authenticated caller as the request path sees it: a read-only snapshot of
 * the account with its allowlists compiled once, cached by key hash so
 * authentication costs one hash and one map hit.
 */
export interface Principal {
  readonly account: Readonly<AccountRow>;
  /** Allowed API path patterns; null for owners (unrestricted). */
  readonly resources: readonly CompiledPattern[] | null;
  /** Allowed model patterns; empty means every model. */
  readonly allowModels: readonly CompiledPattern[];
  /** Allowed client address ranges; empty means any address. */
  readonly allowIps: readonly IpRange[];
}

export function principalOf(account: AccountRow): Principal {
  const resources = resourcesOf(account);
  return {
    account,
    resources: resources === null ? null : splitList(resources).map(compilePattern),
    allowModels: splitList(account.allowModels).map(compilePattern),
    allowIps: splitList(account.allowIps)
      .map(parseRange)
      .filter((range): range is IpRange => range !== undefined),
  };
}

export interface PrincipalCache {
  /** The principal for a key hash, loading it on a miss; undefined for unknown keys. */
  get(keyHash: string): Principal | undefined;
  /** Drops the account's cached principal (rotation, deletion, update). */
  invalidateAccount(accountId: number): void;
  clear(): void;
}

/**
 * `onChange` hears every invalidation, with the account's id (none when everything was
 * dropped): caches derived from accounts (ancestor chains) and live sessions follow it.
 */
export function createPrincipalCache(load: (keyHash: string) => AccountRow | undefined, onChange?: (accountId?: number) => void): PrincipalCache {
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
      const principal = principalOf(account);
      byHash.set(keyHash, principal);
      hashOf.set(account.id, keyHash);
      return principal;
    },
    invalidateAccount(accountId) {
      onChange?.(accountId);
      const hash = hashOf.get(accountId);
      if (hash === undefined) return;
      byHash.delete(hash);
      hashOf.delete(accountId);
    },
    clear() {
      onChange?.();
      byHash.clear();
      hashOf.clear();
    },
  };
}

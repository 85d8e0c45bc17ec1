import { compilePattern, splitList, type CompiledPattern } from "../routing/patterns.ts";
import type { AccountRow } from "../store/store.ts";
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
  get(keyHash: string): Promise<Principal | undefined>;
  /** Drops the account's cached principal (rotation, deletion, update). */
  invalidateAccount(accountId: number): void;
  clear(): void;
}

/** How long a cached principal is trusted without any invalidation: a backstop if one was missed. */
export const PRINCIPAL_TTL_MS = 60_000;

/**
 * Principals by key hash. Writes drop what they change through the invalidation bus
 * (deps.ts subscribes this cache); entries also expire after PRINCIPAL_TTL_MS, so a
 * missed message cannot keep a rotated key or an old allowlist alive for longer.
 */
export function createPrincipalCache(load: (keyHash: string) => Promise<AccountRow | undefined>, now: () => number = Date.now): PrincipalCache {
  // A hit hands back the promise made when the entry was stored: the request path makes
  // no promise and enters no async function for a known key.
  const byHash = new Map<string, { principal: Promise<Principal>; until: number }>();
  const hashOf = new Map<number, string>();
  // Bumped by every invalidation: a load that an invalidation overtook may hold the row
  // as it was before the change, so it answers its own request but is not cached.
  let generation = 0;
  const miss = async (keyHash: string, stale: boolean): Promise<Principal | undefined> => {
    // Unknown keys are not cached, so a key created by another process
    // (`router owner create`) works on its very first request.
    const loadedIn = generation;
    const account = await load(keyHash);
    if (!account) {
      if (stale) byHash.delete(keyHash);
      return undefined;
    }
    const principal = principalOf(account);
    if (loadedIn === generation) {
      byHash.set(keyHash, { principal: Promise.resolve(principal), until: now() + PRINCIPAL_TTL_MS });
      hashOf.set(account.id, keyHash);
    }
    return principal;
  };
  return {
    get(keyHash) {
      const hit = byHash.get(keyHash);
      if (hit && now() < hit.until) return hit.principal;
      return miss(keyHash, hit !== undefined);
    },
    invalidateAccount(accountId) {
      generation++;
      const hash = hashOf.get(accountId);
      if (hash === undefined) return;
      byHash.delete(hash);
      hashOf.delete(accountId);
    },
    clear() {
      generation++;
      byHash.clear();
      hashOf.clear();
    },
  };
}

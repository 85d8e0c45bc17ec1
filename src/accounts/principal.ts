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
  /** Every principal is read again on its next use (messages may have been missed). */
  clear(): void;
}

/** How long a cached principal is trusted without any invalidation: a backstop if one was missed. */
export const PRINCIPAL_TTL_MS = 60_000;
/** While the store cannot be read, how long an expired principal is served before the store is tried again. */
export const PRINCIPAL_RETRY_MS = 5_000;

/** `stale`: served on after its reload failed (the store away). */
type Entry = { principal: Promise<Principal>; until: number; stale?: boolean };

/**
 * Principals by key hash. Writes drop what they change through the invalidation bus
 * (deps.ts subscribes this cache); entries also expire after PRINCIPAL_TTL_MS, so a
 * missed message cannot keep a rotated key or an old allowlist alive for longer.
 *
 * An expired entry whose reload fails (the database is away) is served on, and the
 * store tried again every PRINCIPAL_RETRY_MS: without this, every call failed once the
 * database had been away for the TTL, although calls are served without it otherwise.
 * An entry dropped by an invalidation of its own account is never served again.
 *
 * While `listening` says invalidations from other processes cannot arrive (Redis away:
 * a key rotated or an allowlist changed on another instance is not heard of), an entry
 * is read again from the store at each use instead (served on only when that read
 * fails): before, a rotated key kept reading its account's data there for up to the TTL.
 */
export function createPrincipalCache(
  load: (keyHash: string) => Promise<AccountRow | undefined>,
  now: () => number = Date.now,
  /** Told when an expired principal is served because its reload failed. */
  onServedStale?: (error: unknown) => void,
  /** Whether other processes' invalidations reach this cache now (always, on the in-process bus). */
  listening: () => boolean = () => true,
): PrincipalCache {
  // A hit hands back the promise made when the entry was stored: the request path makes
  // no promise and enters no async function for a known key.
  const byHash = new Map<string, Entry>();
  const hashOf = new Map<number, string>();
  // A load that an invalidation of its account (or of everything) overtook may hold the
  // row as it was before the change: it answers its own request but is not cached.
  // Invalidations are numbered; those of single accounts are remembered while loads run.
  let generation = 0;
  let clearedAt = 0;
  const changedAt = new Map<number, number>();
  let loading = 0;
  const miss = async (keyHash: string, expired: Entry | undefined): Promise<Principal | undefined> => {
    // Unknown keys are not cached, so a key created by another process
    // (`router owner create`) works on its very first request.
    const loadedIn = generation;
    loading++;
    let account: AccountRow | undefined;
    let overtaken: boolean;
    try {
      account = await load(keyHash);
      overtaken = clearedAt > loadedIn || (account !== undefined && (changedAt.get(account.id) ?? 0) > loadedIn);
    } catch (error) {
      // Served on only if nothing dropped the entry meanwhile.
      if (expired === undefined || byHash.get(keyHash) !== expired) throw error;
      expired.until = now() + PRINCIPAL_RETRY_MS;
      expired.stale = true;
      onServedStale?.(error);
      return expired.principal;
    } finally {
      if (--loading === 0) changedAt.clear();
    }
    if (!account) {
      if (expired) byHash.delete(keyHash);
      return undefined;
    }
    const principal = principalOf(account);
    if (!overtaken) {
      byHash.set(keyHash, { principal: Promise.resolve(principal), until: now() + PRINCIPAL_TTL_MS });
      hashOf.set(account.id, keyHash);
    }
    return principal;
  };
  return {
    get(keyHash) {
      const hit = byHash.get(keyHash);
      if (hit && now() < hit.until && (hit.stale === true || listening())) return hit.principal;
      return miss(keyHash, hit);
    },
    invalidateAccount(accountId) {
      if (loading > 0) changedAt.set(accountId, ++generation);
      const hash = hashOf.get(accountId);
      if (hash === undefined) return;
      byHash.delete(hash);
      hashOf.delete(accountId);
    },
    clear() {
      clearedAt = ++generation;
      // Messages may have been missed: every entry is loaded again on its next use, and
      // served on only while the store cannot be read.
      for (const entry of byHash.values()) entry.until = 0;
    },
  };
}

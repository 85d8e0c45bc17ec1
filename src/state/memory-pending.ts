/** The memory State's short-lived entries (sign-up codes) and claims (one holder of a job at a time). */
import type { ClaimState, PendingState } from "./state.ts";

export function createMemoryPending<T>(): PendingState<T> {
  const entries = new Map<string, { value: T; expiresAt: number }>();
  return {
    async put(key, value, ttlMs, now) {
      // Expired entries go when a new one comes: the map stays as small as the live ones.
      for (const [k, entry] of entries) if (entry.expiresAt < now) entries.delete(k);
      entries.set(key, { value, expiresAt: now + ttlMs });
    },
    async take(key, now) {
      const entry = entries.get(key);
      if (!entry) return undefined;
      entries.delete(key);
      return entry.expiresAt >= now ? entry.value : undefined;
    },
  };
}

export function createMemoryClaims(): ClaimState {
  const claims = new Map<string, number>();
  return {
    async claim(key, ttlMs, now) {
      const until = claims.get(key);
      if (until !== undefined && until > now) return false;
      claims.set(key, now + ttlMs);
      return true;
    },
    async release(key) {
      claims.delete(key);
    },
  };
}

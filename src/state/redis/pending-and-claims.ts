import type { ClaimState, PendingState } from "../state.ts";
import type { RedisConnection } from "./connection.ts";
import type { Run } from "./counter-lines.ts";
import { CLAIM } from "./lua-keys.ts";

// Pending sign-ups and one-time claims on Redis: the State's two kinds of entries that only expire.

/**
 * Pending entries: the value and its end (in the caller's clock) under one key, which
 * Redis also expires; GETDEL takes an entry once, whichever instance asks.
 */
export function createPending<T>(redis: RedisConnection, prefix: string): PendingState<T> {
  return {
    async put(key, value, ttlMs, now) {
      await redis.send("SET", [prefix + key, JSON.stringify({ value, expiresAt: now + ttlMs }), "PX", String(Math.max(1, ttlMs))]);
    },
    async take(key, now) {
      const text = (await redis.send("GETDEL", [prefix + key])) as string | null;
      if (text === null || text === undefined) return undefined;
      const entry = JSON.parse(text) as { value: T; expiresAt: number };
      return entry.expiresAt >= now ? entry.value : undefined;
    },
  };
}

export function createClaims(redis: RedisConnection, prefix: string, run: Run): ClaimState {
  return {
    async claim(key, ttlMs, now) {
      return Number(await run(CLAIM, { key: prefix + key, now, ttl: ttlMs })) === 1;
    },
    async release(key) {
      await redis.send("DEL", [prefix + key]);
    },
  };
}

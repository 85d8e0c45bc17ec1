import { and, eq } from "drizzle-orm";
import type { Clock } from "../core/clock.ts";
import type { Store } from "../store/db.ts";
import { upstreamObjects, type UpstreamObjectRow } from "../store/schema/affinity.ts";

export type ObjectKind = "file" | "response" | "thread" | "run" | "video" | "client_secret";

/**
 * Remembers which account created an upstream object and which provider key holds
 * it, in the database (it survives restarts) with a small in-memory cache in front.
 */
export interface Affinity {
  remember(objectId: string, kind: ObjectKind, accountId: number, keyId: number): void;
  lookup(objectId: string): UpstreamObjectRow | undefined;
  forget(objectId: string): void;
  /** Objects of a kind the account created, newest first. */
  ownedBy(accountId: number, kind: ObjectKind): UpstreamObjectRow[];
}

const CACHE_LIMIT = 10_000;

export function createAffinity(deps: { store: Store; clock: Clock }): Affinity {
  const { db } = deps.store;
  const cache = new Map<string, UpstreamObjectRow>();
  const cached = (row: UpstreamObjectRow) => {
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(row.objectId, row);
    return row;
  };
  return {
    remember(objectId, kind, accountId, keyId) {
      const row = { objectId, kind, accountId, keyId, createdAt: deps.clock.now() };
      db.insert(upstreamObjects).values(row).onConflictDoUpdate({ target: upstreamObjects.objectId, set: row }).run();
      cached(row);
    },
    lookup(objectId) {
      const hit = cache.get(objectId);
      if (hit) return hit;
      const row = db.select().from(upstreamObjects).where(eq(upstreamObjects.objectId, objectId)).get();
      return row ? cached(row) : undefined;
    },
    forget(objectId) {
      cache.delete(objectId);
      db.delete(upstreamObjects).where(eq(upstreamObjects.objectId, objectId)).run();
    },
    ownedBy(accountId, kind) {
      return db
        .select()
        .from(upstreamObjects)
        .where(and(eq(upstreamObjects.accountId, accountId), eq(upstreamObjects.kind, kind)))
        .all()
        .sort((a, b) => b.createdAt - a.createdAt);
    },
  };
}

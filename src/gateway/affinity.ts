import type { Clock } from "../core/clock.ts";
import type { Store, UpstreamObjectRow } from "../store/store.ts";
import type { InvalidationBus } from "../core/invalidation.ts";

export type ObjectKind = "file" | "response" | "thread" | "run" | "video" | "client_secret";

/**
 * Remembers which account created an upstream object and which provider key holds
 * it, in the database (it survives restarts) with a small in-memory cache in front.
 */
export interface Affinity {
  /** `mintedBy`: a realtime client secret's minter (the hash of the router key that minted it: the secret dies with that key). */
  remember(objectId: string, kind: ObjectKind, accountId: number, keyId: number, mintedBy?: string): Promise<void>;
  lookup(objectId: string): Promise<UpstreamObjectRow | undefined>;
  forget(objectId: string): Promise<void>;
  /** Objects of a kind the account created, newest first. */
  ownedBy(accountId: number, kind: ObjectKind): Promise<UpstreamObjectRow[]>;
}

const CACHE_LIMIT = 10_000;

export function createAffinity(deps: {
  store: Store;
  clock: Clock;
  /** Tells every instance's cache when a binding ends, and hears theirs. */
  bus?: InvalidationBus;
  onCollision?: (objectId: string, kind: ObjectKind) => void;
}): Affinity {
  const objects = deps.store.objects;
  const cache = new Map<string, UpstreamObjectRow>();
  const cached = (row: UpstreamObjectRow) => {
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(row.objectId, row);
    return row;
  };
  deps.bus?.subscribe((event) => {
    if (event.kind === "object") cache.delete(event.objectId);
    else if (event.kind === "everything") cache.clear();
  });
  /** A binding ended: here, in the database, and in every instance's cache. */
  const drop = async (objectId: string) => {
    cache.delete(objectId);
    await objects.remove(objectId);
    await deps.bus?.publish({ kind: "object", objectId });
  };
  const lookup = async (objectId: string): Promise<UpstreamObjectRow | undefined> => {
    const hit = cache.get(objectId);
    if (hit) return hit;
    const row = await objects.get(objectId);
    return row ? cached(row) : undefined;
  };
  return {
    async remember(objectId, kind, accountId, keyId, mintedBy) {
      const row = { objectId, kind, accountId, keyId, createdAt: deps.clock.now(), mintedBy: mintedBy ?? null };
      // Two upstreams may number their objects alike (OpenAI-compatible servers counting
      // up): an id bound to another account keeps its owner (the store's upsert leaves it),
      // never taken over by a later one. A client secret is a credential of the router's:
      // given to two accounts, it would open sessions as whichever holds it, so it is
      // forgotten and opens none.
      if (await objects.put(row)) {
        cached(row);
        return;
      }
      deps.onCollision?.(objectId, kind);
      if (kind === "client_secret") await drop(objectId);
    },
    lookup,
    forget: drop,
    async ownedBy(accountId, kind) {
      return (await objects.ownedBy(accountId, kind)).sort((a, b) => b.createdAt - a.createdAt);
    },
  };
}

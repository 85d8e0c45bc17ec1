import type { Clock } from "../core/clock.ts";
import type { Store, UpstreamObjectRow } from "../store/store.ts";
import type { InvalidationBus } from "../core/invalidation.ts";

export type ObjectKind = "file" | "response" | "thread" | "run" | "video" | "client_secret";

/**
 * Remembers which account created an upstream object and which provider key holds
 * it, in the database (it survives restarts) with a small in-memory cache in front.
 *
 * Ids are kept per tenant (`tenantId`, 0 outside the BYOK style): two tenants' upstreams
 * may number their objects alike (self-hosted servers counting up), and one tenant's
 * object must neither hide the other's nor tell it that the id exists elsewhere. Only a
 * realtime client secret is kept deployment-wide: its socket is found by the secret alone,
 * before any tenant is known (its id is a hash of a credential: two accounts meet there
 * only when given the same secret, which is then forgotten, see `remember`).
 */
export interface Affinity {
  /** `mintedBy`: a realtime client secret's minter (the hash of the router key that minted it: the secret dies with that key). */
  remember(objectId: string, kind: ObjectKind, accountId: number, keyId: number, mintedBy?: string, tenantId?: number): Promise<void>;
  /** The binding of an upstream id in a tenant (its row names the upstream's id). */
  lookup(objectId: string, tenantId?: number): Promise<UpstreamObjectRow | undefined>;
  forget(objectId: string, tenantId?: number): Promise<void>;
  /** Objects of a kind the account (of the tenant) created, newest first, by their upstream ids. */
  ownedBy(accountId: number, kind: ObjectKind, tenantId?: number): Promise<UpstreamObjectRow[]>;
}

/**
 * The key a binding is stored under: the upstream's id in tenant 0 (as before tenants
 * existed), `<tenant>:<id>` in a BYOK tenant. Account ids are the same in both, so a
 * BYOK row written before ids were kept per tenant (unprefixed) is still found by its
 * owner (see `find`).
 */
const storedId = (objectId: string, tenantId: number) => (tenantId === 0 ? objectId : `${tenantId}:${objectId}`);

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
  const read = async (key: string): Promise<UpstreamObjectRow | undefined> => {
    const hit = cache.get(key);
    if (hit) return hit;
    const row = await objects.get(key);
    return row ? cached(row) : undefined;
  };
  /** The stored row of an id in a tenant; in a BYOK tenant, else an unprefixed row written before ids were kept per tenant. */
  const find = async (objectId: string, tenantId: number) =>
    (await read(storedId(objectId, tenantId))) ?? (tenantId === 0 ? undefined : await read(objectId));
  return {
    async remember(objectId, kind, accountId, keyId, mintedBy, tenantId = 0) {
      // A client secret is looked up by its value alone (before its tenant is known).
      const row = { objectId: storedId(objectId, kind === "client_secret" ? 0 : tenantId), kind, accountId, keyId, createdAt: deps.clock.now(), mintedBy: mintedBy ?? null };
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
      if (kind === "client_secret") await drop(row.objectId);
    },
    async lookup(objectId, tenantId = 0) {
      const row = await find(objectId, tenantId);
      return row && { ...row, objectId };
    },
    async forget(objectId, tenantId = 0) {
      const row = await find(objectId, tenantId);
      if (row) await drop(row.objectId);
    },
    async ownedBy(accountId, kind, tenantId = 0) {
      const prefix = storedId("", tenantId);
      const rows = await objects.ownedBy(accountId, kind);
      return rows.map((row) => ({ ...row, objectId: row.objectId.startsWith(prefix) ? row.objectId.slice(prefix.length) : row.objectId })).sort((a, b) => b.createdAt - a.createdAt);
    },
  };
}

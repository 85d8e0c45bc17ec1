/**
 * The invalidation bus (docs/architecture.md, "Seams"): a write tells every cache and
 * every live session what it changed, through one interface, so that the same caches
 * can later follow writes made by other processes or instances. Publishers say what
 * changed; subscribers decide what to drop.
 *
 * `everything` is what a subscriber hears when changes may have been missed (another
 * process wrote to the database, a reconnect): it drops all it holds.
 */
export type Invalidation =
  /** An account was created, updated, rotated or deleted (its subtree's sessions and limits may follow). */
  | { kind: "account"; accountId: number }
  /** A tenant's provider keys changed (added, updated, deleted, slept, woken). */
  | { kind: "keys"; tenantId: number }
  /** A tenant's configuration items changed. */
  | { kind: "config"; tenantId: number }
  /**
   * A key of the tenant slept or woke, or a Level switched over or back, on the system's
   * own verdict: key choices that reuse a read of the shared State drop it.
   */
  | { kind: "routing"; tenantId: number }
  /** An account's balance changed (a grant, a transfer, a batch): blocks reserved against the old one end. */
  | { kind: "credit"; accountId: number }
  /** An upstream object's binding ended (deleted, or forgotten after a collision): caches of it drop it. */
  | { kind: "object"; objectId: string }
  | { kind: "everything" };

/**
 * An event heard from another process, as this router can follow it. During a rolling
 * upgrade a newer instance may announce a change under a kind this version does not know,
 * or a known kind with fields of another shape: followed as it reads, it would be ignored
 * (every subscriber switches on the kinds it knows) or misread (an id of the wrong type
 * matches no cache entry), leaving this instance serving what was changed. Anything this
 * version cannot read whole is taken as `everything`: caches dropped, never kept stale.
 */
export function readInvalidation(event: unknown): Invalidation {
  const e = (typeof event === "object" && event !== null ? event : {}) as Record<string, unknown>;
  const id = (field: string) => Number.isSafeInteger(e[field]);
  switch (e.kind) {
    case "account":
    case "credit":
      if (id("accountId")) return { kind: e.kind, accountId: e.accountId as number };
      break;
    case "keys":
    case "config":
    case "routing":
      if (id("tenantId")) return { kind: e.kind, tenantId: e.tenantId as number };
      break;
    case "object":
      if (typeof e.objectId === "string") return { kind: "object", objectId: e.objectId };
      break;
  }
  return { kind: "everything" };
}

/** A subscriber; one that returns a promise is waited for before the publisher goes on. */
export type InvalidationListener = (event: Invalidation) => void | Promise<void>;

export interface InvalidationBus {
  /** Tells every subscriber, in subscription order; resolves once each has followed the change. */
  publish(event: Invalidation): Promise<void>;
  /** Returns the function that unsubscribes. */
  subscribe(listener: InvalidationListener): () => void;
}

/**
 * The in-process bus: every subscriber hears the event at once, in order, and the
 * publisher waits for the ones still working (a key pool re-reading its keys, live
 * sessions re-checked against the account), so a write's caches are dropped before
 * its response is sent. A subscriber that fails is reported and does not keep the
 * others from hearing the event.
 */
export function createLocalBus(onListenerError: (error: unknown, event: Invalidation) => void = () => {}): InvalidationBus {
  let listeners: InvalidationListener[] = [];
  return {
    async publish(event) {
      let pending: Array<Promise<void>> | undefined;
      for (const listener of listeners) {
        try {
          const result = listener(event);
          if (result) (pending ??= []).push(result.catch((error: unknown) => onListenerError(error, event)));
        } catch (error) {
          onListenerError(error, event);
        }
      }
      if (pending) await Promise.all(pending);
    },
    subscribe(listener) {
      listeners = [...listeners, listener];
      return () => {
        listeners = listeners.filter((l) => l !== listener);
      };
    },
  };
}

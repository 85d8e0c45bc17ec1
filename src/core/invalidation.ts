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
  | { kind: "everything" };

export type InvalidationListener = (event: Invalidation) => void;

export interface InvalidationBus {
  /** Tells every subscriber, in subscription order, before returning. */
  publish(event: Invalidation): void;
  /** Returns the function that unsubscribes. */
  subscribe(listener: InvalidationListener): () => void;
}

/**
 * The in-process bus: delivery is synchronous, so a write's caches are dropped before
 * its response is sent. A subscriber that throws is reported and does not keep the
 * others from hearing the event.
 */
export function createLocalBus(onListenerError: (error: unknown, event: Invalidation) => void = () => {}): InvalidationBus {
  let listeners: InvalidationListener[] = [];
  return {
    publish(event) {
      for (const listener of listeners) {
        try {
          listener(event);
        } catch (error) {
          onListenerError(error, event);
        }
      }
    },
    subscribe(listener) {
      listeners = [...listeners, listener];
      return () => {
        listeners = listeners.filter((l) => l !== listener);
      };
    },
  };
}

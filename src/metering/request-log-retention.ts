import { causeMessage } from "../core/errors.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import { IDEMPOTENCY_TTL_MS, type Store } from "../store/store.ts";

/** Days of request log kept unless `--request-log-days` says otherwise. */
export const DEFAULT_REQUEST_LOG_DAYS = 30;
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

export interface RequestLogPruner {
  /** Prunes now; resolves with the rows removed (0 when it failed: it is logged and retried within the hour). */
  prune(): Promise<number>;
  /** Stops the hourly timer (awaits a prune under way). */
  stop(): Promise<void>;
}

/**
 * Removes request-log rows older than `days`, and the answers kept for Idempotency-Keys
 * once they expire: once at start, then every hour, off the request path (a timer, not
 * a model call, pays for the delete). Every instance on one database may run it: a
 * delete of rows already gone removes nothing.
 */
export function startRequestLogPruner(deps: { store: Pick<Store, "requests" | "idempotency">; clock: Clock; log: Logger; days: number }): RequestLogPruner {
  let running: Promise<number> = Promise.resolve(0);
  const prune = (): Promise<number> => {
    running = running.then(async () => {
      await deps.store.idempotency
        .prune(deps.clock.now() - IDEMPOTENCY_TTL_MS)
        .catch((error: unknown) => deps.log.warn("expired Idempotency-Keys could not be removed; retrying within the hour", { error: causeMessage(error) }));
      try {
        const removed = await deps.store.requests.prune(deps.clock.now() - deps.days * DAY_MS);
        if (removed > 0) deps.log.info("request log pruned", { rows: removed, days: deps.days });
        return removed;
      } catch (error) {
        deps.log.warn("the request log could not be pruned; retrying within the hour", { error: causeMessage(error) });
        return 0;
      }
    });
    return running;
  };
  void prune();
  const timer = setInterval(() => void prune(), HOUR_MS);
  timer.unref();
  return {
    prune,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

import type { ServeConfig } from "./config.ts";
import type { Logger } from "./core/log.ts";
import { SECRET_ITEMS } from "./admin/config/items.ts";
import { acquireSingleInstanceLock, sealedValues, shownUrl, withStartupLock } from "./store/postgres/index.ts";
import { assertSealingKey, type LoadedSealer } from "./store/sealing-check.ts";
import type { Store } from "./store/store.ts";

/**
 * What an instance on a shared database checks before serving: that it is the only one
 * when it has no Redis (limits kept in memory would be per instance), and that its
 * sealing key opens the secrets already stored. Adds what must be released at close.
 */
export async function claimDatabase(
  config: ServeConfig,
  store: Store,
  sealing: LoadedSealer,
  closing: Array<() => void | Promise<void>>,
  log: Logger,
): Promise<void> {
  if (config.redis === undefined) {
    const lock = await acquireSingleInstanceLock(store, log);
    if (!lock) {
      throw new Error(
        `another instance already runs on ${shownUrl(config.database!)} without Redis: without --redis only one instance may use a database (give every instance --redis to run several)`,
      );
    }
    closing.push(() => lock.release().catch(() => {}));
  }
  await withStartupLock(store, async () => assertSealingKey(await sealedValues(store, SECRET_ITEMS), sealing));
}

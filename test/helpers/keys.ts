import type { ProviderConfig } from "../../src/routing/provider-config.ts";
import type { TestRouter } from "./router.ts";

let counter = 0;

/** Adds a provider key straight through the repository (as POST /x-keys would) and refreshes the pool. */
export function addKey(
  router: TestRouter,
  options: { provider: string; level?: number; secret?: string; config?: ProviderConfig; noSleep?: boolean; status?: boolean; name?: string },
): { id: number; secret: string } {
  const secret = options.secret ?? `sk-upstream-test-${++counter}-0123456789abcdef`;
  const row = router.deps.providerKeys.create({
    provider: options.provider,
    level: options.level ?? 1,
    secret,
    status: options.status ?? true,
    noSleep: options.noSleep,
    name: options.name,
    config: options.config,
  });
  router.deps.pool.reload();
  return { id: row.id, secret };
}

/** Waits for batched usage rows to reach the database, then returns them (newest last). */
export function usageRows(router: TestRouter) {
  router.deps.usageRecorder.flush();
  return router.deps.store.sqlite
    .query<Record<string, any>, []>("SELECT * FROM usage_events ORDER BY id")
    .all();
}

import type { ProviderConfig } from "../../src/routing/provider-config.ts";
import type { TestRouter } from "./router.ts";

let counter = 0;

/** Adds a provider key straight through the repository (as POST /x-keys would) and refreshes the pool. */
export async function addKey(
  router: TestRouter,
  options: { provider: string; level?: number; secret?: string; config?: ProviderConfig; noSleep?: boolean; status?: boolean; name?: string },
): Promise<{ id: number; secret: string }> {
  const secret = options.secret ?? `sk-upstream-test-${++counter}-0123456789abcdef`;
  const row = await router.deps.providerKeys.create({
    provider: options.provider,
    level: options.level ?? 1,
    secret,
    status: options.status ?? true,
    noSleep: options.noSleep,
    name: options.name,
    config: options.config,
  });
  await router.deps.pool.reload();
  return { id: row.id, secret };
}

/** `promptTokens` → `prompt_tokens`: rows read in the shape of the usage_events table. */
const columnName = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Waits for batched usage rows to be stored, then returns them (newest last), read
 * through the store, in the table's shape (column names, flags as 0/1).
 */
export async function usageRows(router: TestRouter): Promise<Array<Record<string, any>>> {
  await router.deps.usageRecorder.flush();
  const rows = await router.deps.store.usage.events(0, 1_000_000);
  return rows.map((row) => Object.fromEntries(Object.entries(row).map(([field, value]) => [columnName(field), typeof value === "boolean" ? Number(value) : value])));
}

/** Records one finished call as metering would, and writes it (with its charge) at once. */
export async function recordUsage(
  router: TestRouter,
  call: { accountId: number; costNanos: number; model?: string; requestId?: string; prompt?: number; completion?: number },
): Promise<void> {
  router.deps.usageRecorder.record({
    requestId: call.requestId ?? `req-${call.accountId}-${Math.random().toString(36).slice(2)}`,
    accountId: call.accountId,
    endpoint: "/v1/chat/completions",
    requestedModel: call.model ?? "m",
    effectiveModel: call.model ?? "m",
    level: 1,
    keyId: 1,
    status: 200,
    stream: false,
    usage: { prompt: call.prompt ?? 10, completion: call.completion ?? 10, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
    source: "upstream",
    latencyMs: 1,
    at: Date.now(),
    costNanos: call.costNanos,
  });
  await router.deps.usageRecorder.flush();
}

/** What an account can spend now, as admission sees it: its balance less unwritten charges and reservations in flight. */
export function availableCredit(router: TestRouter, accountId: number): Promise<number> {
  return router.deps.state.counts.read({ kind: "credit", accountId }, router.deps.clock.now());
}

/** What an account's calls in flight and unwritten charges hold back from its ledger balance. */
export function heldCredit(router: TestRouter, accountId: number): Promise<number> {
  return router.deps.state.credit.held(accountId);
}

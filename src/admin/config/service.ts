import type { Clock } from "../../core/clock.ts";
import type { Store } from "../../store/store.ts";
import { createPriceBook, type PriceBook } from "../../metering/pricing/price-book.ts";
import { MAX_PRICE, parsePricingTable } from "../../metering/pricing/schema.ts";
import type { Logger } from "../../core/log.ts";
import type { SystemLimits } from "../../metering/limits.ts";
import type { Sealer } from "../../store/crypto.ts";
import type { CompiledPattern } from "../../routing/patterns.ts";
import { compileModelLimits, compileResources, compileRouting, itemDef, SECRET_MASK, type RoutingConfig } from "./items.ts";

/** One item whose stored value changed, for the operation log; a secret's values are masked. */
export interface ConfigChange {
  item: string;
  before: string | null;
  after: string | null;
}

/**
 * System configuration held in memory and written through to the settings table.
 * The request path reads compiled forms (`routing()`), rebuilt on every write, so a
 * change takes effect on the next request without a restart.
 */
export interface ConfigService {
  routing(): RoutingConfig;
  /** The catalog with PRICING merged in. */
  prices(): PriceBook;
  /** MODEL_LIMITS, compiled. */
  modelLimits(): SystemLimits;
  /** RESOURCES, compiled: the system-wide API path allowlist; null means no restriction. */
  resources(): readonly CompiledPattern[] | null;
  /** Value of an item as text (a secret item opened), or undefined when unset. */
  raw(item: string): string | undefined;
  /** Every set item in its exported form (`GET /x-config`). */
  exportAll(): Record<string, unknown>;
  /** Validates every value first, then writes them all in one transaction. */
  update(values: Record<string, unknown>): Promise<ConfigChange[]>;
  /** Removes the named items (back to defaults). */
  reset(items: string[]): Promise<ConfigChange[]>;
  /** Re-reads the table (another process changed it). */
  /** Re-reads the stored items; resolves once they apply (reloads apply in call order). */
  reload(): Promise<void>;
  /** Called after every change, e.g. to refresh the key pool's view of LEVEL_MAPPER. */
  onChange(listener: () => void): void;
}

export function createConfigService({
  store,
  clock,
  sealer,
  tenantId = 0,
  log,
}: {
  store: Store;
  clock: Clock;
  sealer: Sealer;
  tenantId?: number;
  log?: Logger;
}): ConfigService {
  let raw = new Map<string, string>();
  let routing: RoutingConfig;
  let prices: PriceBook;
  let modelLimits: SystemLimits;
  let resources: readonly CompiledPattern[] | null;
  const listeners: Array<() => void> = [];
  const stored = store.settings;

  const rebuild = () => {
    routing = compileRouting(raw);
    const pricing = raw.get("PRICING");
    // Read as stored: a price an older router accepted above today's bound is not a reason to fail (schema.ts).
    const beyondBound = (where: string, value: number) =>
      log?.warn(`PRICING: ${where} is ${value}, above the ${MAX_PRICE} allowed now (stored by an older router): charged as ${MAX_PRICE} until PRICING is set again`, { tenant: tenantId });
    prices = createPriceBook(pricing ? parsePricingTable(pricing, { beyondBound }) : {});
    modelLimits = compileModelLimits(raw.get("MODEL_LIMITS"));
    resources = compileResources(raw.get("RESOURCES"));
    for (const listener of listeners) listener();
  };
  // Secret items are sealed in the table and held open in memory.
  const open = (item: string, text: string) => (itemDef(item).secret ? sealer.open(text) : text);
  const sealed = (item: string, text: string) => (itemDef(item).secret ? sealer.seal(text) : text);
  const load = async () => {
    raw = new Map((await stored.all(tenantId)).map((row) => [row.key, open(row.key, row.value)]));
    rebuild();
  };
  let loading: Promise<void> = Promise.resolve();
  const reload = () => (loading = loading.then(load, load));
  // Until the first load, the defaults apply (the tenant waits for it before serving).
  rebuild();

  return {
    routing: () => routing,
    prices: () => prices,
    modelLimits: () => modelLimits,
    resources: () => resources,
    raw: (item) => raw.get(item),
    exportAll() {
      const out: Record<string, unknown> = {};
      for (const [item, text] of raw) out[item] = itemDef(item).exported(text);
      return out;
    },
    async update(values) {
      const normalised = Object.entries(values)
        // A secret's mask, as exported, means "keep what is stored": exports import back.
        .filter(([item, value]) => !(itemDef(item).secret && value === SECRET_MASK))
        .map(([item, value]) => {
          const text = itemDef(item).normalise(value);
          const before = raw.get(item);
          // A value that means what is stored (an export imported back) keeps the stored text: nothing changes.
          return [item, before !== undefined && before !== text && itemDef(item).sameValue?.(before, text) ? before : text] as const;
        });
      const now = clock.now();
      // What changed is read before the write: a reload meanwhile may already show the new values.
      const changes: ConfigChange[] = [];
      for (const [item, text] of normalised) {
        const before = raw.get(item) ?? null;
        if (before === text) continue;
        const shown = (value: string | null) => (value !== null && itemDef(item).secret ? SECRET_MASK : value);
        changes.push({ item, before: shown(before), after: shown(text) });
      }
      await stored.put(tenantId, normalised.map(([item, text]) => [item, sealed(item, text)] as const), now);
      for (const [item, text] of normalised) raw.set(item, text);
      rebuild();
      return changes;
    },
    async reset(items) {
      for (const item of items) itemDef(item);
      const changes = items
        .filter((item) => raw.has(item))
        .map((item) => ({ item, before: itemDef(item).secret ? SECRET_MASK : (raw.get(item) ?? null), after: null }));
      await stored.remove(tenantId, items);
      for (const item of items) raw.delete(item);
      rebuild();
      return changes;
    },
    reload,
    onChange(listener) {
      listeners.push(listener);
    },
  };
}

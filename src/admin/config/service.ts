import { inArray } from "drizzle-orm";
import type { Clock } from "../../core/clock.ts";
import type { Store } from "../../store/db.ts";
import { settings } from "../../store/schema/settings.ts";
import { compileRouting, itemDef, type RoutingConfig } from "./items.ts";

/** One changed item, for the operation log. */
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
  /** Stored text of an item, or undefined when unset. */
  raw(item: string): string | undefined;
  /** Every set item in its exported form (`GET /x-config`). */
  exportAll(): Record<string, unknown>;
  /** Validates every value first, then writes them all in one transaction. */
  update(values: Record<string, unknown>): ConfigChange[];
  /** Removes the named items (back to defaults). */
  reset(items: string[]): ConfigChange[];
  /** Re-reads the table (another process changed it). */
  reload(): void;
  /** Called after every change, e.g. to refresh the key pool's view of LEVEL_MAPPER. */
  onChange(listener: () => void): void;
}

export function createConfigService({ store, clock }: { store: Store; clock: Clock }): ConfigService {
  let raw = new Map<string, string>();
  let routing: RoutingConfig;
  const listeners: Array<() => void> = [];

  const rebuild = () => {
    routing = compileRouting(raw);
    for (const listener of listeners) listener();
  };
  const load = () => {
    raw = new Map(store.db.select().from(settings).all().map((row) => [row.key, row.value]));
    rebuild();
  };
  load();

  return {
    routing: () => routing,
    raw: (item) => raw.get(item),
    exportAll() {
      const out: Record<string, unknown> = {};
      for (const [item, text] of raw) out[item] = itemDef(item).exported(text);
      return out;
    },
    update(values) {
      const normalised = Object.entries(values).map(([item, value]) => [item, itemDef(item).normalise(value)] as const);
      const now = clock.now();
      const changes: ConfigChange[] = [];
      store.db.transaction((tx) => {
        for (const [item, text] of normalised) {
          tx.insert(settings)
            .values({ key: item, value: text, updatedAt: now })
            .onConflictDoUpdate({ target: settings.key, set: { value: text, updatedAt: now } })
            .run();
          changes.push({ item, before: raw.get(item) ?? null, after: text });
        }
      });
      for (const [item, text] of normalised) raw.set(item, text);
      rebuild();
      return changes;
    },
    reset(items) {
      for (const item of items) itemDef(item);
      const changes = items.filter((item) => raw.has(item)).map((item) => ({ item, before: raw.get(item) ?? null, after: null }));
      if (items.length > 0) store.db.delete(settings).where(inArray(settings.key, items)).run();
      for (const item of items) raw.delete(item);
      rebuild();
      return changes;
    },
    reload: load,
    onChange(listener) {
      listeners.push(listener);
    },
  };
}

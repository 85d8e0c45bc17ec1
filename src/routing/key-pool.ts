import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import type { ProviderKeysRepository, SleepState } from "../admin/provider-keys/repository.ts";
import { applyOutcome, availability, type KeyOutcome } from "./health.ts";
import type { PoolKey, SleepReason } from "./pool-key.ts";
import type { ProviderConfig } from "./provider-config.ts";

/**
 * Provider Keys in memory, grouped by Level, with their health. The request path
 * only reads this; every write to the keys table calls `reload()`.
 */
export interface KeyPool {
  /** Re-reads the keys; resolves once the pool holds them (reloads apply in call order). */
  reload(): Promise<void>;
  get(id: number): PoolKey | undefined;
  /** Keys of a Level, in id order. */
  keysOf(level: number): readonly PoolKey[];
  /** Every key, for status listings and metrics. */
  all(): readonly PoolKey[];
  /** True when the Level has a key that could serve a call now. */
  hasUsable(level: number): boolean;
  /**
   * Chooses a key of the Level not in `exclude`: a key due for its probe first (one
   * request), else the ready key with the fewest calls in flight, round-robin on ties.
   * The chosen key counts as in flight until `release`.
   */
  acquire(level: number, exclude: ReadonlySet<number>): PoolKey | undefined;
  /**
   * A specific key, for calls on an object it holds: enabled keys only, sleeping or
   * not (the object lives nowhere else). Counts as in flight until `release`.
   */
  acquireById(id: number): PoolKey | undefined;
  release(key: PoolKey): void;
  /** Records an attempt's outcome; persists a sleep change. */
  report(key: PoolKey, outcome: KeyOutcome): void;
  /**
   * Takes a key out of rotation because its URL reaches an address the upstream policy
   * refuses, NoSleep notwithstanding: until woken or until its URL changes.
   */
  markUnusable(key: PoolKey, reason: string): void;
  /** Manual sleep/wake from /x-keys/{id}/sleep|wake; resolves once stored. */
  setManualSleep(id: number, sleeping: boolean): Promise<void>;
}

export function createKeyPool(deps: { repo: ProviderKeysRepository; clock: Clock; log: Logger }): KeyPool {
  let byId = new Map<number, PoolKey>();
  let byLevel = new Map<number, PoolKey[]>();
  const cursor = new Map<number, number>();

  const load = async () => {
    const rows = await deps.repo.all();
    const next = new Map<number, PoolKey>();
    const levels = new Map<number, PoolKey[]>();
    for (const row of rows) {
      const previous = byId.get(row.id);
      const fields: Omit<PoolKey, "inFlight" | "failures" | "probing"> = {
        id: row.id,
        name: row.name,
        level: row.level,
        provider: row.provider.replace(/\/+$/, ""),
        secret: deps.repo.secretOf(row),
        config: JSON.parse(row.config) as ProviderConfig,
        noSleep: row.noSleep,
        status: row.status,
        sleeping: row.sleeping,
        sleepReason: row.sleepReason as SleepReason | null,
        sleepUntil: row.sleepUntil,
        sleepCount: row.sleepCount,
      };
      // Calls in flight hold the key object they acquired and later release and report
      // on it: update it in place so their release and verdict reach the pool's copy.
      const key: PoolKey = previous
        ? Object.assign(previous, fields)
        : { ...fields, inFlight: 0, failures: 0, probing: false };
      next.set(key.id, key);
      const list = levels.get(key.level) ?? [];
      list.push(key);
      levels.set(key.level, list);
    }
    byId = next;
    byLevel = levels;
  };
  let reloading: Promise<void> = Promise.resolve();
  const reload = () => (reloading = reloading.then(load, load));

  // The pool's copy decides at once; the stored sleep is for a restart, so a write
  // that fails is reported, not waited for.
  const store = (id: number, change: SleepState) =>
    deps.repo.setSleep(id, change).catch((error: unknown) => deps.log.error("a key's sleep could not be stored", { key: id, error: (error as Error).message }));

  const persist = (key: PoolKey, change: ReturnType<typeof applyOutcome>) => {
    if (!change) return;
    void store(key.id, change);
    if (change.sleeping) {
      deps.log.warn("provider key sleeps", {
        key: key.id,
        level: key.level,
        reason: change.reason,
        until: change.until === null ? "woken" : new Date(change.until).toISOString(),
      });
    } else deps.log.info("provider key woke", { key: key.id, level: key.level });
  };

  return {
    reload,
    get: (id) => byId.get(id),
    keysOf: (level) => byLevel.get(level) ?? [],
    all: () => [...byId.values()],
    hasUsable(level) {
      const now = deps.clock.now();
      return (byLevel.get(level) ?? []).some((key) => availability(key, now) !== "unavailable");
    },
    acquireById(id) {
      const key = byId.get(id);
      if (!key || !key.status) return undefined;
      key.inFlight++;
      return key;
    },
    acquire(level, exclude) {
      const keys = byLevel.get(level);
      if (!keys || keys.length === 0) return undefined;
      const now = deps.clock.now();
      const start = cursor.get(level) ?? 0;
      let chosen: PoolKey | undefined;
      for (let i = 0; i < keys.length; i++) {
        const key = keys[(start + i) % keys.length]!;
        if (exclude.has(key.id)) continue;
        const state = availability(key, now);
        if (state === "probe") {
          key.probing = true;
          chosen = key;
          break;
        }
        if (state === "ready" && (!chosen || key.inFlight < chosen.inFlight)) chosen = key;
      }
      if (!chosen) return undefined;
      cursor.set(level, (keys.indexOf(chosen) + 1) % keys.length);
      chosen.inFlight++;
      return chosen;
    },
    release(key) {
      key.inFlight = Math.max(0, key.inFlight - 1);
      // A probe that ended without a verdict (client gone) must not block future probes.
      key.probing = false;
    },
    report(key, outcome) {
      persist(key, applyOutcome(key, outcome, deps.clock.now()));
    },
    markUnusable(key, reason) {
      const change = { sleeping: true, reason: "address" as const, until: null, count: key.sleepCount };
      key.sleeping = true;
      key.sleepReason = "address";
      key.sleepUntil = null;
      key.failures = 0;
      void store(key.id, change);
      deps.log.warn("provider key unusable: its upstream address is refused", { key: key.id, level: key.level, reason });
    },
    async setManualSleep(id, sleeping) {
      const key = byId.get(id);
      const state = sleeping
        ? { sleeping: true, reason: "manual" as const, until: null, count: key?.sleepCount ?? 0 }
        : { sleeping: false, reason: null, until: null, count: 0 };
      await deps.repo.setSleep(id, state);
      if (key) {
        key.sleeping = state.sleeping;
        key.sleepReason = state.reason;
        key.sleepUntil = null;
        key.sleepCount = state.count;
        key.failures = 0;
      }
    },
  };
}

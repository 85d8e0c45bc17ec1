import { causeMessage } from "../core/errors.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import type { ProviderKeysRepository, SleepState } from "../admin/provider-keys/repository.ts";
import { availability as availabilityOf } from "../state/key-health.ts";
import type { KeyHealth, KeyRef, KeySleep, KeyState } from "../state/state.ts";
import { availability, mirrorHealth, type KeyOutcome } from "./health.ts";
import type { PoolKey, SleepReason } from "./pool-key.ts";
import type { ProviderConfig } from "./provider-config.ts";
import { keyFormats } from "./key-formats.ts";
import { createSharedReads } from "./shared-reads.ts";

/**
 * A tenant's Provider Keys, grouped by Level. The keys themselves (URL, secret, config)
 * are read from the store on every `reload()`; their health, sleep and calls in flight
 * live in the State (`state.keys`), shared by every instance that shares it, and each
 * pool key mirrors what this process last saw of them (for listings and metrics).
 */
export interface KeyPool {
  /** Re-reads the keys; resolves once the pool holds them (reloads apply in call order). */
  reload(): Promise<void>;
  get(id: number): PoolKey | undefined;
  /** Keys of a Level, in id order. */
  keysOf(level: number): readonly PoolKey[];
  /** Where the next choice among the Level's keys (`keysOf`) starts: keys alike are taken in turn from it. */
  turnOf(level: number): number;
  /** Every key, for status listings and metrics. */
  all(): readonly PoolKey[];
  /** True when the Level has a key that could serve a call now (as this process last saw their health). */
  hasUsable(level: number): boolean;
  /**
   * Chooses a key of the Level not in `exclude`: a key due for its probe first (one
   * request), else the ready key with the fewest calls in flight, round-robin on ties.
   * With `rank`, keys ranked 0 are passed over and a higher rank wins before all else
   * (keys speaking the client's format natively before those that need a translator).
   * The chosen key counts as in flight until `release`.
   */
  acquire(level: number, exclude: ReadonlySet<number>, rank?: KeyRank, ahead?: HealthRead): Promise<PoolKey | undefined>;
  /**
   * Starts reading the Level's keys' health for an `acquire` that follows (passed as
   * `ahead`): a call reads it while its admission runs, so a shared State answers both
   * in one round trip's time. A read that nobody uses costs nothing but the read.
   */
  readAhead(level: number): HealthRead | undefined;
  /**
   * A specific key, for calls on an object it holds: enabled keys only, sleeping or
   * not (the object lives nowhere else). Counts as in flight until `release`.
   */
  acquireById(id: number): Promise<PoolKey | undefined>;
  release(key: PoolKey): Promise<void>;
  /** Records an attempt's outcome; stores a sleep change with the key. */
  report(key: PoolKey, outcome: KeyOutcome): Promise<void>;
  /**
   * Takes a key out of rotation because its URL reaches an address the upstream policy
   * refuses, NoSleep notwithstanding: until woken or until its URL changes.
   */
  markUnusable(key: PoolKey, reason: string): Promise<void>;
  /** Manual sleep/wake from /x-keys/{id}/sleep|wake; resolves once stored. */
  setManualSleep(id: number, sleeping: boolean): Promise<void>;
  /** Drops the health reads calls share (another instance saw a key sleep or wake). */
  forgetReads(): void;
}

/** The health of a Level's keys as read at one moment, for the acquire that follows. */
export interface HealthRead {
  readonly keys: readonly PoolKey[];
  readonly health: Promise<KeyHealth[]>;
  /** This process's calls in flight on each key when the read went out (see `choose`). */
  readonly own: readonly number[];
}

/** How well a key fits a call: 0 cannot serve it; higher is preferred. */
export type KeyRank = (key: PoolKey) => number;

/** A key's sleep as stored with it (where the State starts when it holds none). */
const storedSleep = (row: { sleeping: boolean; sleepReason: string | null; sleepUntil: number | null; sleepCount: number }): KeySleep => ({
  sleeping: row.sleeping,
  reason: row.sleepReason as SleepReason | null,
  until: row.sleepUntil,
  count: row.sleepCount,
});

const toSleepState = (sleep: KeySleep): SleepState => ({ sleeping: sleep.sleeping, reason: sleep.reason, until: sleep.until, count: sleep.count });

/** What the system did on its own, for the operation log (`key.auto_sleep`, `key.auto_wake`). */
export type SystemEvent = (action: "key.auto_sleep" | "key.auto_wake" | "level.switch_over" | "level.switch_back", details: Record<string, string | number | null>) => void;

export function createKeyPool(deps: {
  repo: ProviderKeysRepository;
  clock: Clock;
  log: Logger;
  keys: KeyState;
  tenantId: number;
  onSystemEvent?: SystemEvent;
  /** How long calls may share one read of a Level's keys' health (`readAhead`); 0: a read per call. */
  reuseReadMs?: number;
}): KeyPool {
  const { keys: state, tenantId } = deps;
  let byId = new Map<number, PoolKey>();
  let byLevel = new Map<number, PoolKey[]>();
  /** The State's names for each pool key and Level, made at reload (the request path builds none). */
  let refs = new Map<number, KeyRef>();
  let levelRefs = new Map<number, KeyRef[]>();
  const cursor = new Map<number, number>();
  /**
   * Reads of a Level's health that calls choosing within `reuseReadMs` share: on a shared
   * State each read is a Redis script that sits ahead of the call's admission. What they
   * miss is other instances' changes of those milliseconds; this process's own calls are
   * counted on top (`own`), and its own verdicts drop the shared reads (`forgetReads`).
   */
  const reads = createSharedReads<HealthRead>(deps.reuseReadMs ?? 0, () => deps.clock.now());
  const forgetReads = () => reads.forget();
  /** This process's calls in flight per key id (acquired, not yet released). */
  const own = new Map<number, number>();
  const ownOf = (keys: readonly PoolKey[]) => keys.map((key) => own.get(key.id) ?? 0);
  const began = (key: PoolKey) => {
    own.set(key.id, (own.get(key.id) ?? 0) + 1);
    key.inFlight++;
  };
  const refOf = (key: PoolKey): KeyRef => refs.get(key.id) ?? { id: key.id, stored: { sleeping: key.sleeping, reason: key.sleepReason, until: key.sleepUntil, count: key.sleepCount } };

  const load = async () => {
    const rows = await deps.repo.all();
    const next = new Map<number, PoolKey>();
    const levels = new Map<number, PoolKey[]>();
    const nextRefs = new Map<number, KeyRef>();
    const nextLevelRefs = new Map<number, KeyRef[]>();
    for (const row of rows) {
      const previous = byId.get(row.id);
      const provider = row.provider.replace(/\/+$/, "");
      const config = JSON.parse(row.config) as ProviderConfig;
      const fields = {
        id: row.id,
        name: row.name,
        level: row.level,
        provider,
        secret: deps.repo.secretOf(row),
        config,
        formats: keyFormats(provider, config),
        noSleep: row.noSleep,
        status: row.status,
      };
      // Calls in flight hold the key object they acquired and later release and report
      // on it: update it in place. Its health is the State's, not the stored row's.
      const stored = storedSleep(row);
      const key: PoolKey = previous
        ? Object.assign(previous, fields)
        : { ...fields, sleeping: stored.sleeping, sleepReason: stored.reason, sleepUntil: stored.until, sleepCount: stored.count, inFlight: 0, failures: 0, probing: false };
      const ref: KeyRef = { id: row.id, stored };
      next.set(key.id, key);
      nextRefs.set(key.id, ref);
      const list = levels.get(key.level) ?? [];
      list.push(key);
      levels.set(key.level, list);
      const listRefs = nextLevelRefs.get(key.level) ?? [];
      listRefs.push(ref);
      nextLevelRefs.set(key.level, listRefs);
    }
    byId = next;
    byLevel = levels;
    forgetReads();
    refs = nextRefs;
    levelRefs = nextLevelRefs;
  };
  let reloading: Promise<void> = Promise.resolve();
  const reload = () => (reloading = reloading.then(load, load));

  // The State decides at once; the stored sleep is for a restart, so a write that
  // fails is reported, not waited for.
  const store = (id: number, change: KeySleep) =>
    deps.repo.setSleep(id, toSleepState(change)).catch((error: unknown) => deps.log.error("a key's sleep could not be stored", { key: id, error: causeMessage(error) }));

  const persist = (key: PoolKey, change: KeySleep | undefined) => {
    if (!change) return;
    void store(key.id, change);
    const until = change.until === null ? null : new Date(change.until).toISOString();
    deps.onSystemEvent?.(change.sleeping ? "key.auto_sleep" : "key.auto_wake", { key: key.id, level: key.level, ...(change.sleeping && { reason: change.reason, until }) });
    if (change.sleeping) {
      deps.log.warn("provider key sleeps", {
        key: key.id,
        key_level: key.level,
        reason: change.reason,
        until: change.until === null ? "woken" : new Date(change.until).toISOString(),
      });
    } else deps.log.info("provider key woke", { key: key.id, key_level: key.level });
  };
  // What a call reports on its key after the answer must not fail the call: a State that
  // could not take it is said in the log (its lease expires where the State is shared).
  const unrecorded = (what: string, key: PoolKey) => (error: unknown) =>
    deps.log.error(`a key's ${what} could not be recorded in the shared state`, { key: key.id, key_level: key.level, error: causeMessage(error) });
  /**
   * Counts a call in flight on the key without waiting for the State's answer: only a
   * probe's claim can be refused, so the call need not wait (on Redis, one round trip
   * less before the upstream call, about 60 µs at c=1). The count goes out before the
   * call's release, on the same connection, so Redis applies them in order; one that
   * fails is logged and the call goes on (its release cannot take the count below 0).
   */
  const count = (key: PoolKey) => void state.take(tenantId, refOf(key), false).catch(unrecorded("call in flight", key));
  const mirrorSleep = (key: PoolKey, sleep: KeySleep) => {
    key.sleeping = sleep.sleeping;
    key.sleepReason = sleep.reason;
    key.sleepUntil = sleep.until;
    key.sleepCount = sleep.count;
  };

  /**
   * The Level's choice on the health the State reported; undefined when no key can serve.
   * A key's calls in flight are the State's count plus what this process began (less what
   * it ended) since the read went out (`ownAtRead`): calls choosing at the same moment on
   * one read would otherwise all take the key that had the fewest, and a shared State
   * counts this process's calls a few milliseconds late (state/redis/state.ts).
   */
  const choose = (keys: readonly PoolKey[], health: readonly KeyHealth[], ownAtRead: readonly number[], level: number, exclude: ReadonlySet<number>, rank: KeyRank | undefined) => {
    const now = deps.clock.now();
    const start = cursor.get(level) ?? 0;
    let chosen: { key: PoolKey; index: number; probe: boolean; rank: number; inFlight: number } | undefined;
    for (let i = 0; i < keys.length; i++) {
      const index = (start + i) % keys.length;
      const key = keys[index]!;
      mirrorHealth(key, health[index]!);
      if (exclude.has(key.id)) continue;
      const state = availabilityOf(key.status, health[index]!, now);
      if (state !== "probe" && state !== "ready") continue;
      const fit = rank ? rank(key) : 1;
      if (fit <= 0) continue;
      const inFlight = Math.max(0, health[index]!.inFlight + (own.get(key.id) ?? 0) - (ownAtRead[index] ?? 0));
      // A better rank first; within a rank a probe first, then the fewest calls in flight.
      const better = !chosen || fit > chosen.rank || (fit === chosen.rank && !chosen.probe && (state === "probe" || inFlight < chosen.inFlight));
      if (better) chosen = { key, index, probe: state === "probe", rank: fit, inFlight };
    }
    return chosen;
  };

  return {
    reload,
    forgetReads,
    get: (id) => byId.get(id),
    keysOf: (level) => byLevel.get(level) ?? [],
    turnOf: (level) => cursor.get(level) ?? 0,
    all: () => [...byId.values()],
    hasUsable(level) {
      const now = deps.clock.now();
      return (byLevel.get(level) ?? []).some((key) => availability(key, now) !== "unavailable");
    },
    async acquireById(id) {
      const key = byId.get(id);
      if (!key || !key.status) return undefined;
      count(key);
      began(key);
      return key;
    },
    readAhead(level) {
      const keys = byLevel.get(level);
      const keyRefs = levelRefs.get(level);
      if (!keys || !keyRefs || keys.length === 0) return undefined;
      const shared = reads.get(level, (read) => read.keys === keys);
      if (shared) return shared;
      const read = { keys, health: state.health(tenantId, keyRefs), own: ownOf(keys) };
      // Read ahead of an acquire that may never come (the call refused): its failure is the acquire's to report.
      read.health.catch(() => {});
      return reads.keep(level, read, read.health);
    },
    async acquire(level, exclude, rank, ahead) {
      // Another call (here or on another instance) may claim a probe between the read
      // and the take: then the choice is made again, on what the State says then.
      for (let round = 0; round < 4; round++) {
        const keys = byLevel.get(level);
        const keyRefs = levelRefs.get(level);
        if (!keys || !keyRefs || keys.length === 0) return undefined;
        // The first round may use the health read ahead, when the Level's keys are still the ones it read.
        const read = round === 0 && ahead?.keys === keys ? ahead : { health: state.health(tenantId, keyRefs), own: ownOf(keys) };
        const health = await read.health;
        // A reload while the State answered: choose from the keys as they are now.
        if (byLevel.get(level) !== keys) continue;
        const chosen = choose(keys, health, read.own, level, exclude, rank);
        if (!chosen) return undefined;
        cursor.set(level, (chosen.index + 1) % keys.length);
        if (chosen.probe) {
          if (!(await state.take(tenantId, refOf(chosen.key), true))) continue;
          // Calls sharing the read that showed the probe due must not try to claim it too.
          forgetReads();
        } else count(chosen.key);
        began(chosen.key);
        if (chosen.probe) chosen.key.probing = true;
        return chosen.key;
      }
      return undefined;
    },
    async release(key) {
      key.inFlight = Math.max(0, key.inFlight - 1);
      const mine = (own.get(key.id) ?? 0) - 1;
      if (mine > 0) own.set(key.id, mine);
      else own.delete(key.id);
      key.probing = false;
      await state.release(tenantId, key.id).catch(unrecorded("release", key));
    },
    async report(key, outcome) {
      try {
        const change = await state.record(tenantId, { ...refOf(key), noSleep: key.noSleep }, outcome, deps.clock.now());
        key.probing = false;
        if (outcome.kind === "success") key.failures = 0;
        if (change) {
          mirrorSleep(key, change);
          forgetReads();
        }
        persist(key, change);
      } catch (error) {
        unrecorded("outcome", key)(error);
      }
    },
    async markUnusable(key, reason) {
      const change: KeySleep = { sleeping: true, reason: "address", until: null, count: key.sleepCount };
      mirrorSleep(key, change);
      forgetReads();
      key.failures = 0;
      deps.log.warn("provider key unusable: its upstream address is refused", { key: key.id, key_level: key.level, reason });
      deps.onSystemEvent?.("key.auto_sleep", { key: key.id, level: key.level, reason: "address", until: null });
      void store(key.id, change);
      await state.setSleep(tenantId, refOf(key), change).catch(unrecorded("sleep", key));
    },
    async setManualSleep(id, sleeping) {
      const key = byId.get(id);
      const ref = key ? refOf(key) : undefined;
      const count = ref ? (await state.health(tenantId, [ref]))[0]!.count : 0;
      const change: KeySleep = sleeping ? { sleeping: true, reason: "manual", until: null, count } : { sleeping: false, reason: null, until: null, count: 0 };
      await deps.repo.setSleep(id, toSleepState(change));
      if (key && ref) {
        await state.setSleep(tenantId, ref, change);
        mirrorSleep(key, change);
        forgetReads();
        key.failures = 0;
      }
    },
  };
}

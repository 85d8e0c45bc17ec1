import type { Logger } from "../../core/log.ts";
import type { StateLoaders } from "../state.ts";
import type { Adjustment, AdmitLine, Counter, CountState, State, Verdict } from "../state.ts";
import type { RedisConnection, Script } from "./connection.ts";
import { ADJUST, ADMIT } from "./lua.ts";
import { createCreditState } from "./credit-state.ts";
import { createAdjustBatcher, GATHER_MS, type MergedChange } from "./batching.ts";
import { createKeys, createLevels } from "./levels-and-keys.ts";
import { createClaims, createPending } from "./pending-and-claims.ts";
import { splitAdmission, type CheckedCounters } from "./deferred-lines.ts";
import { createCounterLines, PERIOD_TTL_MS } from "./counter-lines.ts";
import { ADMITTED_NOW, createAdmissionRuns, indexOf } from "./admission-runs.ts";
import { createAllowances, type GrantAnswer, type GrantRefusal, type GrantRequest } from "./allowances.ts";
import { watchDataset } from "./dataset.ts";
import { createRepairs, type OpId } from "./repairs.ts";
import { presence, VERSIONS_KEY } from "./versions.ts";

/**
 * The State on Redis, shared by every instance that names the same Redis and prefix
 * (docs/architecture.md, "State on Redis"). Each operation that must be atomic is one
 * Lua script; what a period total or a balance needs from the database is loaded here,
 * between two runs of the script, when the script says Redis holds none.
 *
 * What calls in flight hold (reservations, gauges, keys' calls in flight, probes) is
 * kept per process under its owner id and counts only while that process's lease key
 * lives: a heartbeat renews it every third of `leaseMs`, so the holdings of a process
 * that was killed stop counting at most `leaseMs` after its last renewal.
 */
export interface RedisStateOptions {
  connection: RedisConnection;
  /** Put before every key, so deployments can share a Redis (default `router:`). */
  prefix?: string;
  /** How long a process's holdings outlive its last heartbeat (default 30 s). */
  leaseMs?: number;
  /** Where an amount Redis could not be given after the call was admitted is reported. */
  log?: Pick<Logger, "error">;
  /** Admit against blocks taken in advance (allowances.ts; default true): most admissions then make no round trip. */
  allowances?: boolean;
  /** This process's owner id, when it was entered in `versions` before (versions.ts); a new one otherwise. */
  owner?: string;
}

export interface RedisState extends State {
  /** This process's owner id in Redis. */
  readonly owner: string;
  /** How long this process's holdings outlive its last heartbeat. */
  readonly leaseMs: number;
  /**
   * `credit.flushed`, and in the same script the drained claim of usage rows those
   * charges came from is dropped (`drop`: the claim list and the claims set).
   */
  flushedClaim(charged: ReadonlyMap<number, number>, version: number | undefined, drop: [string, string]): Promise<void>;
  /**
   * Settles once the settlements this process gathered so far ran (undefined when none
   * waits): a usage row is appended after its call's settlement, so the charge counts as
   * unwritten before any instance can write the row and take it off again.
   */
  settlementsApplied(): Promise<void> | undefined;
  /** Whether Redis kept what this process counted (dataset.ts): the generation as last checked, a check now, and the marker's key. */
  readonly dataset: { latest(): number; check(): Promise<void>; readonly key: string };
  /** Allowances granted and calls admitted against them (zeros when allowances are off). */
  readonly allowances: { readonly granted: number; readonly drawn: number };
  /**
   * An account changed on some instance (its balance among others, as the bus says): the
   * blocks this process holds of its credit go back, and its next calls read Redis again.
   */
  forgetAllowances(accountId: number): void;
  /**
   * Gives back what allowances hold unused, stops the heartbeat (what this process holds
   * then expires with its lease) and closes the connection.
   */
  close(): Promise<void>;
}

export const DEFAULT_PREFIX = "router:";
export const DEFAULT_LEASE_MS = 30_000;

/** Grants an admission waits for or asks for before Redis admits it on its own. */
const GRANT_ROUNDS = 4;


export function createRedisState(options: RedisStateOptions, loaders: StateLoaders, now: () => number): RedisState {
  const redis = options.connection;
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const owner = options.owner ?? crypto.randomUUID();
  const leases = `${prefix}lease:`;
  const base = (payload: unknown) => [leases, owner, String(leaseMs), JSON.stringify(payload)];
  const run = (s: Script, payload: unknown, ...extra: string[]) => redis.run(s, [], [...base(payload), ...extra]);

  /** Set by `close`: what is sent from then on does not renew the lease. */
  let closing = false;
  /** Whether Redis still holds what this process counted over an earlier connection (dataset.ts). */
  const datasetKey = `${prefix}ds:${owner}`;
  const dataset = watchDataset(redis, datasetKey);
  /** Admissions and settlements whose answer was lost, made good once Redis answers (repairs.ts). */
  const repairs = createRepairs({
    keyPrefix: `${prefix}op:${owner}:`,
    dataset,
    now: Date.now,
    log: options.log,
  });
  const heartbeat = () => {
    dataset.check().then(repairs.run, () => {});
    // Which version this live process is (versions.ts): again each time, as Redis may have lost it.
    void redis.send("HSET", [`${prefix}${VERSIONS_KEY}`, owner, presence()]).catch(() => {});
    return redis.send("SET", [`${leases}${owner}`, "1", "PX", String(leaseMs)]).catch(() => {});
  };
  void heartbeat();
  const timer = setInterval(heartbeat, Math.max(10, Math.floor(leaseMs / 3)));
  timer.unref?.();

  const counterLines = createCounterLines(prefix, loaders, run, (error) =>
    options.log?.error("a settlement's period total could not be seeded from the database; that change is dropped (the total is seeded when next needed)", {
      error: (error as Error).message,
    }),
  );
  const { keyOf, lineOf, withLoads } = counterLines;

  /** Counters some admission checked: their amounts are counted in the admission itself from then on. */
  const checkedCounters: CheckedCounters = { keys: new Set(), keyOf };
  /** The flush a first check waits for (admissions meanwhile wait for it too, so none overtakes another). */
  let gatheredFirst: Promise<void> | undefined;
  const onLostCount = (error: unknown) => options.log?.error("an admitted call's unchecked counts could not be given to Redis", { error: (error as Error).message });

  /** What allowances hold unused of a counter, of blocks in the data the connection reaches (checked first when it was made again). */
  const unusedNow = async (counter: Counter, at: number, period?: string) => {
    if (dataset.generation() === undefined) await dataset.check().catch(() => {});
    return allowances!.unused(counter, at, period);
  };

  /** A counter's value: the admission script in mode 'read'. */
  const readValue = (counter: Counter, at: number, period: string | undefined) =>
    withLoads(ADMIT, [lineOf({ counter, period })], [{ counter, period }], at, ["read", String(at), String(PERIOD_TTL_MS)]);
  const { runAdmission, admitChecked } = createAdmissionRuns({
    run,
    lines: counterLines,
    repairs,
    settlementsSent: () => adjustSoon.sentCount(),
    undo: (reversed, op) => adjustRun(reversed, op, "undo"),
  });

  /**
   * Splits an admission (deferred-lines.ts) and waits for what must reach Redis before it:
   * what was gathered before a counter's first check, and what admissions against
   * allowances counted (and allowances gave back) in the counters it reads.
   */
  const prepare = async (lines: readonly AdmitLine[], at: number) => {
    // Lines that only count go with the settlements once the call is admitted (deferred-lines.ts).
    const split = splitAdmission(lines, at, checkedCounters);
    // A counter checked for the first time: what was gathered goes first, and the admissions that come meanwhile wait with this one, in order.
    if (split.flushFirst || readsDeferred(lines)) {
      const flushed: Promise<void> = adjustSoon.flush().finally(() => {
        if (gatheredFirst === flushed) gatheredFirst = undefined;
      });
      gatheredFirst = flushed;
    }
    if (gatheredFirst) await gatheredFirst;
    return split;
  };

  /** The admission as Redis decides it, call by call. */
  const admitInRedis = async (lines: readonly AdmitLine[], at: number): Promise<Verdict> => {
    const { now: checking, indexes, later } = await prepare(lines, at);
    const verdict = checking.length === 0 ? ADMITTED_NOW : await admitChecked(checking, indexes, at);
    if (verdict.admitted && later.length > 0) void adjustSoon(later).catch(onLostCount);
    return verdict;
  };

  /** Asks Redis for an allowance: its answer past the standings, or which line refused it at what value. */
  const grant = async (request: GrantRequest): Promise<GrantAnswer | GrantRefusal> => {
    const { now: checking, indexes } = await prepare(request.lines, request.at);
    // What this process gathered goes before the grant reads the counters; what it sends
    // after that run the allowance adds itself (allowances.ts, grantMoves).
    void adjustSoon.flush();
    const sent: { batches: number; generation?: number } = { batches: 0 };
    const answer = await runAdmission(checking, indexes, request.at, request.margins, sent);
    if (answer[0] !== "ok") return { refusedBy: indexOf(Number(answer[1]), indexes), used: Number(answer[2]) };
    const values = new Map<number, { before: number; reset: number | undefined }>();
    let at = 8;
    for (let sent = 0; sent < checking.length; sent++) {
      const index = indexOf(sent, indexes);
      if (!request.margins.has(index)) continue;
      const before = String(answer[at]);
      const reset = String(answer[at + 1]);
      values.set(index, { before: before === "" ? NaN : Number(before), reset: reset === "" ? undefined : Number(reset) });
      at += 2;
    }
    const stale = String(answer[7]);
    // The block is counted in the data its run went to: a grant that went over a connection
    // made again meanwhile (Redis may have restarted) is of that connection's generation.
    return { staleAt: stale === "" ? undefined : Number(stale), values, admitSent: sent.batches, epoch: sent.generation ?? request.epoch };
  };

  /**
   * Gauges that admissions against allowances counted, and blocks given back, not yet in
   * Redis, by counter key (the batch they went in): an admission in Redis that reads one
   * waits until it is there. (The other lines such an admission counts check nothing; the
   * first check of one waits for what was gathered anyway: deferred-lines.ts.)
   */
  const deferred = new Map<string, Promise<void>>();
  let lastBatch: Promise<void> | undefined;
  const defer = (changes: readonly Adjustment[], gaugesOnly = false) => {
    const batch = adjustSoon(changes);
    if (batch !== lastBatch) {
      lastBatch = batch;
      const applied = () => {
        for (const [key, pending] of deferred) if (pending === batch) deferred.delete(key);
      };
      batch.then(applied, (error: unknown) => {
        applied();
        onLostCount(error);
      });
    }
    for (const change of changes) if (!gaugesOnly || change.counter.kind === "gauge") deferred.set(keyOf(change.counter), batch);
  };
  const readsDeferred = (lines: readonly AdmitLine[]) => {
    if (deferred.size === 0) return false;
    for (const line of lines) if (deferred.has(keyOf(line.counter)) || (line.held !== undefined && deferred.has(keyOf(line.held)))) return true;
    return false;
  };

  const allowances =
    options.allowances === false
      ? undefined
      : createAllowances({
      keyOf,
      give: (changes, epoch) => dataset.ifStill(epoch, () => defer(changes)),
      now,
      epoch: () => dataset.generation(),
    });
  /** An admission against an allowance, when one admits it. */
  const drawn = (lines: readonly AdmitLine[], at: number): Verdict | undefined => {
    const local = allowances!.draw(lines, at);
    if (!local) return undefined;
    // What its lines not held count (a counter is held in every shape or in none: its
    // limit is its subject's) is no allowance's to follow; a refusal reads the gauges.
    if (local.later.length > 0) defer(local.later, true);
    return local.verdict;
  };

  const counts: CountState = {
    async admit(lines, at): Promise<Verdict> {
      // Counts of this process whose answer was lost are made good first (repairs.ts).
      if (repairs.size > 0) await repairs.run();
      // With Redis away no call is admitted here either: each would be counted nowhere else.
      if (allowances && redis.up()) {
        // Once per connection: whose dataset it reaches, before admitting against blocks.
        if (dataset.generation() === undefined) await dataset.check().catch(() => {});
        for (let round = 0; round < GRANT_ROUNDS; round++) {
          const local = drawn(lines, at);
          if (local) return local;
          // Another admission of these lines asked for an allowance: it may admit this one too.
          const asked = allowances.granting(lines);
          if (asked) {
            await asked;
            continue;
          }
          const request = allowances.request(lines, at);
          if (!request) break;
          const granting = grant(request);
          allowances.start(request, granting);
          const answer = await granting;
          if ("refusedBy" in answer) {
            if (allowances.refused(request, answer)) continue;
            break;
          }
          allowances.granted(request, answer);
        }
        // Redis decides this one: what an allowance of these lines holds unused goes back first.
        allowances.release(lines);
      }
      return admitInRedis(lines, at);
    },
    adjust(changes) {
      const done = adjustSoon(changes);
      allowances?.track(changes, adjustSoon.current());
      return done;
    },
    async read(counter, at, period) {
      // What this process counted and has not sent yet is part of the value: the read
      // follows the gathered batch (it is not sent early, so reads after each charge keep the batching).
      // Allowances that ended by then gave back what they did not use first.
      if (allowances?.expire(at)) await adjustSoon.flush();
      await adjustSoon.applied();
      await repairs.run();
      const value = Number((await readValue(counter, at, period))[1]);
      // A block counted and not used is not part of the value (credit: of what is available).
      const unused = allowances ? await unusedNow(counter, at, period) : 0;
      return counter.kind === "credit" ? value + unused : value - unused;
    },
    async clear(counter) {
      const key = keyOf(counter);
      allowances?.end((held) => keyOf(held) === key);
      await adjustSoon.flush();
      // A window shares its string with its pair: only its lane is emptied.
      if (counter.kind === "window") await run(ADMIT, [lineOf({ counter })], "clear", "0", String(PERIOD_TTL_MS));
      else await redis.send("DEL", [keyOf(counter)]);
    },
  };


  /** Settlements of a few milliseconds as one merged script run (batching.ts). */
  const adjustSoon = createAdjustBatcher(
    async (merged) => {
      // Sent again under its id until it counted, after any that waits (repairs.ts).
      await repairs.resent((op) => adjustRun(merged, op));
      await credits.settled(merged);
    },
    keyOf,
    GATHER_MS,
  );

  /** A settlement run; `undo` takes off what the lost admission of that id counted, if it did. */
  function adjustRun(merged: MergedChange[], op: OpId, mode: "" | "undo" = "") {
    return withLoads(ADJUST, merged.map((m) => m.line), merged, now(), [String(PERIOD_TTL_MS), closing ? "0" : "1", op.key, String(op.bit), mode], {
      beforeEachRun: () => repairs.guard(op),
      skipUnseeded: true,
    });
  }

  const endCredit = (accountId: number) => allowances?.end((held) => held.kind === "credit" && held.accountId === accountId);
  const credits = createCreditState({
    prefix,
    run,
    redis,
    now,
    settlements: adjustSoon,
    repairs,
    endBlocks: endCredit,
    unused: (accountId) => (allowances ? unusedNow({ kind: "credit", accountId }, now()) : Promise.resolve(0)),
  });

  return {
    owner,
    leaseMs,
    flushedClaim: (charged, version, drop) => credits.flushed(charged, version, drop),
    dataset: { latest: () => dataset.latest(), check: () => dataset.check(), key: datasetKey },
    settlementsApplied: () => {
      // A settlement whose answer was lost counts once it is sent again (repairs.ts).
      const applied = adjustSoon.applied();
      if (!applied) return repairs.size > 0 ? repairs.drained() : undefined;
      return applied.then(repairs.drained);
    },
    allowances: allowances?.counted ?? { granted: 0, drawn: 0 },
    forgetAllowances: (accountId) => void endCredit(accountId),
    counts,
    credit: credits.credit,
    levels: createLevels(prefix, run, repairs),
    keys: createKeys(prefix, run, repairs),
    signups: createPending(redis, `${prefix}su:`),
    claims: createClaims(redis, `${prefix}cl:`, run),
    async close() {
      // The lease is no longer renewed from here on: not by the heartbeat, nor by the last settlements.
      clearInterval(timer);
      closing = true;
      // A stopped instance no longer keeps another version from starting (versions.ts).
      await redis.send("HDEL", [`${prefix}${VERSIONS_KEY}`, owner]).catch(() => {});
      credits.stop();
      if (allowances) {
        // A grant under way lands first, so its block goes back with the others.
        await allowances.stopGranting();
        allowances.endAll();
        allowances.stop();
        await dataset.settled();
      }
      await repairs.run();
      await adjustSoon.flush().catch(() => {});
      await repairs.run();
      await dataset.remove().catch(() => {});
      redis.close();
    },
  };
}

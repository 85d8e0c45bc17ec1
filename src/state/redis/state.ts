import type { Logger } from "../../core/log.ts";
import type { StateLoaders } from "../state.ts";
import type { Adjustment, AdmitLine, Counter, CountState, CreditState, LimitKind, LimitStanding, Standings, State, Verdict, WindowCounter } from "../state.ts";
import type { RedisConnection, Script } from "./connection.ts";
import { ADJUST, ADMIT } from "./lua.ts";
import { CREDIT } from "./lua-credit.ts";
import { createAdjustBatcher, GATHER_MS, oneRunAtATime, type Line } from "./batching.ts";
import { createKeys, createLevels } from "./levels-and-keys.ts";
import { createClaims, createPending } from "./pending-and-claims.ts";
import { adjustmentOf, splitAdmission, type CheckedCounters } from "./deferred-lines.ts";
import { laneOf } from "./lua-windows.ts";
import { createAllowances, type GrantAnswer, type GrantRefusal, type GrantRequest } from "./allowances.ts";
import { watchDataset } from "./dataset.ts";
import { createRepairs, type OpId } from "./repairs.ts";
import { MergedChanges, mergeAdjustments, type MergedChange } from "./batching.ts";

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
/** Period totals outlive their month; a total Redis lost is seeded again from the rollups. */
const PERIOD_TTL_MS = 35 * 86_400_000;
/** Calls of a script that asks for loads; each run fills what the one before named. */
const LOAD_ROUNDS = 3;

/** Grants an admission waits for or asks for before Redis admits it on its own. */
const GRANT_ROUNDS = 4;

const ADMITTED_NOW: Verdict = Object.freeze({ admitted: true as const });

/** A line's index in the admission, from its index in what the script was sent. */
const indexOf = (sent: number, indexes: readonly number[] | undefined): number => (indexes ? indexes[sent]! : sent);

/** The standings in an admission's answer: {'ok', line, remaining, reset} for requests, then for tokens ('' where none). */
function standingsOf(answer: unknown[], indexes: readonly number[] | undefined): Standings {
  const standings: Standings = {};
  const at = (offset: number): LimitStanding | undefined => {
    if (answer[offset] === "" || answer[offset] === undefined) return undefined;
    const reset = String(answer[offset + 2]);
    const line = indexOf(Number(answer[offset]), indexes);
    return reset === "" ? { line, remaining: Number(answer[offset + 1]) } : { line, remaining: Number(answer[offset + 1]), resetMs: Number(reset) };
  };
  const requests = at(1);
  const tokens = at(4);
  if (requests) standings.requests = requests;
  if (tokens) standings.tokens = tokens;
  return standings;
}

export function createRedisState(options: RedisStateOptions, loaders: StateLoaders, now: () => number): RedisState {
  const redis = options.connection;
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const owner = crypto.randomUUID();
  const leases = `${prefix}lease:`;
  const base = (payload: unknown) => [leases, owner, String(leaseMs), JSON.stringify(payload)];
  const run = (s: Script, payload: unknown, ...extra: string[]) => redis.run(s, [], [...base(payload), ...extra]);

  /** Set by `close`: what is sent from then on does not renew the lease. */
  let closing = false;
  /** Whether Redis still holds what this process counted over an earlier connection (dataset.ts). */
  const dataset = watchDataset(redis, `${prefix}ds:${owner}`);
  /** Admissions and settlements whose answer was lost, made good once Redis answers (repairs.ts). */
  const repairs = createRepairs({
    keyPrefix: `${prefix}op:${owner}:`,
    dataset,
    now: Date.now,
    log: options.log,
  });
  const heartbeat = () => {
    dataset.check().then(repairs.run, () => {});
    return redis.send("SET", [`${leases}${owner}`, "1", "PX", String(leaseMs)]).catch(() => {});
  };
  void heartbeat();
  const timer = setInterval(heartbeat, Math.max(10, Math.floor(leaseMs / 3)));
  timer.unref?.();

  /**
   * A window's string: a pair's under `wp:`, a window alone under `ws:` (lua-windows.ts;
   * earlier layouts were under `win:`, one window a string, and `w:`, hashes: another
   * layout, so another name, and instances of two versions never read each other's).
   */
  const windowKey = (counter: WindowCounter) => (counter.lane ? `${prefix}wp:${counter.lane.key}` : `${prefix}ws:${counter.key}`);
  /** Redis keys of counters, made once per counter object (the request path reuses them). */
  const keysOf = new WeakMap<object, string>();
  const keyOf = (counter: Counter): string => {
    let key = keysOf.get(counter);
    if (key === undefined) {
      key = counter.kind === "credit" ? `${prefix}c:${counter.accountId}` : counter.kind === "window" ? windowKey(counter) : `${prefix}${counter.kind[0]}:${counter.key}`;
      keysOf.set(counter, key);
    }
    return key;
  };

  /** Counters some admission checked: their amounts are counted in the admission itself from then on. */
  const checkedCounters: CheckedCounters = { keys: new Set(), keyOf };
  /** The flush a first check waits for (admissions meanwhile wait for it too, so none overtakes another). */
  let gatheredFirst: Promise<void> | undefined;
  const onLostCount = (error: unknown) => options.log?.error("an admitted call's unchecked counts could not be given to Redis", { error: (error as Error).message });

  const lineOf = (line: { counter: Counter; period?: string; limit?: number; add?: number; held?: Counter; report?: LimitKind }): Line => {
    const { counter } = line;
    return {
      k: counter.kind[0],
      key: keyOf(counter),
      w: counter.kind === "window" ? counter.windowMs : undefined,
      n: counter.kind === "window" ? laneOf(counter) : undefined,
      p: line.period,
      l: line.limit,
      a: line.add ?? 0,
      h: line.held ? keyOf(line.held) : undefined,
      r: line.report === undefined || line.limit === undefined ? undefined : line.report === "requests" ? 1 : 2,
    };
  };

  /** Balance reads that failed, by line: asked again, the line fails with the read's error. */
  const loadFailures = new WeakMap<Line, { error: unknown }>();
  /** Fills the lines the script named with the seed or balance it lacks. */
  const load = async (answer: unknown[], lines: Line[], counters: readonly { counter: Counter; period?: string }[], at: number) => {
    await Promise.all(
      answer.slice(1).map(async (index) => {
        const i = Number(index);
        const { counter, period } = counters[i]!;
        if (counter.kind === "period") lines[i]!.s = await loaders.seed(counter.seed, period!);
        else if (counter.kind === "credit") {
          const line = lines[i]!;
          const failed = loadFailures.get(line);
          if (failed !== undefined) throw failed.error;
          try {
            const { balance, staleAt, version, expiring } = await loaders.balance(counter.accountId, at);
            line.b = balance;
            line.v = version;
            line.st = Number.isFinite(staleAt) ? staleAt : undefined;
            line.e = expiring ? JSON.stringify(expiring.map((grant) => [grant.at, grant.remaining])) : undefined;
          } catch (error) {
            // The ledger cannot be read: the script takes a stale balance's expired grants
            // off by itself (f); a balance it cannot bring forward fails with this error.
            loadFailures.set(line, { error });
            line.f = 1;
          }
        }
      }),
    );
  };

  /** Runs a script that may first ask for seeds or balances, loading them between runs. */
  const withLoads = async (s: Script, lines: Line[], counters: readonly { counter: Counter; period?: string }[], at: number, extra: string[], beforeEachRun?: () => void): Promise<unknown[]> => {
    for (let round = 0; round < LOAD_ROUNDS; round++) {
      beforeEachRun?.();
      const answer = (await run(s, lines, ...extra)) as unknown[];
      if (answer[0] !== "load") return answer;
      await load(answer, lines, counters, at);
    }
    throw new Error("Redis kept asking for period totals and balances it was given");
  };

  /** What allowances hold unused of a counter, of blocks in the data the connection reaches (checked first when it was made again). */
  const unusedNow = async (counter: Counter, at: number, period?: string) => {
    if (dataset.generation() === undefined) await dataset.check().catch(() => {});
    return allowances!.unused(counter, at, period);
  };

  /** A counter's value: the admission script in mode 'read'. */
  const readValue = (counter: Counter, at: number, period: string | undefined) =>
    withLoads(ADMIT, [lineOf({ counter, period })], [{ counter, period }], at, ["read", String(at), String(PERIOD_TTL_MS)]);
  /**
   * Admissions one run at a time, those that came meanwhile together in the next
   * (batching.ts, oneRunAtATime): each is admitted in turn as by a run of its own, and
   * the windows and totals the calls of one account share are read and written once per run.
   */
  type Admitting = { payload: Line[]; at: number; op: OpId; sent?: { batches: number } };
  /** Notes, as a run goes, how many settlement batches went to Redis before it (they are in what it reads). */
  const noteSent = (admitting: Admitting) => {
    if (admitting.sent) admitting.sent.batches = adjustSoon.sentCount();
  };
  const admissions = oneRunAtATime<Admitting, unknown[]>(
    (admitting) => {
      const { payload, at, op } = admitting;
      noteSent(admitting);
      return run(ADMIT, payload, "admit", String(at), String(PERIOD_TTL_MS), op.key, String(op.bit)) as Promise<unknown[]>;
    },
    (waiting) => {
      for (const admitting of waiting) noteSent(admitting);
      return run(ADMIT, waiting.map(({ payload, at, op }) => ({ l: payload, n: at, o: op.key, b: op.bit })), "many", "0", String(PERIOD_TTL_MS)) as Promise<unknown[][]>;
    },
  );
  /**
   * An admission whose answer was lost may have counted: what it would have counted is
   * taken off once Redis answers again, if it did (repairs.ts).
   */
  const undoLater = (op: OpId, checking: readonly AdmitLine[], at: number) => {
    const reverse: Adjustment[] = [];
    for (const line of checking) {
      if (line.add === 0) continue;
      const { counter } = line;
      if (counter.kind === "credit") reverse.push({ counter, release: line.add, charge: 0 });
      else {
        const forward = adjustmentOf(line, at) as { delta: number };
        reverse.push({ ...forward, delta: -forward.delta } as Adjustment);
      }
    }
    const merged = new MergedChanges();
    mergeAdjustments(reverse, keyOf, merged);
    const reversed = merged.values();
    repairs.add(op, () => adjustRun(reversed, op, "undo"));
  };

  /** The ADMIT run of the lines Redis must check (with an allowance's margins, by the admission's line index), its raw answer. */
  const runAdmission = async (
    checking: readonly AdmitLine[],
    indexes: readonly number[] | undefined,
    at: number,
    margins?: ReadonlyMap<number, number>,
    /** Filled with how many settlement batches were sent before the run that counted (allowances' grants). */
    sent?: { batches: number },
  ): Promise<unknown[]> => {
    const payload = checking.map(lineOf);
    if (margins) for (let sent = 0; sent < payload.length; sent++) payload[sent]!.m = margins.get(indexOf(sent, indexes));
    const op = repairs.next();
    const lost = (error: unknown) => {
      undoLater(op, checking, at);
      throw error;
    };
    const admitting: Admitting = { payload, at, op, sent };
    const answer = await admissions(admitting).catch(lost);
    // A period total or balance Redis does not hold: loaded, then this admission runs on its own.
    if (answer[0] !== "load") return answer;
    await load(answer, payload, checking, at);
    const extra = ["admit", String(at), String(PERIOD_TTL_MS), op.key, String(op.bit)];
    return withLoads(ADMIT, payload, checking, at, extra, () => sent && (sent.batches = adjustSoon.sentCount())).catch(lost);
  };

  /** The ADMIT run of the lines Redis must check, its answer in the admission's own line indexes. */
  const admitChecked = async (checking: readonly AdmitLine[], indexes: readonly number[] | undefined, at: number): Promise<Verdict> => {
    const answer = await runAdmission(checking, indexes, at);
    if (answer[0] === "ok") return answer[1] === "" && answer[4] === "" ? ADMITTED_NOW : { admitted: true, standings: standingsOf(answer, indexes) };
    const [, line, used, held, retryAfterMs] = answer.map(String);
    return { admitted: false, refusal: { line: indexOf(Number(line), indexes), used: Number(used), held: Number(held), retryAfterMs: Number(retryAfterMs) } };
  };

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
    const sent = { batches: 0 };
    const connects = redis.connects();
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
    // The block is counted in the data the answering connection reaches: a grant that went
    // over a connection made again meanwhile (Redis may have restarted) is of that connection's generation.
    let epoch = request.epoch;
    if (redis.connects() !== connects) {
      await dataset.check().catch(() => {});
      epoch = dataset.generation() ?? epoch;
    }
    return { staleAt: stale === "" ? undefined : Number(stale), values, admitSent: sent.batches, epoch };
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
      const op = repairs.next();
      try {
        await adjustRun(merged, op);
      } catch (error) {
        // Sent again with its id once Redis answers: it counts once whether this one ran or not.
        repairs.add(op, () => adjustRun(merged, op));
        throw error;
      }
      if (retired.size > 0) for (const { counter } of merged) if (counter.kind === "credit") await settleRetired(counter.accountId);
    },
    keyOf,
    GATHER_MS,
  );

  /** A settlement run; `undo` takes off what the lost admission of that id counted, if it did. */
  function adjustRun(merged: MergedChange[], op: OpId, mode: "" | "undo" = "") {
    return withLoads(ADJUST, merged.map((m) => m.line), merged, now(), [String(PERIOD_TTL_MS), closing ? "0" : "1", op.key, String(op.bit), mode]);
  }

  /** Deleted accounts whose calls still hold credit, and what to do when they no longer do (this process's callbacks). */
  const retired = new Map<number, { settled: () => void; timer: ReturnType<typeof setInterval> }>();
  const creditKey = (accountId: number) => `${prefix}c:${accountId}`;
  const held = async (accountId: number) => Number(await run(CREDIT, { op: "held", key: creditKey(accountId) }));
  const settleRetired = async (accountId: number) => {
    const entry = retired.get(accountId);
    if (!entry || (await held(accountId)) > 0 || !retired.has(accountId)) return;
    retired.delete(accountId);
    clearInterval(entry.timer);
    await redis.send("DEL", [creditKey(accountId)]);
    entry.settled();
  };

  const flushed = async (charged: ReadonlyMap<number, number>, version: number | undefined, drop?: [string, string]) => {
    if (charged.size === 0 && !drop) return;
    await run(CREDIT, { op: "flushed", charges: [...charged].map(([accountId, amount]) => [creditKey(accountId), amount]), v: version, now: now(), drop });
    if (retired.size > 0) for (const accountId of charged.keys()) await settleRetired(accountId);
  };

  const endCredit = (accountId: number) => allowances?.end((held) => held.kind === "credit" && held.accountId === accountId);
  const credit: CreditState = {
    async invalidate(accountId) {
      // A block reserved against the old balance admits nothing more.
      endCredit(accountId);
      // The next use, by any process, reads the ledger again; what calls hold stays.
      await redis.send("HDEL", [creditKey(accountId), "stored", "staleAt", "version", "exp"]);
    },
    flushed: (charged, version) => flushed(charged, version),
    async held(accountId) {
      // As a read: the give-backs gathered so far count first.
      await adjustSoon.applied();
      await repairs.run();
      const all = await held(accountId);
      const unused = allowances ? await unusedNow({ kind: "credit", accountId }, now()) : 0;
      return Math.max(0, all - unused);
    },
    async retire(accountId, settled) {
      endCredit(accountId);
      await adjustSoon.flush();
      // Calls on other instances settle there, and a killed one's leases only expire:
      // look again every second until nothing is held.
      const timer = setInterval(() => void settleRetired(accountId).catch(() => {}), 1000);
      timer.unref?.();
      const previous = retired.get(accountId);
      if (previous) clearInterval(previous.timer);
      retired.set(accountId, { settled, timer });
      await settleRetired(accountId);
    },
  };

  return {
    owner,
    leaseMs,
    flushedClaim: (charged, version, drop) => flushed(charged, version, drop),
    settlementsApplied: () => {
      // A settlement whose answer was lost counts once it is sent again (repairs.ts).
      const applied = adjustSoon.applied();
      if (!applied) return repairs.size > 0 ? repairs.run() : undefined;
      return applied.then(repairs.run);
    },
    allowances: allowances?.counted ?? { granted: 0, drawn: 0 },
    forgetAllowances: (accountId) => void endCredit(accountId),
    counts,
    credit,
    levels: createLevels(prefix, run, repairs),
    keys: createKeys(prefix, run, repairs),
    signups: createPending(redis, `${prefix}su:`),
    claims: createClaims(redis, `${prefix}cl:`, run),
    async close() {
      // The lease is no longer renewed from here on: not by the heartbeat, nor by the last settlements.
      clearInterval(timer);
      closing = true;
      for (const entry of retired.values()) clearInterval(entry.timer);
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

import type { Adjustment, Counter } from "../state.ts";
import { bucketWidth } from "../memory-windows.ts";
import { laneOf } from "./lua-windows.ts";

/** A line of a Redis script's payload (lua.ts: ADJUST's changes). */
export type Line = Record<string, string | number | undefined>;

/** A merged change: its line and what the line counts (for the seeds a script may ask for). */
export interface MergedChange {
  line: Line;
  counter: Counter;
  period?: string;
}

/**
 * A moment's changes merged per cell, in the order their cells first came. Cells are
 * found by the counter object (counters are values made once and reused, see `Counter`)
 * and then by bucket and sign, period or nothing: building a string key per change made
 * this merge 8% of a scale-out instance's CPU. Two counter objects of one key are merged
 * apart, which Redis applies the same.
 */
export class MergedChanges {
  private readonly cells = new Map<Counter, Map<number | string, MergedChange> | MergedChange>();
  private readonly merged: MergedChange[] = [];
  /** The merged changes, in the order their cells first came. */
  values(): MergedChange[] {
    return this.merged;
  }
  get size(): number {
    return this.merged.length;
  }
  /** The cell of a counter with sub-cells (a window's bucket and sign, a period). */
  cell(counter: Counter, sub: number | string): MergedChange | undefined {
    return (this.cells.get(counter) as Map<number | string, MergedChange> | undefined)?.get(sub);
  }
  /** The one cell of a gauge or credit. */
  only(counter: Counter): MergedChange | undefined {
    return this.cells.get(counter) as MergedChange | undefined;
  }
  add(change: MergedChange, sub?: number | string): void {
    this.merged.push(change);
    if (sub === undefined) {
      this.cells.set(change.counter, change);
      return;
    }
    let subs = this.cells.get(change.counter) as Map<number | string, MergedChange> | undefined;
    if (!subs) this.cells.set(change.counter, (subs = new Map()));
    subs.set(sub, change);
  }
}

/**
 * Adds changes to `into`, merged with those already there that touch the same cell: the
 * same window bucket with a delta of the same sign (a positive one moves the bucket's
 * newest event, so its moment is the latest of them), the same period, the same gauge,
 * the same account's credit. Many calls of one account settle within moments of each
 * other, and each touched the same dozen keys.
 */
export function mergeAdjustments(changes: readonly Adjustment[], keyOf: (counter: Counter) => string, into: MergedChanges): void {
  for (const change of changes) {
    const { counter } = change;
    switch (counter.kind) {
      case "window": {
        const { at, delta } = change as { at: number; delta: number };
        if (delta === 0) break;
        const sub = Math.floor(at / bucketWidth(counter.windowMs)) * 2 + (delta > 0 ? 1 : 0);
        const merged = into.cell(counter, sub);
        if (!merged) into.add({ line: { k: "w", key: keyOf(counter), w: counter.windowMs, n: laneOf(counter), at, d: delta }, counter }, sub);
        else {
          merged.line.d = (merged.line.d as number) + delta;
          if (at > (merged.line.at as number)) merged.line.at = at;
        }
        break;
      }
      case "period": {
        const { period, delta } = change as { period: string; delta: number };
        const merged = into.cell(counter, period);
        if (!merged) into.add({ line: { k: "p", key: keyOf(counter), p: period, d: delta }, counter, period }, period);
        else merged.line.d = (merged.line.d as number) + delta;
        break;
      }
      case "gauge": {
        const { delta } = change as { delta: number };
        const merged = into.only(counter);
        if (!merged) into.add({ line: { k: "g", key: keyOf(counter), d: delta }, counter });
        else merged.line.d = (merged.line.d as number) + delta;
        break;
      }
      case "credit": {
        const { release, charge } = change as { release: number; charge: number };
        const merged = into.only(counter);
        if (!merged) into.add({ line: { k: "c", key: keyOf(counter), rel: release, ch: charge }, counter });
        else {
          merged.line.rel = (merged.line.rel as number) + release;
          merged.line.ch = (merged.line.ch as number) + charge;
        }
        break;
      }
    }
  }
}

const ignore = () => {};

/** How long settlements, keys' releases and successes gather before they go to Redis together. */
export const GATHER_MS = 5;

/** A moment's batch of calls: `flush` sends it now (what must follow it waits for it). */
export interface Gathered<Item, Result> {
  (items: Item): Promise<Result>;
  flush(): Promise<void>;
  /** Settles once what was gathered so far was applied (or failed); undefined when nothing waits. */
  applied(): Promise<void> | undefined;
  /**
   * Batches are numbered from 1 as they start, and sent in that order: the number of the
   * batch the last items went in, and how many were sent so far (a batch numbered up to
   * that went to Redis before whatever is sent now).
   */
  current(): number;
  sentCount(): number;
}

/**
 * Calls within `delayMs` of each other gathered into one `apply`: each call's items are
 * added (`add`) to the moment's batch (made by `start`), and its promise settles with
 * the run they went in (its result, which each caller reads its own part of). What a
 * shared State does per call and may do a few milliseconds later (a settlement, a key's
 * release or success) costs Redis one script run per moment instead of one per call.
 */
export function gatherWithin<Item, Batch, Result = void>(
  delayMs: number,
  start: () => Batch,
  add: (items: Item, into: Batch) => void,
  apply: (batch: Batch) => Promise<Result>,
): Gathered<Item, Result> {
  let pending: { batch: Batch; done: Promise<Result>; send: () => void; timer: ReturnType<typeof setTimeout> } | undefined;
  let started = 0;
  let sentCount = 0;
  /** Batches sent and not yet answered (a dropped connection can hold one until it is made again). */
  const sent = new Set<Promise<unknown>>();
  const gathered = (items: Item): Promise<Result> => {
    if (!pending) {
      const batch = start();
      let settle!: { resolve: (result: Result) => void; reject: (error: unknown) => void };
      const done = new Promise<Result>((resolve, reject) => (settle = { resolve, reject }));
      started++;
      const send = () => {
        pending = undefined;
        sentCount++;
        const answered = apply(batch).then(settle.resolve, settle.reject);
        sent.add(answered);
        void answered.finally(() => sent.delete(answered));
      };
      const timer = setTimeout(send, delayMs);
      timer.unref?.();
      pending = { batch, done, send, timer };
    }
    add(items, pending.batch);
    return pending.done;
  };
  // What was gathered so far: the moment's batch and those sent before it, whose answers
  // have not come (what waits for them must not overtake a batch sent but not yet run).
  gathered.applied = () => {
    if (sent.size === 0) return pending?.done.then(ignore, ignore);
    const all: Array<Promise<unknown>> = [...sent];
    if (pending) all.push(pending.done);
    return Promise.allSettled(all).then(ignore);
  };
  gathered.current = () => started;
  gathered.sentCount = () => sentCount;
  gathered.flush = async () => {
    const now = pending;
    if (!now) return;
    clearTimeout(now.timer);
    now.send();
    await now.done.catch(() => {});
  };
  return gathered;
}

/**
 * Settlements within `delayMs` of each other go to Redis as one script run, merged
 * (`mergeAdjustments`): one settlement script per call cost Redis about 160 µs of its
 * time, the scale-out bottleneck. A reservation is thus released up to `delayMs` later,
 * which only makes admissions meanwhile more careful.
 */
export function createAdjustBatcher(apply: (merged: MergedChange[]) => Promise<void>, keyOf: (counter: Counter) => string, delayMs: number) {
  const gathered = gatherWithin<readonly Adjustment[], MergedChanges>(
    delayMs,
    () => new MergedChanges(),
    (changes, into) => mergeAdjustments(changes, keyOf, into),
    (merged) => apply(merged.values()),
  );
  const adjust = (changes: readonly Adjustment[]): Promise<void> => (changes.length === 0 ? Promise.resolve() : gathered(changes));
  return Object.assign(adjust, { applied: gathered.applied, flush: gathered.flush, current: gathered.current, sentCount: gathered.sentCount });
}

/**
 * One run with Redis at a time: a request that comes while one runs waits, and all that
 * waited go together in the next run (`many`, answering each in order), as a database
 * commits a group. Without contention each request goes at once on its own (`single`);
 * under load a run carries every request of the round trip before it, and a script that
 * reads the same keys for each of them reads them once.
 */
export function oneRunAtATime<Request, Result>(single: (request: Request) => Promise<Result>, many: (requests: Request[]) => Promise<Result[]>): (request: Request) => Promise<Result> {
  let running = false;
  let queued: Array<{ request: Request; resolve: (result: Result) => void; reject: (error: unknown) => void }> = [];
  const next = () => {
    if (queued.length === 0) {
      running = false;
      return;
    }
    const batch = queued;
    queued = [];
    const requests = batch.map((entry) => entry.request);
    const results = batch.length === 1 ? single(requests[0]!).then((result) => [result]) : many(requests);
    results
      .then(
        (answers) => batch.forEach((entry, i) => entry.resolve(answers[i]!)),
        (error: unknown) => batch.forEach((entry) => entry.reject(error)),
      )
      .finally(next);
  };
  return (request) => {
    if (running) return new Promise<Result>((resolve, reject) => queued.push({ request, resolve, reject }));
    running = true;
    const result = single(request);
    result.then(next, next);
    return result;
  };
}

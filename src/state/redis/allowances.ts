import { bucketWidth } from "../memory-windows.ts";
import type { Adjustment, AdmitLine, Counter } from "../state.ts";
import type { Allowance, Allowances, Entry, Held, ShapeLine } from "./allowance-model.ts";
import { adjustmentOf } from "./deferred-lines.ts";
import { fits, givingBack, held, move, reachedAt, standingsOf } from "./allowance-lines.ts";

export type { Allowances, GrantAnswer, GrantRefusal, GrantRequest } from "./allowance-model.ts";

/**
 * Allowances: an instance on the Redis State admits most calls without a round trip.
 *
 * Each admission went to Redis (a script run every call waits for), which is what held a
 * scale-out instance to about half the calls of one on SQLite (docs/benchmarks.md). An
 * allowance is a block of every checked line of an admission (its limited windows and
 * totals, and its credit) taken at once in one admission script run: the script counts
 * the block as it counts a call (credit: reserves it) and grants it only when the limit
 * leaves `HEADROOM_BLOCKS` times the block of headroom past it. Calls with the same lines
 * are then admitted here while the block has room, by the script's own rules applied to
 * what the grant read and to what this process counted since; what a block did not use
 * goes back when the allowance ends.
 *
 * What stays exact, for one instance (the differential and contract tests run with
 * allowances): a call is admitted here only when the counters' values then (the grant's
 * reading, the calls admitted from it and this process's settlements of the counters
 * since) are under every limit, so a refusal is always Redis's own, after the unused
 * block went back. An allowance ends before anything it read can change without this
 * process: at the end of the narrowest window's bucket (a call counts in its bucket, and
 * blocks and calls of one bucket slide out together), when a window's oldest amount
 * slides out, when a credit balance goes stale, after `ALLOWANCE_MAX_MS`, and when a
 * settlement lands outside its bucket or the ledger changes. The rate-limit standings are
 * computed the same way.
 *
 * Between instances: another instance's admission sees a block as counted until it goes
 * back (at most `ALLOWANCE_MAX_MS` later). Blocks are granted only far from a limit, so
 * near one every instance admits call by call as before; what an unused block can do is
 * refuse another instance's call in the moment a burst reaches the limit while the block
 * holds part of the headroom, and never admit a call past a limit. A process killed with
 * a block holds its unused part in the windows until they slide out and in the period
 * totals until the period ends (its credit reservation expires with its lease, like
 * every reservation).
 */

/** Longest an allowance lasts (ms): how long another instance may see its unused part as counted. */
export const ALLOWANCE_MAX_MS = 1000;
/** An allowance is granted only when its limits leave this many times its block free past it. */
export const HEADROOM_BLOCKS = 8;
/** Calls a first block holds; then twice the last when it ran out, or a quarter more than it used. */
const FIRST_CALLS = 16;
const MIN_CALLS = 4;
const MAX_CALLS = 4096;
/** After a refused grant at the smallest block: call by call for this long. */
const BACKOFF_MS = 1000;
/** How often allowances past their end give back their unused part (an idle account's too). */
const SWEEP_MS = 250;
/** Entries of lines not admitted for this long are forgotten. */
const FORGET_MS = 60_000;
/** Shapes kept per first counter (an account's models in use): the least recently used goes beyond. */
const MAX_SHAPES = 16;





export function createAllowances(options: {
  keyOf: (counter: Counter) => string;
  /**
   * Gives back what an ended allowance did not use (gathered with the settlements), when
   * Redis still holds the dataset of the allowance's epoch (taking off what Redis no
   * longer counts would undercount).
   */
  give: (changes: Adjustment[], epoch: number) => void;
  now: () => number;
  /**
   * The generation of the dataset the connection reaches (dataset.ts), undefined until it
   * is known for the connection in use: an allowance of another generation admits nothing.
   */
  epoch: () => number | undefined;
}): Allowances {
  const { give } = options;
  /** A counter's cell: its key in Redis, and its lane when it shares a string with its pair. */
  const cells = new WeakMap<Counter, string>();
  const keyOf = (counter: Counter): string => {
    let cell = cells.get(counter);
    if (cell === undefined) {
      cell = counter.kind === "window" && counter.lane ? `${options.keyOf(counter)}\u0000${counter.lane.index}` : options.keyOf(counter);
      cells.set(counter, cell);
    }
    return cell;
  };
  const entries = new Map<string, Entry[]>();
  const counted = { granted: 0, drawn: 0 };
  /** Held lines of open allowances by their counter's key (settlements are matched through it). */
  const byCounter = new Map<string, Map<Allowance, Held>>();
  /** Set by `stopGranting`: no block is asked for from then on. */
  let stopping = false;

  const firstHeld = (lines: readonly AdmitLine[]) => {
    for (let i = 0; i < lines.length; i++) if (held(lines[i]!)) return i;
    return -1;
  };
  /** The entry of the lines' shape; made when `at` is given and there is none. */
  const entryOf = (lines: readonly AdmitLine[], at?: number): Entry | undefined => {
    const first = firstHeld(lines);
    if (first < 0) return undefined;
    const key = keyOf(lines[first]!.counter);
    let list = entries.get(key);
    if (list) for (const entry of list) if (fits(entry, lines)) return entry;
    if (at === undefined) return undefined;
    const shape: ShapeLine[] = [];
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (held(line)) shape.push({ index: i, counter: line.counter, limit: line.limit, period: line.period });
    }
    const entry: Entry = { shape, length: lines.length, calls: FIRST_CALLS, waiting: 0, sized: false, backoffUntil: 0, ends: 0, usedAt: at };
    if (!list) entries.set(key, (list = []));
    list.push(entry);
    if (list.length > MAX_SHAPES) {
      // The least recently used goes, but never one whose grant is under way (its block
      // would land on an entry nothing reaches) nor the one just made.
      let oldest = -1;
      for (let i = 0; i < list.length - 1; i++) if (!list[i]!.granting && (oldest < 0 || list[i]!.usedAt < list[oldest]!.usedAt)) oldest = i;
      if (oldest >= 0) {
        retire(list[oldest]!);
        list.splice(oldest, 1);
      }
    }
    return entry;
  };
  const allEntries = function* () {
    for (const list of entries.values()) yield* list;
  };

  /** Ends an allowance: its unused part goes back where it was counted; a window's calls count at the newest of them. */
  const close = (allowance: Allowance) => {
    if (allowance.closed) return;
    allowance.closed = true;
    for (const h of allowance.lines) {
      const holders = byCounter.get(h.key);
      holders?.delete(allowance);
      if (holders?.size === 0) byCounter.delete(h.key);
    }
    const changes = givingBack(allowance);
    if (changes.length > 0) give(changes, allowance.epoch);
  };

  /** Ends the entry's allowance and sizes the next block by how it went. */
  const retire = (entry: Entry) => {
    const allowance = entry.allowance;
    if (!allowance) return;
    entry.allowance = undefined;
    close(allowance);
    const ranOut = allowance.lines.some((h) => h.block > 0 && h.drawn > h.block * 0.75);
    entry.calls = ranOut ? Math.min(MAX_CALLS, allowance.size * 2) : Math.max(MIN_CALLS, Math.ceil(allowance.calls * 1.25));
  };

  /** Whether the allowance admits a call at `at` (the line shapes aside). */
  const usable = (a: Allowance, at: number) => !a.stale && !a.closed && at >= a.grantAt && at < a.end && a.epoch === options.epoch();

  const draw: Allowances["draw"] = (lines, at) => {
    if (entries.size === 0) return undefined;
    const entry = entryOf(lines);
    const a = entry?.allowance;
    if (!a || !usable(a, at)) return undefined;
    // The shape matched: the allowance's lines are the admission's held lines, in order.
    let j = 0;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (!held(line)) continue;
      const h = a.lines[j++]!;
      if (h.drawn + line.add > h.block || reachedAt(h)) return undefined;
    }
    const later: Adjustment[] = [];
    j = 0;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (held(line)) a.lines[j++]!.drawn += line.add;
      else if (line.add !== 0) later.push(adjustmentOf(line, at));
    }
    a.calls++;
    counted.drawn++;
    if (at > a.newest) a.newest = at;
    entry!.usedAt = at;
    const standings = standingsOf(a, at);
    if (a.once) retire(entry!);
    return { verdict: standings ? { admitted: true, standings } : { admitted: true }, later };
  };

  const request: Allowances["request"] = (lines, at) => {
    const entry = entryOf(lines, at);
    if (!entry) return undefined;
    retire(entry);
    const epoch = options.epoch();
    if (stopping || epoch === undefined || at < entry.backoffUntil) return undefined;
    const margins = new Map<number, number>();
    const asked: AdmitLine[] = [];
    // A burst waiting for this grant sizes the block, unless the last refusal sized it.
    const calls = entry.sized ? entry.calls : Math.min(MAX_CALLS, Math.max(entry.calls, entry.waiting + 1));
    entry.waiting = 0;
    entry.sized = false;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (!held(line)) {
        // The call the grant is for is admitted against it like any other: it counts these then.
        asked.push(line.add === 0 ? line : { ...line, add: 0 });
        continue;
      }
      const { counter } = line;
      // A gauge with a limit is checked against calls in flight, which no block can stand for;
      // a window whose buckets do not divide it evenly can lose more than its oldest bucket at once.
      if (counter.kind === "gauge") return undefined;
      if (counter.kind === "window" && bucketWidth(counter.windowMs) * 60 !== counter.windowMs) return undefined;
      const block = line.add * calls;
      margins.set(i, block * HEADROOM_BLOCKS);
      asked.push({ ...line, add: block });
    }
    return { lines: asked, margins, at, entry, calls, ends: entry.ends, epoch };
  };

  const granted: Allowances["granted"] = (req, answer) => {
    const { admitSent, epoch } = answer;
    const { entry } = req;
    retire(entry);
    const { at } = req;
    let end = Math.min(at + ALLOWANCE_MAX_MS, answer.staleAt ?? Infinity);
    const lines: Held[] = [];
    for (const index of req.margins.keys()) {
      const line = req.lines[index]!;
      const { counter } = line;
      const got = answer.values.get(index);
      let window: Pick<Held, "windowMs" | "bucketStart" | "oldestNewest"> = {};
      if (counter.kind === "window") {
        const width = bucketWidth(counter.windowMs);
        const start = Math.floor(at / width) * width;
        const reset = got?.reset ?? 0;
        window = { windowMs: counter.windowMs, bucketStart: start, oldestNewest: at + reset - counter.windowMs };
        end = Math.min(end, start + width);
        // Nothing may slide out while the allowance lasts: its values would change without this process.
        if (reset > 0) end = Math.min(end, at + reset);
      }
      const before = got === undefined ? NaN : got.before;
      lines.push({ index, counter, key: keyOf(counter), period: line.period, limit: line.limit, report: line.report, block: line.add, before, drawn: 0, moved: 0, ...window });
    }
    const allowance: Allowance = { entry, lines, grantAt: at, end, epoch, size: req.calls, newest: at, calls: 0, stale: false, closed: false };
    // Something it read was ended while it was asked for (a balance changed): the call it was asked for, and no more.
    if (entry.ends !== req.ends || stopping) allowance.once = true;
    entry.allowance = allowance;
    entry.usedAt = at;
    counted.granted++;
    for (const h of lines) {
      let holders = byCounter.get(h.key);
      if (!holders) byCounter.set(h.key, (holders = new Map()));
      holders.set(allowance, h);
    }
    // This process's changes sent after the grant's admission run are not in what it read.
    const moves = entry.grantMoves;
    doneWith(entry);
    if (moves) for (const { change, batch } of moves) if (batch > admitSent) for (const h of lines) if (h.key === keyOf(change.counter)) move(allowance, h, change);
  };

  const refused: Allowances["refused"] = (req, refusal) => {
    const { entry } = req;
    doneWith(entry);
    // The block that fits what the refusing line has left, its margin included.
    const line = req.lines[refusal.refusedBy]!;
    const perCall = line.add / req.calls;
    const left = line.counter.kind === "credit" ? refusal.used - line.limit! : line.limit! - refusal.used;
    const fits = perCall > 0 ? Math.floor(left / (perCall * (HEADROOM_BLOCKS + 1))) : 0;
    if (fits >= MIN_CALLS && fits < req.calls) {
      entry.calls = Math.min(MAX_CALLS, fits);
      entry.sized = true;
      return true;
    }
    // Too near the limit for any block: call by call for a while.
    entry.calls = FIRST_CALLS;
    entry.backoffUntil = req.at + BACKOFF_MS;
    return false;
  };

  /** Entries whose grant is under way: what they must add once granted (`grantMoves`). */
  const grantsUnderWay = new Set<Entry>();
  const doneWith = (entry: Entry) => {
    grantsUnderWay.delete(entry);
    entry.grantMoves = undefined;
  };

  const track: Allowances["track"] = (changes, batch) => {
    if (grantsUnderWay.size > 0)
      for (const entry of grantsUnderWay)
        for (const change of changes) if (entry.shape.some((line) => line.counter === change.counter || keyOf(line.counter) === keyOf(change.counter))) entry.grantMoves?.push({ change, batch });
    if (byCounter.size === 0) return;
    for (const change of changes) {
      const refs = byCounter.get(keyOf(change.counter));
      if (refs) for (const [allowance, h] of refs) move(allowance, h, change);
    }
  };

  const unused: Allowances["unused"] = (counter, at, period) => {
    const refs = byCounter.get(keyOf(counter));
    if (!refs) return 0;
    // Only blocks Redis holds: of the dataset the connection reaches, and of the period read.
    const epoch = options.epoch();
    let total = 0;
    for (const [a, h] of refs) {
      if (a.epoch !== epoch || (h.period !== undefined && h.period !== period)) continue;
      if (h.windowMs === undefined || at >= h.bucketStart!) total += h.block - h.drawn;
    }
    return total;
  };

  const expire: Allowances["expire"] = (at) => {
    let gave = false;
    for (const entry of allEntries()) {
      const a = entry.allowance;
      if (a && (a.stale || at >= a.end)) {
        retire(entry);
        gave = true;
      }
    }
    return gave;
  };

  const end: Allowances["end"] = (which) => {
    for (const entry of allEntries()) {
      if (entry.allowance?.lines.some((h) => which(h.counter))) retire(entry);
      // A grant under way read what is being ended: its allowance will admit only the call it was asked for.
      if (entry.granting && entry.shape.some((line) => which(line.counter))) entry.ends++;
    }
  };
  const endAll = () => {
    for (const entry of allEntries()) retire(entry);
  };

  // Allowances past their end give back their unused part even when no call comes.
  const sweep = setInterval(() => {
    const at = options.now();
    expire(at);
    for (const [key, list] of entries) {
      const kept = list.filter((entry) => entry.allowance || entry.granting || at - entry.usedAt <= FORGET_MS);
      if (kept.length === 0) entries.delete(key);
      else if (kept.length < list.length) entries.set(key, kept);
    }
  }, SWEEP_MS);
  sweep.unref?.();

  return {
    draw,
    request,
    granting(lines) {
      const entry = entryOf(lines);
      if (!entry?.granting) return undefined;
      entry.waiting++;
      return entry.granting;
    },
    release(lines) {
      if (byCounter.size === 0) return;
      for (const line of lines) {
        const refs = byCounter.get(keyOf(line.counter));
        if (refs) for (const allowance of [...refs.keys()]) retire(allowance.entry);
      }
    },
    start(req, done) {
      const { entry } = req;
      // Answered, its moves wait for granted() or refused(); failed, they are dropped.
      const settled: Promise<void> = done.then(answered, failed);
      function answered() {
        if (entry.granting === settled) entry.granting = undefined;
      }
      function failed() {
        answered();
        doneWith(entry);
      }
      entry.granting = settled;
      entry.grantMoves = [];
      grantsUnderWay.add(entry);
    },
    granted,
    refused,
    track,
    unused,
    expire,
    end,
    endAll,
    async stopGranting() {
      stopping = true;
      await Promise.all([...grantsUnderWay].map((entry) => entry.granting));
    },
    stop: () => clearInterval(sweep),
    counted,
  };
}

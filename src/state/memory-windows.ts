/**
 * The in-process cells of `memory.ts` (the State of one process): sliding windows as
 * rings of buckets, and period slots. Handles (`window`, `daySlot`) are the same object
 * for the same key, so the in-memory State resolves a counter once and keeps it.
 */
export interface Counters {
  /** The series `key` counted over `windowMs`: the same handle for the same key and window. */
  window(key: string, windowMs: number): Window;
  /** Adds `amount` to series `key` at time `now`. */
  add(key: string, amount: number, now: number, windowMs: number): void;
  /** Sum of series `key` over the last `windowMs` before `now`. */
  sum(key: string, now: number, windowMs: number): number;
  /**
   * Milliseconds until the window's sum drops below `limit` as old buckets slide out
   * (0 when it already is): the Retry-After of a refused request.
   */
  retryAfterMs(key: string, now: number, windowMs: number, limit: number): number;
  /** Empties series `key` (handles stay valid). */
  clear(key: string): void;
  /** The slot of a quota that resets with a period (a business day or month): the same object for the same key. */
  daySlot(key: string): DaySlot;
}

/** One sliding-window series. */
export interface Window {
  add(amount: number, now: number): void;
  /**
   * The total at `now`. `later`: also what was counted at moments after `now` (an
   * admission whose clock reading is older than another's already counted must see it).
   */
  sum(now: number, later?: boolean): number;
  retryAfterMs(now: number, limit: number, later?: boolean): number;
  /** Milliseconds until the oldest amount counting at `now` slides out (0 when none counts). */
  resetMs(now: number, later?: boolean): number;
}

/** A period total: `value` counts for `day` (a `YYYY-MM-DD` or `YYYY-MM`), nothing for any other. */
export interface DaySlot {
  day: string | undefined;
  value: number;
}

/**
 * Buckets per window: events are grouped in steps of windowMs/60 (1 s for a minute,
 * 1 min for an hour), and a bucket counts until its newest event is a full window old.
 * So an event never counts for longer than the window (a refusal's Retry-After is at
 * most the window: 60 s for a minute), and older events of the same bucket may count up
 * to one step past their time: limits err on the side of refusing, by at most 1/60 of
 * the window. Memory is fixed per counter.
 */
const BUCKETS = 60;
/** A window's bucket: windowMs/60, at least 1 ms (the Redis windows' Lua computes the same). */
export const bucketWidth = (windowMs: number): number => Math.max(1, Math.ceil(windowMs / BUCKETS));

/** A window of 60 steps overlaps 61 buckets when `now` is not on a bucket edge. */
const SLOTS = BUCKETS + 1;

/**
 * A ring of buckets with a running total. Moving to a newer bucket empties the slots
 * it passes (subtracting them from the total), so a sum at the newest time is a read or
 * two, not a loop over the buckets: the request path checks up to a dozen windows per
 * call. An amount may be added to an earlier bucket still in the ring (a token
 * reservation settled to its real count is corrected where it was made).
 */
class RingWindow implements Window {
  readonly width: number;
  private readonly starts = new Float64Array(SLOTS).fill(-Infinity);
  /** Time of each bucket's newest event: the bucket counts until this is a window old. */
  private readonly latest = new Float64Array(SLOTS).fill(-Infinity);
  private readonly amounts = new Float64Array(SLOTS);
  /** Start of the newest bucket; every slot holds one of the 61 buckets up to it. */
  private head = -Infinity;
  /** Sum of all slots. */
  private total = 0;
  /** Whether the ring spans exactly the window, so that the running total less the oldest bucket is the window's sum. */
  private readonly exact: boolean;

  constructor(readonly windowMs: number) {
    this.width = bucketWidth(windowMs);
    this.exact = this.width * BUCKETS === windowMs;
  }

  /** Moves the head to `now`'s bucket when that is newer. */
  private advance(now: number): void {
    const start = Math.floor(now / this.width) * this.width;
    if (start <= this.head) return;
    const steps = this.head === -Infinity ? SLOTS : Math.min(SLOTS, Math.round((start - this.head) / this.width));
    for (let k = 0; k < steps; k++) {
      const s = start - k * this.width;
      const slot = Math.floor(s / this.width) % SLOTS;
      this.total -= this.amounts[slot]!;
      this.amounts[slot] = 0;
      this.starts[slot] = s;
      this.latest[slot] = -Infinity;
    }
    this.head = start;
  }

  /** Whether slot `i` holds events inside the window that ends at `now`. */
  private counts(i: number, now: number, later = false): boolean {
    return (later || this.starts[i]! <= now) && this.latest[i]! > now - this.windowMs;
  }

  add(amount: number, now: number): void {
    this.advance(now);
    const start = Math.floor(now / this.width) * this.width;
    const slot = Math.floor(now / this.width) % SLOTS;
    // Older than the ring (a clock step back, or a reservation made over a window ago):
    // it could not count any more anyway.
    if (this.starts[slot] !== start) return;
    this.amounts[slot]! += amount;
    this.total += amount;
    if (amount > 0 && now > this.latest[slot]!) this.latest[slot] = now;
  }

  sum(now: number, later = false): number {
    // Within the newest bucket the ring spans the window plus the oldest bucket, which
    // counts only while its newest event is younger than a window. A sum never moves
    // the ring, so asking about an earlier moment afterwards still sees its buckets.
    if (this.exact && now >= this.head && now < this.head + this.width) {
      const oldest = Math.floor((this.head - BUCKETS * this.width) / this.width) % SLOTS;
      return this.counts(oldest, now, later) ? this.total : this.total - this.amounts[oldest]!;
    }
    let total = 0;
    for (let i = 0; i < SLOTS; i++) if (this.counts(i, now, later)) total += this.amounts[i]!;
    return total;
  }

  retryAfterMs(now: number, limit: number, later = false): number {
    const live: Array<[number, number]> = [];
    let total = 0;
    for (let i = 0; i < SLOTS; i++) {
      if (this.counts(i, now, later)) {
        live.push([this.latest[i]!, this.amounts[i]!]);
        total += this.amounts[i]!;
      }
    }
    if (total < limit) return 0;
    live.sort((a, b) => a[0] - b[0]);
    for (const [latest, amount] of live) {
      total -= amount;
      // This bucket stops counting once its newest event is a full window ago.
      if (total < limit) return Math.max(0, latest + this.windowMs - now);
    }
    return this.windowMs;
  }

  resetMs(now: number, later = false): number {
    let oldest = Infinity;
    for (let i = 0; i < SLOTS; i++) if (this.amounts[i]! !== 0 && this.counts(i, now, later) && this.latest[i]! < oldest) oldest = this.latest[i]!;
    return oldest === Infinity ? 0 : Math.max(0, oldest + this.windowMs - now);
  }

  clear(): void {
    this.starts.fill(-Infinity);
    this.latest.fill(-Infinity);
    this.amounts.fill(0);
    this.head = -Infinity;
    this.total = 0;
  }
}

export function createMemoryCounters(): Counters {
  const series = new Map<string, RingWindow>();
  const days = new Map<string, DaySlot>();

  const window = (key: string, windowMs: number): RingWindow => {
    let s = series.get(key);
    if (!s || s.windowMs !== windowMs) {
      s = new RingWindow(windowMs);
      series.set(key, s);
    }
    return s;
  };
  const daySlot = (key: string): DaySlot => {
    let slot = days.get(key);
    if (!slot) {
      slot = { day: undefined, value: 0 };
      days.set(key, slot);
    }
    return slot;
  };

  return {
    window,
    add(key, amount, now, windowMs) {
      window(key, windowMs).add(amount, now);
    },
    sum(key, now, windowMs) {
      const s = series.get(key);
      return s && s.windowMs === windowMs ? s.sum(now) : 0;
    },
    retryAfterMs(key, now, windowMs, limit) {
      const s = series.get(key);
      return s && s.windowMs === windowMs ? s.retryAfterMs(now, limit) : 0;
    },
    clear(key) {
      series.get(key)?.clear();
    },
    daySlot,
  };
}

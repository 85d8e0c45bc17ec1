/**
 * The one place counting over time happens: rate windows, token windows,
 * switch-over error counts. In-process now; the interface is the seam for a shared
 * store (e.g. Redis) when the router runs as several processes.
 *
 * Callers on the request path hold handles (`window`, `daySlot`) resolved once per
 * account and model, so a call costs no string keys and no map lookups; the
 * string-keyed methods serve occasional callers (sign-up limits, switch-over).
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
  sum(now: number): number;
  retryAfterMs(now: number, limit: number): number;
}

/** A period total: `value` counts for `day` (a `YYYY-MM-DD` or `YYYY-MM`), nothing for any other. */
export interface DaySlot {
  day: string | undefined;
  value: number;
}

/**
 * Buckets per window: the window slides in steps of windowMs/60 (1 s for a minute,
 * 1 min for an hour). A bucket counts while any part of it lies inside the window,
 * so a sum may include events up to one step older than the window: limits err on
 * the side of refusing, by at most 1/60 of the window. Memory is fixed per counter.
 */
const BUCKETS = 60;
/** A window of 60 steps overlaps 61 buckets when `now` is not on a bucket edge. */
const SLOTS = BUCKETS + 1;

/**
 * A ring of buckets with a running total. Moving to a newer bucket empties the slots
 * it passes (subtracting them from the total), so a sum at the newest time is one
 * read, not a loop over the buckets: the request path checks up to a dozen windows
 * per call.
 */
class RingWindow implements Window {
  readonly width: number;
  private readonly starts = new Float64Array(SLOTS).fill(-Infinity);
  private readonly amounts = new Float64Array(SLOTS);
  /** Start of the newest bucket; every slot holds one of the 61 buckets up to it. */
  private head = -Infinity;
  /** Sum of all slots. */
  private total = 0;
  /** Whether the ring spans exactly the window, so that the running total is the window's sum. */
  private readonly exact: boolean;

  constructor(readonly windowMs: number) {
    this.width = Math.max(1, Math.ceil(windowMs / BUCKETS));
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
    }
    this.head = start;
  }

  add(amount: number, now: number): void {
    this.advance(now);
    const start = Math.floor(now / this.width) * this.width;
    const slot = Math.floor(now / this.width) % SLOTS;
    // Older than the ring (a clock step back): it could not count any more anyway.
    if (this.starts[slot] !== start) return;
    this.amounts[slot]! += amount;
    this.total += amount;
  }

  sum(now: number): number {
    // Within the newest bucket the running total is the window's sum. A sum never moves
    // the ring, so asking about an earlier moment afterwards still sees its buckets.
    if (this.exact && now >= this.head && now < this.head + this.width) return this.total;
    const oldest = now - this.windowMs;
    let total = 0;
    for (let i = 0; i < SLOTS; i++) {
      // A bucket counts while any part of it lies inside the window.
      if (this.starts[i]! + this.width > oldest && this.starts[i]! <= now) total += this.amounts[i]!;
    }
    return total;
  }

  retryAfterMs(now: number, limit: number): number {
    const oldest = now - this.windowMs;
    const live: Array<[number, number]> = [];
    let total = 0;
    for (let i = 0; i < SLOTS; i++) {
      if (this.starts[i]! + this.width > oldest && this.starts[i]! <= now) {
        live.push([this.starts[i]!, this.amounts[i]!]);
        total += this.amounts[i]!;
      }
    }
    if (total < limit) return 0;
    live.sort((a, b) => a[0] - b[0]);
    for (const [start, amount] of live) {
      total -= amount;
      // This bucket stops counting once its end is a full window ago.
      if (total < limit) return Math.max(0, start + this.width + this.windowMs - now);
    }
    return this.windowMs;
  }

  clear(): void {
    this.starts.fill(-Infinity);
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

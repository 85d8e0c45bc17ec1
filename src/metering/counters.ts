/**
 * The one place counting over time happens: rate windows, token windows,
 * switch-over error counts. In-process now; the interface is the seam for a shared
 * store (e.g. Redis) when the router runs as several processes.
 */
export interface Counters {
  /** Adds `amount` to series `key` at time `now`. */
  add(key: string, amount: number, now: number, windowMs: number): void;
  /** Sum of series `key` over the last `windowMs` before `now`. */
  sum(key: string, now: number, windowMs: number): number;
  /**
   * Milliseconds until the window's sum drops below `limit` as old buckets slide out
   * (0 when it already is): the Retry-After of a refused request.
   */
  retryAfterMs(key: string, now: number, windowMs: number, limit: number): number;
  clear(key: string): void;
  /** A quota that resets with the business date: the count of `key` on `day`. */
  daily(key: string, day: string): number;
  addDaily(key: string, day: string, amount: number): void;
  /** Whether `key` already has a value for `day` (else the caller may seed it from the database). */
  hasDaily(key: string, day: string): boolean;
}

/**
 * Buckets per window: the window slides in steps of windowMs/60 (1 s for a minute,
 * 1 min for an hour). A bucket counts while any part of it lies inside the window,
 * so a sum may include events up to one step older than the window: limits err on
 * the side of refusing, by at most 1/60 of the window. Memory is fixed per counter.
 */
const BUCKETS = 60;

interface Series {
  width: number;
  /** Bucket start times and amounts, in a ring. */
  starts: Float64Array;
  amounts: Float64Array;
}

export function createMemoryCounters(): Counters {
  const series = new Map<string, Series>();
  const days = new Map<string, { day: string; value: number }>();

  const get = (key: string, windowMs: number): Series => {
    let s = series.get(key);
    const width = Math.max(1, Math.ceil(windowMs / BUCKETS));
    if (!s || s.width !== width) {
      s = { width, starts: new Float64Array(BUCKETS).fill(-Infinity), amounts: new Float64Array(BUCKETS) };
      series.set(key, s);
    }
    return s;
  };

  return {
    add(key, amount, now, windowMs) {
      const s = get(key, windowMs);
      const start = Math.floor(now / s.width) * s.width;
      const slot = Math.floor(now / s.width) % BUCKETS;
      if (s.starts[slot] !== start) {
        s.starts[slot] = start;
        s.amounts[slot] = 0;
      }
      s.amounts[slot]! += amount;
    },
    sum(key, now, windowMs) {
      const s = series.get(key);
      if (!s) return 0;
      const oldest = now - windowMs;
      let total = 0;
      for (let i = 0; i < BUCKETS; i++) {
        // A bucket counts while any part of it lies inside the window.
        if (s.starts[i]! + s.width > oldest && s.starts[i]! <= now) total += s.amounts[i]!;
      }
      return total;
    },
    retryAfterMs(key, now, windowMs, limit) {
      const s = series.get(key);
      if (!s) return 0;
      const oldest = now - windowMs;
      const live: Array<[number, number]> = [];
      let total = 0;
      for (let i = 0; i < BUCKETS; i++) {
        if (s.starts[i]! + s.width > oldest && s.starts[i]! <= now) {
          live.push([s.starts[i]!, s.amounts[i]!]);
          total += s.amounts[i]!;
        }
      }
      if (total < limit) return 0;
      live.sort((a, b) => a[0] - b[0]);
      for (const [start, amount] of live) {
        total -= amount;
        // This bucket stops counting once its end is a full window ago.
        if (total < limit) return Math.max(0, start + s.width + windowMs - now);
      }
      return windowMs;
    },
    clear(key) {
      series.delete(key);
    },
    daily(key, day) {
      const entry = days.get(key);
      return entry && entry.day === day ? entry.value : 0;
    },
    addDaily(key, day, amount) {
      const entry = days.get(key);
      if (entry && entry.day === day) entry.value += amount;
      else days.set(key, { day, value: amount });
    },
    hasDaily(key, day) {
      return days.get(key)?.day === day;
    },
  };
}

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
  clear(key: string): void;
}

/** Buckets per window: the window slides in steps of windowMs/60 (1 s for a minute). */
const BUCKETS = 60;

interface Series {
  width: number;
  /** Bucket start times and amounts, in a ring. */
  starts: Float64Array;
  amounts: Float64Array;
}

export function createMemoryCounters(): Counters {
  const series = new Map<string, Series>();

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
    clear(key) {
      series.delete(key);
    },
  };
}

import { describe, expect, test } from "bun:test";
import { createMemoryCounters } from "../../src/state/memory-windows.ts";

/** A whole second, so bucket edges (1 s for a one-minute window) fall on round offsets. */
const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe("memory counters", () => {
  test("an unknown series sums to zero", () => {
    expect(createMemoryCounters().sum("nothing", T0, MINUTE)).toBe(0);
  });

  test("amounts add up within the window", () => {
    const counters = createMemoryCounters();
    counters.add("k", 1, T0, MINUTE);
    counters.add("k", 2.5, T0 + 10, MINUTE);
    counters.add("k", 3, T0 + 30_000, MINUTE);
    expect(counters.sum("k", T0 + 30_000, MINUTE)).toBe(6.5);
  });

  test("the window slides across bucket boundaries", () => {
    const counters = createMemoryCounters();
    // Two amounts one millisecond apart, in neighbouring one-second buckets.
    counters.add("k", 1, T0 + 999, MINUTE);
    counters.add("k", 10, T0 + 1000, MINUTE);
    expect(counters.sum("k", T0 + 1000, MINUTE)).toBe(11);
    expect(counters.sum("k", T0 + 59_999, MINUTE)).toBe(11);
    // Each bucket leaves the window one minute after its newest event.
    expect(counters.sum("k", T0 + 999 + MINUTE - 1, MINUTE)).toBe(11);
    expect(counters.sum("k", T0 + 999 + MINUTE, MINUTE)).toBe(10);
    expect(counters.sum("k", T0 + 1000 + MINUTE, MINUTE)).toBe(0);
  });

  test("an amount counts for exactly the window after it was added, wherever it falls in its bucket", () => {
    for (let offset = 0; offset < 5000; offset += 137) {
      const c = createMemoryCounters();
      c.add("k", 1, T0 + offset, MINUTE);
      expect(c.sum("k", T0 + offset + MINUTE - 1, MINUTE)).toBe(1);
      expect(c.sum("k", T0 + offset + MINUTE, MINUTE)).toBe(0);
      // So a refusal right after it never says to wait longer than the window.
      expect(c.retryAfterMs("k", T0 + offset, MINUTE, 1)).toBeLessThanOrEqual(MINUTE);
      expect(c.retryAfterMs("k", T0 + offset, MINUTE, 1)).toBe(MINUTE);
    }
  });

  test("older events of a bucket count until its newest one leaves: limits err on refusing", () => {
    const c = createMemoryCounters();
    c.add("k", 1, T0 + 100, MINUTE);
    c.add("k", 1, T0 + 900, MINUTE);
    expect(c.sum("k", T0 + 100 + MINUTE, MINUTE)).toBe(2);
    expect(c.sum("k", T0 + 900 + MINUTE, MINUTE)).toBe(0);
    expect(c.retryAfterMs("k", T0 + 900, MINUTE, 1)).toBe(MINUTE);
  });

  test("an amount added to an earlier bucket still in the ring corrects it (a settled reservation)", () => {
    const c = createMemoryCounters();
    c.add("k", 500, T0 + 1000, MINUTE);
    c.add("k", 1, T0 + 20_000, MINUTE);
    c.add("k", -400, T0 + 1000, MINUTE);
    expect(c.sum("k", T0 + 20_000, MINUTE)).toBe(101);
    expect(c.sum("k", T0 + 1000 + MINUTE, MINUTE)).toBe(1);
    // A correction for a bucket already out of the ring changes nothing.
    c.add("k", 7, T0 + 3 * MINUTE, MINUTE);
    c.add("k", -5, T0 + 1000, MINUTE);
    expect(c.sum("k", T0 + 3 * MINUTE, MINUTE)).toBe(7);
  });

  test("a steady stream over several minutes keeps one window's worth (ring reuse)", () => {
    const counters = createMemoryCounters();
    for (let i = 0; i < 180; i++) {
      counters.add("k", 1, T0 + i * 1000, MINUTE);
      // The events of the last minute: the current one and the 59 before it.
      if (i >= 60) expect(counters.sum("k", T0 + i * 1000, MINUTE)).toBe(60);
    }
    expect(counters.sum("k", T0 + 179_500, MINUTE)).toBe(60);
    expect(counters.sum("k", T0 + 180_000, MINUTE)).toBe(59);
    expect(counters.sum("k", T0 + 179_000 + MINUTE, MINUTE)).toBe(0);
  });

  test("a gap longer than the window forgets old buckets that share a slot with new ones", () => {
    const counters = createMemoryCounters();
    counters.add("k", 5, T0, MINUTE);
    // Exactly one ring (61 buckets) later: same slot, a new bucket.
    counters.add("k", 1, T0 + MINUTE + 1000, MINUTE);
    expect(counters.sum("k", T0 + MINUTE + 1000, MINUTE)).toBe(1);
    counters.add("k", 7, T0 + 10 * MINUTE + 3000, MINUTE);
    expect(counters.sum("k", T0 + 10 * MINUTE + 3000, MINUTE)).toBe(7);
  });

  test("amounts in the future of `now` do not count", () => {
    const counters = createMemoryCounters();
    counters.add("k", 4, T0 + 10_000, MINUTE);
    expect(counters.sum("k", T0 + 5000, MINUTE)).toBe(0);
  });

  test("windows of different lengths live side by side on different keys", () => {
    const counters = createMemoryCounters();
    counters.add("rpm", 1, T0, MINUTE);
    counters.add("tpd", 500, T0, DAY);
    counters.add("tpd", 250, T0 + 12 * HOUR, DAY);
    counters.add("rpm", 1, T0 + 30_000, MINUTE);

    expect(counters.sum("rpm", T0 + 30_000, MINUTE)).toBe(2);
    expect(counters.sum("tpd", T0 + 30_000, DAY)).toBe(500);

    expect(counters.sum("rpm", T0 + 5 * MINUTE, MINUTE)).toBe(0);
    expect(counters.sum("tpd", T0 + 5 * MINUTE, DAY)).toBe(500);
    expect(counters.sum("tpd", T0 + 23 * HOUR, DAY)).toBe(750);
    // The day window's buckets are 24 minutes wide: the first amount is gone a day and a bucket later.
    expect(counters.sum("tpd", T0 + DAY + HOUR, DAY)).toBe(250);
    expect(counters.sum("tpd", T0 + 12 * HOUR + DAY + HOUR, DAY)).toBe(0);
  });

  test("a window shorter than the bucket count still works (one-millisecond buckets)", () => {
    const counters = createMemoryCounters();
    counters.add("k", 1, T0, 10);
    counters.add("k", 1, T0 + 5, 10);
    expect(counters.sum("k", T0 + 9, 10)).toBe(2);
    expect(counters.sum("k", T0 + 12, 10)).toBe(1);
    expect(counters.sum("k", T0 + 20, 10)).toBe(0);
  });

  test("clear forgets one series only", () => {
    const counters = createMemoryCounters();
    counters.add("a", 1, T0, MINUTE);
    counters.add("b", 2, T0, MINUTE);
    counters.clear("a");
    expect(counters.sum("a", T0, MINUTE)).toBe(0);
    expect(counters.sum("b", T0, MINUTE)).toBe(2);
    counters.add("a", 3, T0, MINUTE);
    expect(counters.sum("a", T0, MINUTE)).toBe(3);
  });
});

import { expect, test } from "bun:test";
import { createClock, createManualClock, msUntilNextBusinessDay } from "../../src/core/clock.ts";

test("the business date follows the configured zone, not UTC", () => {
  const instant = Date.UTC(2026, 0, 1, 23, 30); // 23:30 UTC on Jan 1
  expect(createClock("UTC", () => instant).businessDate()).toBe("2026-01-01");
  expect(createClock("Asia/Shanghai", () => instant).businessDate()).toBe("2026-01-02");
  expect(createClock("America/Los_Angeles", () => instant).businessDate()).toBe("2026-01-01");
  expect(createClock("Asia/Shanghai", () => instant).businessMonth()).toBe("2026-01");
});

test("a manual clock moves only when told, and the date follows it", () => {
  const clock = createManualClock(Date.UTC(2026, 1, 28, 23, 59, 59), "UTC");
  expect(clock.businessDate()).toBe("2026-02-28");
  clock.advance(1000);
  expect(clock.businessDate()).toBe("2026-03-01");
});

/** The end of `at`'s business day found the slow way: forward by minutes, then seconds, then milliseconds, to the first moment whose date differs. */
function dayEndByScan(zone: string, at: number): number {
  const clock = createClock(zone);
  const date = (moment: number) => clock.businessDate(moment);
  const today = date(at);
  let moment = at;
  for (const step of [60_000, 1_000, 1]) {
    while (date(moment + step) === today) moment += step;
  }
  return moment + 1;
}

test("time to the next business day: exact at any moment, remembered per day, right again when the clock moves back or across midnight and DST", () => {
  for (const zone of ["UTC", "Asia/Shanghai", "America/New_York", "Australia/Lord_Howe"]) {
    // 8 March 2026 (New York) and 5 April 2026 (Lord Howe, a half-hour shift) change their clocks.
    const start = Date.UTC(2026, 2, 7, 20, 0);
    const clock = createManualClock(start, zone);
    const moments = [0, 3_600_000, 7 * 3_600_000 + 1, 26 * 3_600_000, 2 * 3_600_000, 29 * 86_400_000 + 5_000, 29 * 86_400_000, 30 * 86_400_000 + 7];
    for (const offset of moments) {
      clock.set(start + offset);
      const now = clock.now();
      expect({ zone, offset, ms: msUntilNextBusinessDay(clock) }).toEqual({ zone, offset, ms: dayEndByScan(zone, now) - now });
      // Asked again a moment later on the same day: the remembered end.
      clock.set(now + 1234);
      expect(msUntilNextBusinessDay(clock)).toBe(dayEndByScan(zone, now + 1234) - (now + 1234));
    }
  }
  // The last millisecond of a day, then the first of the next.
  const clock = createManualClock(Date.UTC(2026, 5, 30, 23, 59, 59, 999), "UTC");
  expect(msUntilNextBusinessDay(clock)).toBe(1);
  clock.advance(1);
  expect(msUntilNextBusinessDay(clock)).toBe(86_400_000);
});

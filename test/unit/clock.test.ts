import { expect, test } from "bun:test";
import { createClock, createManualClock } from "../../src/core/clock.ts";

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

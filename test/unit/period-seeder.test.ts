import { expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import { createPeriodSeeder } from "../../src/metering/quotas.ts";
import type { Store } from "../../src/store/store.ts";

/** A period's total when the database cannot be read (metering/quotas.ts, createPeriodSeeder). */

const failing = { usage: { periodTotal: async () => Promise.reject(new Error("connection refused")) } } as unknown as Store;
const seedOf = { measure: "cost", accountId: 7 } as const;

test("a day or month that began after the database last answered totals 0; one that began before cannot be known", async () => {
  const clock = createManualClock(Date.UTC(2026, 10, 27, 23, 59, 30), "UTC");
  const answeredAt = Date.UTC(2026, 10, 27, 23, 59, 0);
  const zeroes: string[] = [];
  const seeder = createPeriodSeeder(failing, { clock, answeredAt: () => answeredAt, onAssumedZero: (period) => zeroes.push(period) });
  expect(await seeder(seedOf, "2026-11-28")).toBe(0);
  expect(await seeder(seedOf, "2026-12")).toBe(0);
  await expect(seeder(seedOf, "2026-11-27")).rejects.toThrow("connection refused");
  await expect(seeder(seedOf, "2026-11")).rejects.toThrow("connection refused");
  expect(zeroes).toEqual(["2026-11-28", "2026-12"]);
});

test("without a database that was probed (the embedded file), a failed read stays a failure", async () => {
  const clock = createManualClock(Date.UTC(2026, 10, 27), "UTC");
  await expect(createPeriodSeeder(failing, { clock, answeredAt: () => undefined })(seedOf, "2026-12-01")).rejects.toThrow("connection refused");
  await expect(createPeriodSeeder(failing)(seedOf, "2026-12-01")).rejects.toThrow("connection refused");
});

test("business days follow --timezone: the database's last answer is placed in the zone's calendar", async () => {
  // 23:30 UTC on the 27th is already the 28th in Tokyo.
  const clock = createManualClock(Date.UTC(2026, 10, 27, 23, 45), "Asia/Tokyo");
  const seeder = createPeriodSeeder(failing, { clock, answeredAt: () => Date.UTC(2026, 10, 27, 23, 30) });
  await expect(seeder(seedOf, "2026-11-28")).rejects.toThrow("connection refused");
  expect(await seeder(seedOf, "2026-11-29")).toBe(0);
});

import { expect, test } from "bun:test";
import { createDependencyMonitor } from "../../src/health/dependencies.ts";

/** What /healthz, /readyz and the period seeder read of the services an instance depends on (health/dependencies.ts). */

test("status follows the last probe; answeredAt stays at the last probe that answered while one is down", async () => {
  let databaseUp = true;
  const monitor = createDependencyMonitor(
    { database: async () => (databaseUp ? "ok" : Promise.reject(new Error("down"))), redis: () => new Promise(() => {}) },
    { intervalMs: 60_000, timeoutMs: 20 },
  );
  try {
    const started = monitor.answeredAt("database")!;
    await monitor.probe();
    expect(monitor.status()).toEqual({ database: "up", redis: "down" });
    expect(monitor.allUp()).toBe(false);
    const answered = monitor.answeredAt("database")!;
    expect(answered).toBeGreaterThanOrEqual(started);
    databaseUp = false;
    await Bun.sleep(5);
    await monitor.probe();
    expect(monitor.status().database).toBe("down");
    expect(monitor.answeredAt("database")).toBe(answered);
    expect(monitor.gauges()).toEqual([
      { dependency: "database", up: 0 },
      { dependency: "redis", up: 0 },
    ]);
  } finally {
    monitor.stop();
  }
});

test("a dependency that is not probed (embedded) is never down and has no answer time", () => {
  const monitor = createDependencyMonitor({});
  expect(monitor.status()).toEqual({ database: "embedded", redis: "embedded" });
  expect(monitor.allUp()).toBe(true);
  expect(monitor.answeredAt("database")).toBeUndefined();
  monitor.stop();
});

import type { PoolKey } from "../../src/routing/pool-key.ts";

/** A provider key as the pool holds it, awake and idle, for unit tests. */
export function poolKey(overrides: Partial<PoolKey> = {}): PoolKey {
  return {
    id: 1,
    name: "",
    level: 1,
    provider: "https://upstream.test/v1",
    secret: "sk-test-0123456789abcdefghij",
    config: { provider_type: "standard" },
    noSleep: false,
    status: true,
    sleeping: false,
    sleepReason: null,
    sleepUntil: null,
    sleepCount: 0,
    inFlight: 0,
    failures: 0,
    probing: false,
    ...overrides,
  };
}

import type { PoolKey } from "../../src/routing/pool-key.ts";
import { keyFormats } from "../../src/routing/key-formats.ts";

/** A provider key as the pool holds it, awake and idle, for unit tests. */
export function poolKey(overrides: Partial<PoolKey> = {}): PoolKey {
  const provider = overrides.provider ?? "https://upstream.test/v1";
  const config = overrides.config ?? { provider_type: "standard" };
  return {
    formats: keyFormats(provider, config),
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

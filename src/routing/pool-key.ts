import type { ProviderConfig } from "./provider-config.ts";

/**
 * Why a key sleeps. `manual` and `auth` last until woken; `errors` ends after its
 * cool-down; `address` (its URL reaches an address the upstream policy refuses) lasts
 * until woken or until its URL is changed.
 */
export type SleepReason = "manual" | "auth" | "errors" | "address";

/** A Provider Key as the request path holds it: secret opened, health in memory. */
export interface PoolKey {
  readonly id: number;
  readonly name: string;
  readonly level: number;
  readonly provider: string;
  readonly secret: string;
  readonly config: ProviderConfig;
  readonly noSleep: boolean;
  readonly status: boolean;
  sleeping: boolean;
  sleepReason: SleepReason | null;
  /** End of an automatic sleep (ms); null when the sleep lasts until woken. */
  sleepUntil: number | null;
  /** Consecutive automatic sleeps: the cool-down doubles with each. */
  sleepCount: number;
  /** Calls currently using this key. */
  inFlight: number;
  /** Consecutive retryable failures since the last success. */
  failures: number;
  /** True while the single probe request after a cool-down is under way. */
  probing: boolean;
}

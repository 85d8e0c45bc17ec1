import type { ProviderConfig } from "./provider-config.ts";
import type { KeyFormats } from "./key-formats.ts";

export type { SleepReason } from "../state/state.ts";
import type { SleepReason } from "../state/state.ts";

/**
 * A Provider Key as the request path holds it: secret opened, with the health it last
 * saw in the State (the State's is the one that counts: `routing/key-pool.ts`).
 */
export interface PoolKey {
  readonly id: number;
  readonly name: string;
  readonly level: number;
  readonly provider: string;
  readonly secret: string;
  readonly config: ProviderConfig;
  /** The wire formats it speaks natively, read from `config` at reload (routing asks per call). */
  readonly formats: KeyFormats;
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

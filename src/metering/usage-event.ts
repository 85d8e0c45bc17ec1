import type { Admission } from "./admission.ts";
import type { Usage, UsageSource } from "../formats/usage.ts";
import type { LoggedCall } from "./request-log.ts";

/** What the gateway reports when a model call ends. */
export interface UsageEvent {
  requestId: string;
  accountId: number;
  endpoint: string;
  requestedModel: string | undefined;
  effectiveModel: string | undefined;
  level: number | undefined;
  keyId: number | undefined;
  status: number;
  stream: boolean;
  usage: Usage;
  source: UsageSource;
  latencyMs: number;
  /** When the call started (ms). */
  at: number;
  costNanos?: number;
  extra?: Record<string, number>;
  /** A token count (`count_tokens`): settled and seen in metrics, but not usage, so never stored. */
  notUsage?: boolean;
  /** What admission decided for the call: the meter settles it (reservations, windows, spend). */
  admission?: Admission;
  /** The call's request-log facts (attempts, time to first byte, client); absent, it leaves no request-log row. */
  logged?: LoggedCall;
}

/** Receives every completed call; metering charges it, then it is stored. */
export interface UsageSink {
  record(event: UsageEvent): void;
}

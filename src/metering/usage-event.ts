import type { Admission } from "./admission.ts";
import type { Usage, UsageSource } from "../formats/usage.ts";
import type { LoggedCall } from "./request-log.ts";
import type { NewRequestLogRow } from "../store/store.ts";

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

/** The sink that stores what metering settled (usage-recorder.ts): usage rows, request-log rows and keys' health figures. */
export interface UsageRecorder extends UsageSink {
  /**
   * A call the router refused before it went upstream (403, 400, 429, …): only its
   * request-log row, written with the next batch; no usage row, nothing charged.
   */
  refused(row: NewRequestLogRow): void;
  /** Writes everything pending now (shutdown, tests); resolves once it is stored. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is pending. */
  stop(): Promise<void>;
  /**
   * Called after each committed write of rows held in this process with the credit
   * charged per account (nano-credits) and the ledger's version after them (see
   * `CreditState.flushed`). Rows drained from a durable buffer note their charges
   * through the buffer instead (`UsageBuffer.done`).
   */
  onCharged(listener: (charged: ReadonlyMap<number, number>, version: number | undefined) => void): void;
  /** Charges of rows the database refused (usage-writer.ts): they will never reach the ledger. */
  onSetAside(listener: (charges: ReadonlyMap<number, number>) => void): void;
  /** Rows settled and not yet in the database (in this process, and in the buffer as last seen). */
  backlog(): number;
  /**
   * Of those, rows a write of this process may have stored (its commit's answer was lost):
   * only this process knows nobody released their charge, so a crash now leaves it counted
   * as unwritten (a clean stop hands them over flagged to be released).
   */
  unsureHere(): number;
  /** Of those, the rows kept on disk while the database is away (the spool). */
  onDisk(): number;
  /**
   * What the rows a previous run left on disk (the usage spool) charge, per account, as
   * read at start: this run's State never counted them as unwritten, and their write
   * announces them like any other, so the composition root counts them first.
   */
  recoveredCharges(): ReadonlyMap<number, number>;
  /** Whether the backlog reached its bound: model calls are then refused (503 naming PostgreSQL). */
  full(): boolean;
  /** Stops the timer and writes nothing more, handing nothing back: what a killed process leaves (tests). */
  halt(): void;
  /** How many writes of provider keys' health figures this process committed: a reader's cache is stale once it moves. */
  keyHealthWrites(): number;
}

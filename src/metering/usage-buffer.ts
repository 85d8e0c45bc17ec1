import { causeMessage } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { NewUsageEventRow } from "../store/store.ts";

/** How a row goes to the buffer besides as settled: see `UsageBuffer.append`. */
export type UsageRowFlag = "copy" | "unsure";

/**
 * A durable place for settled usage rows on their way to the database, shared by every
 * instance (docs/architecture.md, "State on Redis"): a row appended here survives the
 * database being down and the process that settled it dying, and any instance writes
 * it once the database answers.
 */
export interface UsageBuffer {
  /**
   * Appends one settled row; resolves once the buffer holds it. Whoever claims a flagged
   * row checks it against the database. `copy`: the row may be in the buffer or the
   * database already (its append lost its answer), and its charge is released only if the
   * copy itself is written. `unsure`: a copy the process `storedBy` (a usage writer's id)
   * may have stored (a commit whose answer was lost), and nobody released its charge:
   * found stored under that process's mark, it is released.
   */
  append(row: NewUsageEventRow, flag?: UsageRowFlag, storedBy?: string): Promise<void>;
  /**
   * Claims rows for this process to write (at most `max` new ones). `retried` rows come
   * from a claim that was not finished (this process's write failed, or its writer died)
   * and may already be in the database. `copy` rows were sent again after the buffer may
   * have lost them (they may be in the database, or earlier in the buffer): their charge
   * counts only when the copy itself is written; an `unheld` copy (sent again after the
   * buffer lost its data, its charge with it) releases nothing even then. `waiting` is
   * what is left in the buffer after; `elsewhere`, what other processes' claims hold
   * (the buffer is shared: other instances claim rows this one appended).
   */
  claim(max: number): Promise<{
    rows: Array<NewUsageEventRow & { retried?: boolean; copy?: boolean; unheld?: boolean; storedBy?: string }>;
    waiting: number;
    elsewhere?: number;
    /** The claim's id: its write notes what it released under it (`usage_claim_writes`). */
    claim?: string;
    /** Whether the claim was made before (a write of it failed, or its writer died): an earlier write of it may have committed. */
    retry?: boolean;
  }>;
  /**
   * The claimed rows are in the database: drops the claim and notes their charges
   * (nano-credits per account, written at ledger `version`: see `CreditState.flushed`) in one step.
   */
  done(charged: ReadonlyMap<number, number>, version: number | undefined): Promise<void>;
  /** Hands an unfinished claim back to the buffer for other processes (a clean stop). */
  release(): Promise<void>;
}

/**
 * Hands rows this process holds to the buffer as copies (Redis may hold them already:
 * their append's answer may have been lost), each sent twice at most (the first command
 * after a dropped connection fails, the next one connects again; a copy sent twice is
 * written once); `unsure` ones, those `storedBy` names a process that may have stored.
 * Resolves with the rows the buffer refused.
 */
export async function handOver(buffer: UsageBuffer, rows: readonly NewUsageEventRow[], storedBy: (row: NewUsageEventRow) => string | undefined = () => undefined): Promise<NewUsageEventRow[]> {
  const refused: NewUsageEventRow[] = [];
  for (const row of rows) {
    const writer = storedBy(row);
    const flag: UsageRowFlag = writer === undefined ? "copy" : "unsure";
    try {
      await buffer.append(row, flag, writer);
    } catch {
      try {
        await buffer.append(row, flag, writer);
      } catch {
        refused.push(row);
      }
    }
  }
  return refused;
}

/**
 * At a clean stop, what this process holds goes to the buffer for the others, at once:
 * - its unfinished claim (`claimed` rows), unless a write of it may have committed
 *   (`leave`): another instance then takes the claim over once this one's lease expires,
 *   and finds the note of what that write released;
 * - the rows whose append failed and the database refused too (Redis and the database both
 *   away for a moment), as copies (Redis may hold them already). A row a write of this
 *   process may have stored (`storedBy` gives this process's writer id: its commit's
 *   answer was lost) goes flagged `unsure`: found stored under that writer's mark by
 *   whoever claims it, its charge is released there, as nobody else did. An error names
 *   those the buffer refused too (they are lost with the process).
 */
/** What a log line says of usage rows a stop loses: how many, their cost, the first ids. */
export const rowsLost = (rows: readonly NewUsageEventRow[]) => ({
  rows: rows.length,
  cost: rows.reduce((sum, row) => sum + (row.costNanos ?? 0), 0),
  first: rows.slice(0, 20).map((row) => row.requestId).join(","),
});

export async function handBackBeforeStop(
  buffer: UsageBuffer,
  held: { claimed: number; leave: boolean; rows: readonly NewUsageEventRow[] },
  log: Logger,
  storedBy: (row: NewUsageEventRow) => string | undefined = () => undefined,
): Promise<void> {
  if (held.claimed > 0 && held.leave) {
    log.warn("usage rows whose write may have committed are left in this instance's claim: another instance takes them over once its lease expires", { rows: held.claimed });
  } else if (held.claimed > 0) {
    await buffer.release().catch((error: unknown) => log.warn("unwritten usage rows could not be handed back; another instance takes them once this one's lease expires", { error: causeMessage(error) }));
  }
  if (held.rows.length === 0) return;
  const lost = await handOver(buffer, held.rows, storedBy);
  if (lost.length === 0) return;
  log.error("usage rows could not be written nor handed to Redis before stopping: they are lost", rowsLost(lost));
}

import type { Logger } from "../core/log.ts";
import type { NewUsageEventRow } from "../store/store.ts";

/**
 * A durable place for settled usage rows on their way to the database, shared by every
 * instance (docs/architecture.md, "State on Redis"): a row appended here survives the
 * database being down and the process that settled it dying, and any instance writes
 * it once the database answers.
 */
export interface UsageBuffer {
  /**
   * Appends one settled row; resolves once the buffer holds it. `copy`: the row may be
   * in the buffer or the database already (its append lost its answer): whoever claims it
   * checks it, and its charge counts only if the copy itself is written.
   */
  append(row: NewUsageEventRow, copy?: boolean): Promise<void>;
  /**
   * Claims rows for this process to write (at most `max` new ones). `retried` rows come
   * from a claim that was not finished (this process's write failed, or its writer died)
   * and may already be in the database. `copy` rows were sent again after the buffer may
   * have lost them (they may be in the database, or earlier in the buffer): their charge
   * counts only when the copy itself is written. `waiting` is what is left in the buffer after.
   */
  claim(max: number): Promise<{ rows: Array<NewUsageEventRow & { retried?: boolean; copy?: boolean }>; waiting: number }>;
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
 * written once). Resolves with the rows the buffer refused.
 */
export async function handOver(buffer: UsageBuffer, rows: readonly NewUsageEventRow[]): Promise<NewUsageEventRow[]> {
  const refused: NewUsageEventRow[] = [];
  for (const row of rows) {
    try {
      await buffer.append(row, true);
    } catch {
      try {
        await buffer.append(row, true);
      } catch {
        refused.push(row);
      }
    }
  }
  return refused;
}

/** At a clean stop: the rows the database refused go to the buffer; an error names those it refused too (they are lost with the process). */
export async function handOverBeforeStop(buffer: UsageBuffer, rows: readonly NewUsageEventRow[], log: Logger): Promise<void> {
  const lost = await handOver(buffer, rows);
  if (lost.length === 0) return;
  log.error("usage rows could not be written nor handed to Redis before stopping: they are lost", {
    rows: lost.length,
    cost: lost.reduce((sum, row) => sum + (row.costNanos ?? 0), 0),
    first: lost.slice(0, 20).map((row) => row.requestId).join(","),
  });
}

import type { NewUsageEventRow } from "../store/store.ts";

/**
 * Rows that may be in the database already, so their next write is checked against it
 * (usage-writer.ts, `settled`):
 * - rows a previous run left in the usage spool: it may have written them and died before
 *   emptying the file. They count as copies: found stored, their charge was released by
 *   the run that wrote them;
 * - rows whose last write failed: PostgreSQL may have committed it without its answer
 *   arriving (the connection dropped during COMMIT). Found stored, their charge is
 *   released now, as nobody released it;
 * - rows whose append to the durable buffer failed, written from this process instead:
 *   Redis may have taken the row and lost only its answer, and then whichever process
 *   claims it writes it and releases its charge. They count as copies, like the spool's.
 */
export class UnsureRows {
  private readonly recovered: Set<NewUsageEventRow>;
  private readonly failed = new Set<NewUsageEventRow>();

  constructor(recovered: Iterable<NewUsageEventRow>) {
    this.recovered = new Set(recovered);
  }

  /** How to write a batch: checked when one of its rows may be stored, with the copies among them. */
  plan(rows: readonly NewUsageEventRow[]): { check: boolean; copies?: ReadonlySet<NewUsageEventRow> } {
    if (this.recovered.size === 0 && this.failed.size === 0) return { check: false };
    const copies = new Set(rows.filter((row) => this.recovered.has(row)));
    return { check: copies.size > 0 || rows.some((row) => this.failed.has(row)), copies };
  }

  /** These rows may also be in the durable buffer (their append's answer was lost): another process may write them. */
  mayBeQueued(rows: readonly NewUsageEventRow[]): void {
    for (const row of rows) this.recovered.add(row);
  }

  /** The write of these rows failed: it may have been committed anyway. */
  writeFailed(rows: readonly NewUsageEventRow[]): void {
    for (const row of rows) this.failed.add(row);
  }

  /** These rows are in the database now (or set aside). */
  done(rows: readonly NewUsageEventRow[]): void {
    if (this.recovered.size > 0) for (const row of rows) this.recovered.delete(row);
    if (this.failed.size > 0) for (const row of rows) this.failed.delete(row);
  }
}

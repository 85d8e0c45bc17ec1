/**
 * The claim of usage rows this process holds from the durable buffer (Redis), and what a
 * clean stop must do with it (usage-recorder.ts): hand its rows back, or leave it, with
 * its id, to be taken over once this process's lease expires, so that its note (what a
 * write of it released, `usage_claim_writes`) is found by whoever writes it next.
 */
export class ClaimInHand {
  /** Rows of the claim not written yet (they wait in the buffer). */
  rows = 0;
  id: string | undefined;
  /** The claim's rows were written and the claim not cleared yet: its note is in the database. */
  written = false;
  /** The id of the last claim this process made itself (a retry of another id was taken over from a dead writer). */
  private madeHere: string | undefined;
  /** Taken over from a writer that died: that writer may have written it, and its note names it. */
  private takenOver = false;

  /** What a claim handed this process: nothing, when a claim it held was lost (Redis restarted). */
  took(batch: { claim?: string; retry?: boolean; rows: readonly unknown[] }): void {
    this.rows = batch.rows.length;
    if (batch.claim !== this.id) this.written = false;
    this.id = batch.claim;
    if (batch.retry !== true) this.madeHere = batch.claim;
    this.takenOver = batch.retry === true && batch.claim !== undefined && batch.claim !== this.madeHere;
  }

  /** Written and cleared: nothing held. */
  cleared(): void {
    this.written = false;
    this.rows = 0;
  }

  /**
   * Whether a stop leaves the claim: written and not cleared, a write of it that may have
   * committed, or taken over from a dead writer that may have written it. Handed back
   * without its id, rows that writer had stored would be found stored by a plain claim,
   * and their copies' charges never released.
   */
  mustLeave(mayHaveCommitted: (id: string) => boolean): boolean {
    return this.id !== undefined && (this.written || this.takenOver || mayHaveCommitted(this.id));
  }
}

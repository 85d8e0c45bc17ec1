/**
 * Calls whose settlement waits for their end: every call from its admission to its
 * answer (one still waiting for its upstream when the grace period cut its client is
 * read on as one whose client left), a stream, read on for its usage
 * (for at most the drain timeout) after its client left or the grace period cut it, and a
 * realtime response under way when its session's client side closed (read on to its
 * `response.done` for as long, `gateway/realtime/lifecycle.ts`). A
 * stop waits for them before its last usage write: settled after it, their rows were
 * never written, and the calls never charged.
 */
export class EndingCalls {
  private readonly ending = new Set<Promise<unknown>>();

  /** A call whose end (its outcome) is still coming; `done` once it came (no promise of its own: one per stream). */
  add(end: Promise<unknown>): void {
    this.ending.add(end);
  }
  done(end: Promise<unknown>): void {
    this.ending.delete(end);
  }

  get size(): number {
    return this.ending.size;
  }

  /** Settles once every call under way ended, or after `timeoutMs`; resolves with how many had not. */
  async ended(timeoutMs: number): Promise<number> {
    if (this.ending.size === 0) return 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    await Promise.race([Promise.allSettled([...this.ending]), expired]);
    clearTimeout(timer);
    return this.ending.size;
  }
}

/**
 * This process's usage writes under way, as a balance read sees them. A write commits
 * its charges to the ledger and only then tells the State (`credit.flushed`), which
 * subtracts them from the balance it holds. A balance read from the ledger in between
 * already holds them, and the State would subtract them a second time: the account
 * would look short by that write's charges until its balance is read again. So a read
 * waits until no write is under way, and is made again when one began meanwhile.
 */
export interface ChargeWrites {
  /** Resolves once no write is under way, or after `waitMs` (a database that hangs must not hold admissions). */
  settled(waitMs: number): Promise<void>;
  /** How many writes began so far: a read during which it moved may hold a commit not yet announced. */
  started(): number;
}

export class WritesUnderWay implements ChargeWrites {
  private active = 0;
  private count = 0;
  private waiting: Array<() => void> = [];

  /** Runs a write (its commit and its announcement) as one under way. */
  async around<T>(write: () => Promise<T>): Promise<T> {
    this.active++;
    this.count++;
    try {
      return await write();
    } finally {
      if (--this.active === 0) {
        const waiting = this.waiting;
        this.waiting = [];
        for (const wake of waiting) wake();
      }
    }
  }

  settled(waitMs: number): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      this.waiting.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  started(): number {
    return this.count;
  }
}

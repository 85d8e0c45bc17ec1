/**
 * A balance's grants that expire, kept with it so the State can take them off at their
 * expiry when the ledger cannot be read then (PostgreSQL away): exact as long as the
 * State heard of every charge written since the read, which holds while the ledger is
 * away (nothing is written to it) and otherwise through `credit.flushed`.
 */
export type Expiring = ReadonlyArray<{ readonly at: number; readonly remaining: number }>;

/**
 * The expiring grants after charges of `amount` written at `at`: the ledger draws a
 * charge from the grants unexpired then, the soonest expiry first (what is left of it
 * comes from grants without expiry, which are not tracked here).
 */
export function drawFrom(expiring: Expiring, amount: number, at: number): Expiring {
  let left = amount;
  const after: Array<{ at: number; remaining: number }> = [];
  for (const grant of expiring) {
    const used = grant.at > at ? Math.min(left, grant.remaining) : 0;
    left -= used;
    if (grant.remaining - used > 0) after.push({ at: grant.at, remaining: grant.remaining - used });
  }
  return after;
}

/** The balance once the grants that expired by `now` are gone, what still expires, and when the next does. */
export function expireBy(stored: number, expiring: Expiring, now: number): { stored: number; expiring: Expiring; staleAt: number } {
  let balance = stored;
  const left = expiring.filter((grant) => {
    if (grant.at > now) return true;
    balance -= grant.remaining;
    return false;
  });
  return { stored: balance, expiring: left, staleAt: left[0]?.at ?? Infinity };
}

import { expect, test } from "bun:test";
import { drawFrom, expireBy } from "../../src/state/expiring-credit.ts";

/** The ledger's rules for expiring grants, as the State applies them when it cannot read the ledger (state/expiring-credit.ts). */

const grants = [
  { at: 100, remaining: 30 },
  { at: 200, remaining: 50 },
];

test("a charge draws from the grants unexpired when it was written, soonest first; beyond them it is not tracked", () => {
  expect(drawFrom(grants, 40, 50)).toEqual([{ at: 200, remaining: 40 }]);
  // Written after the first expired: the second pays.
  expect(drawFrom(grants, 40, 150)).toEqual([
    { at: 100, remaining: 30 },
    { at: 200, remaining: 10 },
  ]);
  expect(drawFrom(grants, 500, 50)).toEqual([]);
});

test("at an expiry the grant's remaining leaves the balance; the next expiry is the next stale time", () => {
  expect(expireBy(1000, grants, 99)).toEqual({ stored: 1000, expiring: grants, staleAt: 100 });
  expect(expireBy(1000, grants, 100)).toEqual({ stored: 970, expiring: [{ at: 200, remaining: 50 }], staleAt: 200 });
  expect(expireBy(1000, grants, 250)).toEqual({ stored: 920, expiring: [], staleAt: Infinity });
});

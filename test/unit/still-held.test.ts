import { describe, expect, test } from "bun:test";
import { stillHeld } from "../../src/accounts/ledger.ts";

/**
 * What an account's calls hold, read before a credit change's transaction, against the
 * ledger read inside it (accounts/ledger.ts): a charge written between the two left what
 * is held for the ledger, and counts once.
 */
describe("what is still held when the transaction reads the ledger", () => {
  test("unchanged ledger: all of it", () => {
    expect(stillHeld({ amount: 300, ledger: 10_000 }, 10_000)).toBe(300);
  });

  test("a charge written since (the ledger fell by it): that much less, never below zero", () => {
    expect(stillHeld({ amount: 300, ledger: 10_000 }, 9_900)).toBe(200);
    expect(stillHeld({ amount: 300, ledger: 10_000 }, 9_000)).toBe(0);
  });

  test("credit given since (the ledger rose): all of it; nothing read: nothing held", () => {
    expect(stillHeld({ amount: 300, ledger: 10_000 }, 12_000)).toBe(300);
    expect(stillHeld(undefined, 10_000)).toBe(0);
  });
});

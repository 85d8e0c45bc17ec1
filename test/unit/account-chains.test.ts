import { describe, expect, test } from "bun:test";
import { ancestorIds, createAccountChains } from "../../src/accounts/chain.ts";
import type { AccountRow } from "../../src/store/store.ts";

const account = (id: number, path: string, dailyLimit: number | null = null): AccountRow => ({ id, path, dailyLimit }) as AccountRow;

/** Owner 1, manager 4 under it, user 9 under the manager. */
function tree() {
  const stored = new Map<number, AccountRow>([
    [1, account(1, "/1/")],
    [4, account(4, "/1/4/", 50)],
  ]);
  const reads: number[] = [];
  let down = false;
  const chains = createAccountChains(async (id) => {
    reads.push(id);
    if (down) throw new Error("connection refused");
    return stored.get(id);
  });
  const user = account(9, "/1/4/9/");
  const limits = async () => (await chains.of(user)).map((row) => row.dailyLimit);
  return { chains, stored, reads, user, limits, setDown: (value: boolean) => (down = value) };
}

describe("account chains", () => {
  test("the ancestors of a materialised path, root first", () => {
    expect(ancestorIds(account(9, "/1/4/9/"))).toEqual([1, 4]);
    expect(ancestorIds(account(1, "/1/"))).toEqual([]);
  });

  test("an account and its ancestors nearest first, read once", async () => {
    const t = tree();
    expect((await t.chains.of(t.user)).map((row) => row.id)).toEqual([9, 4, 1]);
    await t.chains.of(t.user);
    expect(t.reads.sort()).toEqual([1, 4]);
  });

  test("a change to one account reads that account again, not the others", async () => {
    const t = tree();
    await t.limits();
    t.stored.set(4, account(4, "/1/4/", 20));
    t.chains.changed(4);
    expect(await t.limits()).toEqual([null, 20, null]);
    expect(t.reads.sort()).toEqual([1, 4, 4]);
    // A change to an account outside the chain reads nothing.
    t.chains.changed(12);
    await t.limits();
    expect(t.reads).toHaveLength(3);
  });

  test("a failed read is not kept: the next call reads again", async () => {
    const t = tree();
    t.setDown(true);
    await expect(t.chains.of(t.user)).rejects.toThrow("connection refused");
    t.setDown(false);
    expect(await t.limits()).toEqual([null, 50, null]);
  });

  test("after a clear, the rows known before serve only while the store cannot be read, and are not kept", async () => {
    const t = tree();
    await t.limits();
    t.chains.clear();
    t.setDown(true);
    expect(await t.limits()).toEqual([null, 50, null]);
    const failedReads = t.reads.length;
    t.setDown(false);
    t.stored.set(4, account(4, "/1/4/", 30));
    expect(await t.limits()).toEqual([null, 30, null]);
    expect(t.reads.length).toBe(failedReads + 2);
    // A row changed since is never served from before.
    t.chains.changed(4);
    t.chains.clear();
    t.setDown(true);
    await expect(t.chains.of(t.user)).rejects.toThrow("connection refused");
  });
});

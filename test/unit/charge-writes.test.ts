import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/core/log.ts";
import { WritesUnderWay } from "../../src/metering/charge-writes.ts";
import { createBalanceLoader } from "../../src/metering/credit.ts";
import { createUsageRecorder } from "../../src/metering/usage-recorder.ts";
import { createMemoryState } from "../../src/state/memory.ts";
import { openSqliteStore } from "../../src/store/sqlite/store.ts";
import { usageEvent, withTransactions } from "../helpers/usage-events.ts";

/**
 * A balance read from the ledger while a usage write has committed its charges but not
 * yet announced them must not count those charges twice (metering/charge-writes.ts).
 */

const dir = mkdtempSync(join(tmpdir(), "router-charge-writes-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A store holding 10,000 nano-credits for account 1 whose transactions commit at once and
 * answer when the test says (a slow COMMIT round trip): `slow` is the store to write
 * through, `commitSeen` resolves on a commit, `answer()` lets its answer through.
 */
async function slowCommits(file: string) {
  const store = openSqliteStore(join(dir, file));
  await store.credit.give(1, [{ amount: 10_000, expiresAt: null }], null, Date.now());
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => (answer = resolve));
  let committed!: () => void;
  const commitSeen = new Promise<void>((resolve) => (committed = resolve));
  const slow = withTransactions(store, async (body, run) => {
    const result = await run(body);
    committed();
    await answered;
    return result;
  });
  return { store, slow, commitSeen, answer: () => answer() };
}

test("a balance read while a committed write is not yet announced waits for it: the charge counts once", async () => {
  const { store, slow, commitSeen, answer } = await slowCommits("router.db");
  const writes = new WritesUnderWay();
  const state = createMemoryState({ seed: () => 0, balance: createBalanceLoader(store, writes) }, Date.now);
  const recorder = createUsageRecorder({ store: slow, clock: createClock("UTC"), log: createLogger("error", () => {}), writes });
  recorder.onCharged((charged, version) => void state.credit.flushed(charged, version));
  const credit = { kind: "credit", accountId: 1 } as const;
  try {
    expect(await state.counts.read(credit, Date.now())).toBe(10_000);
    // A call settles for 500: held as unwritten until its row is written.
    await state.counts.adjust([{ counter: credit, release: 0, charge: 500 }]);
    recorder.record(usageEvent(0, 500));
    const flushing = recorder.flush();
    await commitSeen;
    expect(await store.credit.balance(1, Date.now())).toBe(9_500);
    // The balance is read again (a grant elsewhere, say) while the write's answer is on its way.
    const reloading = state.credit.invalidate(1);
    answer();
    await Promise.all([flushing, reloading]);
    expect(await state.counts.read(credit, Date.now())).toBe(9_500);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("a balance read elsewhere between a write's commit and its announcement counts the charge once: the ledger's version says it holds it", async () => {
  const { store, slow, commitSeen, answer } = await slowCommits("router-versions.db");
  // The reader does not wait for this writer's writes (another instance's reader).
  const state = createMemoryState({ seed: () => 0, balance: createBalanceLoader(store) }, Date.now);
  const recorder = createUsageRecorder({ store: slow, clock: createClock("UTC"), log: createLogger("error", () => {}) });
  const versions: Array<number | undefined> = [];
  recorder.onCharged((charged, version) => {
    versions.push(version);
    void state.credit.flushed(charged, version);
  });
  const credit = { kind: "credit", accountId: 1 } as const;
  try {
    expect(await state.counts.read(credit, Date.now())).toBe(10_000);
    await state.counts.adjust([{ counter: credit, release: 0, charge: 500 }]);
    recorder.record(usageEvent(0, 500));
    const flushing = recorder.flush();
    await commitSeen;
    await state.credit.invalidate(1);
    // Read after the commit: the charge is in the ledger and still held as unwritten (counted twice for now, never too little).
    expect(await state.counts.read(credit, Date.now())).toBe(9_000);
    answer();
    await flushing;
    expect(versions).toEqual([await store.usage.latestId()]);
    expect(await state.counts.read(credit, Date.now())).toBe(9_500);
    // A later write, announced after a read made before it, is taken off.
    await state.counts.adjust([{ counter: credit, release: 0, charge: 200 }]);
    recorder.record(usageEvent(1, 200));
    await recorder.flush();
    expect(await state.counts.read(credit, Date.now())).toBe(9_300);
  } finally {
    await recorder.stop();
    store.close();
  }
});

test("writes under way: settled resolves when the last ends, or after its wait; started counts every write", async () => {
  const writes = new WritesUnderWay();
  expect(writes.started()).toBe(0);
  await writes.settled(10);
  let finish!: () => void;
  const running = writes.around(() => new Promise<void>((resolve) => (finish = resolve)));
  expect(writes.started()).toBe(1);
  let settled = false;
  const waiting = writes.settled(5_000).then(() => (settled = true));
  await Bun.sleep(20);
  expect(settled).toBe(false);
  finish();
  await running;
  await waiting;
  expect(settled).toBe(true);
  // A write that hangs does not hold a reader past its wait.
  void writes.around(() => new Promise(() => {}));
  const started = Date.now();
  await writes.settled(50);
  expect(Date.now() - started).toBeLessThan(1000);
  // A failed write ends too.
  await expect(writes.around(() => Promise.reject(new Error("down")))).rejects.toThrow("down");
  expect(writes.started()).toBe(3);
});

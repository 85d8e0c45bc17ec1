import { afterAll, describe, expect, test } from "bun:test";
import { createClock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/core/log.ts";
import { createBalanceLoader } from "../../src/metering/credit.ts";
import { createUsageWriter } from "../../src/metering/usage-writer.ts";
import { usageRow } from "../../src/metering/usage-batch.ts";
import { servicesSkipped } from "../helpers/redis-server.ts";
import { postgresStores } from "../helpers/postgres-stores.ts";
import { freshPrefix, redisStates } from "../helpers/redis-state.ts";
import { usageEvent } from "../helpers/usage-events.ts";

/**
 * A balance read from the ledger into the Redis State while another instance writes
 * charges and announces them (src/state/redis/lua-credit.ts, lua.ts): the balance stored
 * must hold every charge written before it, announced with a version (noted, even when
 * Redis holds no credit hash for the account) or without one (the read is made again).
 * Found by a review of the usage rows' money path.
 */

const redis = redisStates();
const stores = postgresStores();
afterAll(async () => {
  await redis.close();
  await stores.close();
});
const freshStore = stores.fresh;
const quiet = createLogger("error", () => {});
const credit = { kind: "credit", accountId: 1 } as const;

if (!servicesSkipped)
describe("a balance read from the ledger while another instance writes charges", () => {
  /**
   * Two instances on one Redis and one database: A reads account 1's balance from the
   * ledger (the router's own loader), and its answer reaches Redis only once `gate` opens
   * (a round trip, a busy event loop); B writes a usage row and announces its charge meanwhile.
   */
  const twoInstances = async () => {
    const store = await freshStore();
    const prefix = freshPrefix();
    const real = createBalanceLoader(store);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let reads = 0;
    const a = await redis.state(
      {
        seed: () => 0,
        balance: async (accountId, now) => {
          const read = await real(accountId, now);
          reads++;
          await gate;
          return read;
        },
      },
      () => Date.now(),
      { prefix },
    );
    const b = await redis.state({ seed: () => 0, balance: createBalanceLoader(store) }, () => Date.now(), { prefix });
    const writer = createUsageWriter({ store, clock: createClock("UTC"), log: quiet });
    return { store, a, b, writer, open, reads: () => reads };
  };

  test("a write announced without a version while the read is under way: the balance is read again and holds its charge", async () => {
    const { store, a, b, writer, open, reads } = await twoInstances();
    // B's call settles (100 counted as unwritten); the account's credit hash exists.
    await b.counts.adjust([{ counter: credit, release: 0, charge: 100 }]);
    await Bun.sleep(20);
    // A needs the balance: it reads the ledger (nothing charged yet), and its answer is on its way.
    const reading = a.counts.read(credit, Date.now());
    while (reads() === 0) await Bun.sleep(5);
    // B writes the row and announces the charge without a version, as a write that cannot
    // name one does (rows written one at a time, a batch with rows found stored, a row set aside).
    const rowR = usageRow(usageEvent(1, 100), "2026-03-10");
    const written = await writer.write([rowR], [], false);
    expect(written.charged).toEqual(new Map([[1, 100]]));
    await b.credit.flushed(written.charged, undefined);
    open();
    await reading;
    // The ledger holds the charge, and nothing counts as unwritten any more.
    expect(await store.credit.balance(1, Date.now())).toBe(-100);
    expect(await b.credit.held(1)).toBe(0);
    // Every instance must see the charge once: ledger -100, nothing unwritten.
    expect(await a.counts.read(credit, Date.now())).toBe(-100);
  }, 30_000);

  test("after Redis lost the account's credit hash, a write announced with its version while the read is under way: the balance stored holds its charge", async () => {
    const { store, a, b, writer, open, reads } = await twoInstances();
    // No credit hash for the account (what a Redis restarted without its data holds, while
    // copies of rows it lost are being written): A reads the ledger, its answer on its way.
    const reading = a.counts.read(credit, Date.now());
    while (reads() === 0) await Bun.sleep(5);
    // B writes a row of the account (a copy Redis lost, say) and announces it with the ledger's version.
    const rowR = usageRow(usageEvent(2, 100), "2026-03-10");
    const written = await writer.write([rowR], [], false);
    expect(written.version).toBeGreaterThan(0);
    await b.credit.flushed(written.charged, written.version);
    open();
    await reading;
    expect(await store.credit.balance(1, Date.now())).toBe(-100);
    // The read was at a version before the write's, and the write was announced before the
    // read was stored: the announcement must be taken off (docs: "a read stored at version v takes off those after v").
    expect(await a.counts.read(credit, Date.now())).toBe(-100);
  }, 30_000);
});

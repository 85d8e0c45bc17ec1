import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/core/log.ts";
import { createUsageRecorder, type UsageRecorder } from "../../src/metering/usage-recorder.ts";
import { openUsageSpool, type UsageSpool } from "../../src/metering/usage-spool.ts";
import { openSqliteStore } from "../../src/store/sqlite/store.ts";
import { generator, seededCalls, seedsToRun } from "../helpers/seeded.ts";
import { faultyStore } from "../helpers/usage-events.ts";

/**
 * One instance on a database without Redis (rows the database does not take are kept
 * in the usage spool on disk), through database outages, commits whose answer is lost,
 * clean stops and kills, in an order a seeded generator picks. An instance is killed only
 * once every row it holds is on disk (what it holds in memory before a write failed, at
 * most a tick of calls, a crash loses by design); the next one starts from the spool. Once
 * the database is back, each call is stored once and the ledger holds each charge once.
 */

const dir = mkdtempSync(join(tmpdir(), "router-spool-faults-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

for (const seed of seedsToRun([1, 2, 3, 4, 5, 6])) {
  test(`seed ${seed}: through outages, lost commits, stops and kills, every call is stored once and charged once`, async () => {
    const random = generator(seed);
    const store = openSqliteStore(join(dir, `seed-${seed}.db`));
    const spoolFile = join(dir, `seed-${seed}.jsonl`);
    const { store: flaky, faults } = faultyStore(store);
    const log = createLogger("error", () => {});
    const start = (): { recorder: UsageRecorder; spool: UsageSpool } => {
      const spool = openUsageSpool(spoolFile, log);
      return { spool, recorder: createUsageRecorder({ store: flaky, clock: createClock("UTC"), log, spool }) };
    };
    let instance = start();
    const calls = seededCalls(random);
    let kills = 0;
    try {
      for (let step = 0; step < 250; step++) {
        const roll = random();
        if (roll < 0.5) calls.some(instance.recorder);
        else if (roll < 0.62) await instance.recorder.flush().catch(() => {});
        else if (roll < 0.67) faults.down = !faults.down;
        else if (roll < 0.69) faults.loseNextAnswer = true;
        else if (roll < 0.72) {
          // A clean stop and a new start on the same spool.
          await instance.recorder.stop();
          instance = start();
        } else if (roll < 0.76) {
          // Killed, once every row it holds is on disk: no flush, the file left as it is.
          await instance.recorder.flush().catch(() => {});
          if (instance.recorder.backlog() === instance.recorder.onDisk()) {
            instance.recorder.halt();
            instance.spool.close();
            instance = start();
            kills++;
          }
        } else await Bun.sleep(1 + Math.floor(random() * 5));
      }
      faults.down = false;
      faults.loseNextAnswer = false;
      const deadline = Date.now() + 10_000;
      for (;;) {
        await instance.recorder.flush().catch(() => {});
        if (instance.recorder.backlog() === 0) break;
        if (Date.now() > deadline) throw new Error(`rows still wait: ${instance.recorder.backlog()}`);
        await Bun.sleep(20);
      }
      const stored = (await store.usage.events(0, 100_000)).map((row) => row.requestId).sort();
      expect(stored).toEqual([...calls.recorded].sort());
      expect(await store.credit.balance(1, Date.now())).toBe(-calls.charged());
      // The seeds do kill (a run that never did would not test the spool's reading back).
      expect(kills).toBeGreaterThan(0);
    } finally {
      await instance.recorder.stop().catch(() => {});
      store.close();
    }
  }, 30_000);
}

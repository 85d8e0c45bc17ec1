import { afterAll, expect, test } from "bun:test";
import { RedisClient } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/core/log.ts";
import { createUsageRecorder, type UsageRecorder } from "../../src/metering/usage-recorder.ts";
import { createWrittenCharges, type WrittenCharges } from "../../src/metering/written-charges.ts";
import { connectRedis, type RedisConnection } from "../../src/state/redis/connection.ts";
import { createRedisUsageBuffer } from "../../src/state/redis/usage-buffer.ts";
import type { RedisState } from "../../src/state/redis/state.ts";
import { openSqliteStore } from "../../src/store/sqlite/store.ts";
import { openPostgresStore } from "../../src/store/postgres/index.ts";
import type { Store } from "../../src/store/store.ts";
import { startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { servicesSkipped } from "../helpers/redis-server.ts";
import { freshPrefix, redisStates } from "../helpers/redis-state.ts";
import { usageRowsInRedis } from "../helpers/redis-usage.ts";
import { generator, seededCalls, seedsToRun } from "../helpers/seeded.ts";
import { faultyStore } from "../helpers/usage-events.ts";

/**
 * Three instances settle calls into one Redis usage buffer and write them to one
 * database, while the database goes away and comes back (or commits and loses the
 * answer) and Redis restarts without its
 * data, and instances are stopped or killed and replaced, in an order a seeded generator picks. Once both are back and every instance
 * wrote what it holds, each call is stored once and the ledger holds each charge once
 * (docs/architecture.md, "The usage buffer"). The run stays well within the 10 s of rows
 * each instance sends again after a restart.
 */

if (!servicesSkipped) {
  const redis = redisStates();
  const dir = mkdtempSync(join(tmpdir(), "router-buffer-faults-"));
  let postgres: PostgresServer | undefined;
  afterAll(async () => {
    await redis.close();
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  /** The database the instances share: SQLite (one process's file) or PostgreSQL (the scale-out store). */
  const stores: Record<string, (seed: number) => Promise<Store>> = {
    SQLite: async (seed) => openSqliteStore(join(dir, `seed-${seed}.db`)),
    PostgreSQL: async () => {
      postgres ??= await startPostgres();
      return openPostgresStore(postgres.url(await postgres.createDatabase()));
    },
  };

  const LEASE_MS = 600;
  for (const [kind, openStore] of Object.entries(stores)) for (const seed of seedsToRun()) {
    const faults = `connections dropped, ${seed % 2 === 0 ? "instances killed and stopped" : "Redis restarted, then instances stopped"}`;
    test(`${kind}, seed ${seed}, database outages and lost commits, ${faults}: every call is stored once and charged once`, async () => {
      const random = generator(seed);
      const server = await redis.server();
      const prefix = freshPrefix();
      const store = await openStore(seed);
      const { store: flaky, faults } = faultyStore(store);
      const loaders = { seed: () => 0, balance: () => ({ balance: 1e15, staleAt: Infinity }) };
      const instances: Array<{ recorder: UsageRecorder; connection: RedisConnection; state: RedisState; charges: WrittenCharges }> = [];
      const logs: string[] = [];
      let started = 0;
      const start = async () => {
        const i = started++;
        // A short lease, so a killed instance's claim is taken over within the test.
        const state = await redis.state(loaders, () => Date.now(), { prefix, leaseMs: LEASE_MS });
        const connection = connectRedis(server.url);
        const buffer = createRedisUsageBuffer({ connection, state, prefix, log: createLogger("info", (line) => logs.push(`${i} ${line}`)) });
        const log = createLogger("info", (line) => logs.push(`${i} ${line}`));
        const recorder = createUsageRecorder({ store: flaky, clock: createClock("UTC"), log, buffer });
        // As the router wires it: charges of rows written from the instance itself are noted in Redis, again until taken.
        const charges = createWrittenCharges((charged, version) => state.credit.flushed(charged, version), log, 20);
        recorder.onCharged((charged, version) => charges.announce(charged, version));
        recorder.onSetAside((charged) => charges.announce(charged));
        return { connection, state, recorder, charges };
      };
      for (let i = 0; i < 3; i++) instances.push(await start());
      /** Once an instance stopped, Redis is not restarted again: the rows it sent lately are no longer kept anywhere to send again (by design). */
      let stoppedOne = false;
      /**
       * Odd seeds restart Redis (then, from step 150, stop instances cleanly); even seeds
       * kill and stop instances and never restart Redis: only then is nothing of a killed
       * instance's in its own memory (rows wait there only when Redis refused them), which
       * a crash loses by design. What a killed instance claimed is taken over once its lease ends.
       */
      const killing = seed % 2 === 0;
      const admin = () => new RedisClient(server.url);
      const calls = seededCalls(random);
      const credit = { kind: "credit", accountId: 1 } as const;
      /** Each call as the meter settles it: its charge counted as unwritten, then its row recorded. */
      const settling = (instance: { recorder: UsageRecorder; state: RedisState }) => ({
        record(event: Parameters<UsageRecorder["record"]>[0]) {
          void instance.state.counts.adjust([{ counter: credit, release: 0, charge: event.costNanos ?? 0 }]).catch(() => {});
          instance.recorder.record(event);
        },
      });
      let lastRestart = 0;
      try {
        for (let step = 0; step < 250; step++) {
          const roll = random();
          const at = Math.floor(random() * instances.length);
          const instance = instances[at]!;
          if (roll < 0.5) calls.some(settling(instance));
          else if (roll < 0.62) await instance.recorder.flush().catch(() => {});
          else if (roll < 0.655) faults.down = !faults.down;
          else if (roll < 0.67) faults.loseNextAnswer = true;
          else if (roll >= 0.72 && roll < 0.74 && killing) {
            // Killed once its rows reached Redis (what a crash loses before that, a few
            // milliseconds of calls, is lost by design): with the database away its claim
            // stays in Redis, not handed back, and its heartbeats stop.
            await instance.recorder.flush().catch(() => {});
            // (And once the charges of rows it wrote itself were noted in Redis, and no row it
            // holds may have been stored by a write of its own: a crash loses that knowledge.)
            // With the database away that can take long: the kill then waits for another roll.
            for (let tries = 0; tries < 20 && (instance.charges.waiting() > 0 || instance.recorder.unsureHere() > 0); tries++) {
              await Bun.sleep(5);
              await instance.recorder.flush().catch(() => {});
            }
            if (instance.charges.waiting() > 0 || instance.recorder.unsureHere() > 0) continue;
            instance.recorder.halt();
            instance.state.close();
            instance.connection.close();
            instances[at] = await start();
            stoppedOne = true;
          } else if (roll < 0.72 && roll >= 0.7 && (killing || step >= 150)) {
            // A clean stop (a deploy): what it holds goes back to Redis; another instance takes its place.
            await instance.recorder.stop();
            await instance.charges.stop();
            // Its lease ends: a claim it left (a write of it may have committed) is taken over.
            instance.state.close();
            instance.connection.close();
            instances[at] = await start();
            stoppedOne = true;
          } else if (roll < 0.7 && roll >= 0.67 && !killing && !stoppedOne && performance.now() - lastRestart > 150) {
            // Without persistence: the queue, the claims and the leases are gone.
            await server.stop();
            await server.start();
            lastRestart = performance.now();
          } else if (roll >= 0.74 && roll < 0.77) {
            // Every connection dropped, Redis keeping its data (a network blip, a proxy
            // restart), appends and claims under way: an append whose command ran and whose
            // answer was lost is written from its instance and claimed from Redis too.
            const client = admin();
            try {
              await client.send("CLIENT", ["KILL", "SKIPME", "yes", "TYPE", "normal"]);
            } finally {
              client.close();
            }
          } else await Bun.sleep(1 + Math.floor(random() * 8));
        }
        faults.down = false;
        faults.loseNextAnswer = false;
        const client = admin();
        try {
          const healed = async () => {
            for (const { recorder } of instances) await recorder.flush().catch(() => {});
            const waiting = await usageRowsInRedis(client, prefix).catch(() => -1);
            return waiting === 0 && instances.every(({ recorder, charges }) => recorder.backlog() === 0 && charges.waiting() === 0);
          };
          const deadline = Date.now() + 15_000;
          while (!(await healed())) {
            if (Date.now() > deadline) {
              const stored = new Set((await store.usage.events(0, 100_000)).map((row) => row.requestId));
              const keys = (await client.send("KEYS", [`${prefix}*`])) as string[];
              const detail = {
                waiting: await usageRowsInRedis(client, prefix).catch((error) => String(error)),
                backlogs: instances.map(({ recorder }) => recorder.backlog()),
                missing: calls.recorded.filter((id) => !stored.has(id)),
                keys,
                logs: logs.slice(-30),
              };
              throw new Error(`the rows did not all reach the database: ${JSON.stringify(detail, null, 1)}`);
            }
            await Bun.sleep(50);
          }
        } finally {
          client.close();
        }
        const stored = (await store.usage.events(0, 100_000)).map((row) => row.requestId).sort();
        expect(stored).toEqual([...calls.recorded].sort());
        expect(await store.credit.balance(1, Date.now())).toBe(-calls.charged());
        // Every charge counted as unwritten was released once its row was written: none is held for good.
        expect(await instances[0]!.state.credit.held(1)).toBe(0);
      } finally {
        for (const { recorder, connection, charges } of instances) {
          await recorder.stop().catch(() => {});
          await charges.stop();
          connection.close();
        }
        store.close();
      }
    }, 60_000);
  }
}

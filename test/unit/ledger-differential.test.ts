import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { migrateDatabase, openPostgresStore } from "../../src/store/postgres/index.ts";
import { openSqliteStore } from "../../src/store/sqlite/store.ts";
import type { NewUsageEventRow, Store } from "../../src/store/store.ts";
import { chargesOf, dailyRollups } from "../../src/metering/usage-batch.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { generator, seedsToRun } from "../helpers/seeded.ts";
import { tempDir } from "../helpers/temp-dir.ts";

/**
 * The credit ledger on SQLite against the ledger on PostgreSQL: seeded random runs of
 * grants (with and without an expiry, amounts past 32 bits now and then), consumption
 * beyond what is left (debt), takes, debt cleared and time passing grants' expiries must
 * leave both with the same balance, expiring grants, grants and pieces taken. The store
 * contract suite states each rule once; this looks for where the two implementations of
 * the money path part under sequences nobody wrote by hand.
 *
 * Then usage writes as the usage writer makes them (the rows not stored yet, their
 * rollups and their charges in one transaction): batches that repeat rows already
 * written or twice in themselves must write each call once and charge it once, with the
 * same totals per day, month, model and subtree in both stores.
 */

const T0 = Date.UTC(2026, 10, 28, 9);
const HOUR = 3_600_000;

if (!skipServices)
  describe("the credit ledger on SQLite and on PostgreSQL", () => {
    let server: PostgresServer | undefined;
    beforeAll(async () => {
      server = await startPostgres();
    }, 60_000);
    afterAll(() => server?.stop(), 30_000);

    /** A fresh ledger in each store; `done` closes both and drops the database (a hunt runs many seeds). */
    const open = async () => {
      const name = await server!.createDatabase();
      await migrateDatabase(server!.url(name));
      const sqlite = openSqliteStore(join(tempDir("ledger-differential-"), "router.db"));
      const postgres = await openPostgresStore(server!.url(name), { migrate: false });
      const done = async () => {
        sqlite.close();
        postgres.close();
        await server!.dropDatabase(name);
      };
      return { sqlite, postgres, done };
    };

    for (const seed of seedsToRun([1, 2, 3])) {
      test(`random usage batches with repeated rows, seed ${seed}`, async () => {
        const next = generator(seed);
        const { sqlite, postgres, done } = await open();
        const made: NewUsageEventRow[] = [];
        const models = ["gpt-4o", "claude-sonnet", "gemini-pro"];
        const rowAt = (n: number, at: number): NewUsageEventRow => ({
          requestId: `req-${n}`,
          accountId: 1 + Math.floor(next() * 3),
          day: new Date(at).toISOString().slice(0, 10),
          createdAt: at,
          endpoint: "/v1/chat/completions",
          requestedModel: models[n % 3]!,
          effectiveModel: models[n % 3]!,
          status: next() < 0.1 ? 502 : 200,
          promptTokens: Math.floor(next() * 5_000),
          completionTokens: Math.floor(next() * 2_000),
          source: "upstream",
          latencyMs: 10,
          costNanos: next() < 0.05 ? 4_000_000_000_000 : Math.floor(next() * 900_000),
        });
        // What the usage writer does with a batch: the rows not stored yet, their rollups and charges, one transaction.
        const write = (store: Store, rows: NewUsageEventRow[], now: number) =>
          store.transaction(async (tx) => {
            const fresh = await tx.usage.insert(rows);
            await tx.usage.addRollups(dailyRollups(fresh).values());
            for (const [accountId, amount] of chargesOf(fresh)) await tx.credit.consume(accountId, amount, now);
            return fresh.map((row) => row.requestId).sort();
          });
        let now = T0;
        for (let batch = 0; batch < 40; batch++) {
          now += Math.floor(next() * 10 * HOUR);
          const rows: NewUsageEventRow[] = [];
          for (let n = Math.floor(next() * 20); n > 0; n--) {
            const roll = next();
            // A row written before (a retried claim), one twice in the batch, or a new call.
            if (roll < 0.15 && made.length > 0) rows.push(made[Math.floor(next() * made.length)]!);
            else if (roll < 0.25 && rows.length > 0) rows.push(rows[rows.length - 1]!);
            else {
              const row = rowAt(made.length, now + rows.length);
              made.push(row);
              rows.push(row);
            }
          }
          const [a, b] = [await write(sqlite, rows, now), await write(postgres, rows, now)];
          expect({ batch, written: b }).toEqual({ batch, written: a });
          const day = new Date(now).toISOString().slice(0, 10);
          const [x, y] = await Promise.all(
            [sqlite, postgres].map(async (store) => ({
              balances: await Promise.all([1, 2, 3].map((id) => store.credit.balance(id, now))),
              today: await Promise.all((["requests", "tokens", "cost"] as const).map((measure) => store.usage.periodTotal({ measure, accountId: 1 }, day))),
              month: await store.usage.periodTotal({ measure: "cost", accountId: 2 }, day.slice(0, 7)),
              model: await store.usage.periodTotal({ measure: "tokens", model: "gpt-4o" }, day),
              byModel: await store.usage.sumsByModel({ accountId: 3 }, { start: "2026-01-01", end: "2027-12-31" }),
            })),
          );
          expect({ batch, ...y }).toEqual({ batch, ...x });
        }
        await done();
      });

      test(`random grants, charges and takes, seed ${seed}`, async () => {
        const next = generator(seed);
        const { sqlite, postgres, done } = await open();
        const both = async <T>(run: (store: Store) => Promise<T>): Promise<[T, T]> => [await run(sqlite), await run(postgres)];
        const amount = () => (next() < 0.05 ? 5_000_000_000_000 + Math.floor(next() * 1e6) : 1 + Math.floor(next() * 1_000_000));
        const accounts = [1, 2];
        let now = T0;
        for (let step = 0; step < 200; step++) {
          now += Math.floor(next() * 6 * HOUR);
          const account = accounts[Math.floor(next() * accounts.length)]!;
          const op = next();
          if (op < 0.3) {
            const pieces = Array.from({ length: 1 + Math.floor(next() * 3) }, () => ({ amount: amount(), expiresAt: next() < 0.6 ? now + Math.floor(next() * 3 * 24 * HOUR) : null }));
            await both((store) => store.credit.give(account, pieces, null, now));
          } else if (op < 0.75) {
            const charge = next() < 0.1 ? 3 * amount() : Math.floor(amount() / 4);
            await both((store) => store.credit.consume(account, charge, now));
          } else if (op < 0.9) {
            const wanted = next() < 0.2 ? Infinity : amount();
            const [a, b] = await both((store) => store.credit.take(account, wanted, now));
            expect({ step, taken: b }).toEqual({ step, taken: a });
          } else {
            await both((store) => store.credit.clearDebt(account));
          }
          const [a, b] = await both(async (store) => ({
            balance: await store.credit.balance(account, now),
            ledger: await store.credit.ledgerBalance(account, now),
            grants: (await store.credit.grants(account, now)).map((g) => ({ amount: g.amount, remaining: g.remaining, expiresAt: g.expiresAt })),
          }));
          expect({ step, ...b }).toEqual({ step, ...a });
        }
        await done();
      });
    }
  });

import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createLogger } from "../../src/core/log.ts";
import { chargesOf } from "../../src/metering/usage-batch.ts";
import { createUsageWriter, type Written } from "../../src/metering/usage-writer.ts";
import { openConnection } from "../../src/store/sqlite/connection.ts";
import { ServiceError } from "../../src/store/sqlite/service-client.ts";
import { openSqliteStore } from "../../src/store/sqlite/store.ts";
import type { ServiceChannel } from "../../src/store/sqlite/upkeep-thread.ts";
import { startUsageWriter } from "../../src/store/sqlite/usage-write-client.ts";
import type { UsageWriteMessage, UsageWriteReport } from "../../src/store/sqlite/usage-write-service.ts";
import type { NewKeyHealthRow, NewUsageEventRow, Store } from "../../src/store/store.ts";
import { generator, seedsToRun } from "../helpers/seeded.ts";
import { tempDir } from "../helpers/temp-dir.ts";

/**
 * The embedded server writes usage batches on its upkeep thread, on a connection of its
 * own (src/store/sqlite/usage-write-service.ts), and the serving thread waits for none of
 * it. What the usage writer makes of a batch there must be what it makes of it in its own
 * transaction on the serving thread: the same rows written once, charges, rollups, keys'
 * health and ledger versions; rows the database refuses set aside the same way; a thread
 * gone without answering leaves nothing charged twice. Its commits are not another
 * process's changes: the server's caches stay.
 */

const T0 = Date.UTC(2026, 10, 28, 9);
const HOUR = 3_600_000;
const quiet = createLogger("error", () => {});
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of stops) await stop();
});

/** A store with its upkeep thread running and its usage writer there ready, as the server has it. */
async function withUpkeep(file: string): Promise<Store> {
  const store = openSqliteStore(file);
  const stop = store.startUpkeep(quiet);
  stops.push(async () => {
    await stop();
    store.close();
  });
  const deadline = Date.now() + 5000;
  while (!store.usageBatches() && Date.now() < deadline) await Bun.sleep(10);
  expect(store.usageBatches()).toBeDefined();
  return store;
}

const clockAt = (now: () => number) => ({ now, businessDate: () => new Date(now()).toISOString().slice(0, 10) }) as never;
const comparable = (written: Written) => ({ charged: [...written.charged].sort(), setAside: [...written.setAside].sort(), version: written.version });

async function standing(store: Store, now: number) {
  const day = new Date(now).toISOString().slice(0, 10);
  return {
    balances: await Promise.all([1, 2, 3].map((id) => store.credit.balance(id, now))),
    grants: await Promise.all([1, 2, 3].map(async (id) => (await store.credit.grants(id, now)).map((g) => [g.amount, g.remaining, g.expiresAt]))),
    today: await Promise.all((["requests", "tokens", "cost"] as const).map((measure) => store.usage.periodTotal({ measure, accountId: 1 }, day))),
    byModel: await store.usage.sumsByModel({ accountId: 2 }, { start: "2026-01-01", end: "2027-12-31" }),
    health: (await store.keyHealth.ofTenant(0)).sort((a, b) => a.keyId - b.keyId),
    latest: await store.usage.latestId(),
  };
}

describe("usage batches on the upkeep thread", () => {
  for (const seed of seedsToRun([1, 2, 3])) {
    test(`write what the serving thread's transaction writes, seed ${seed}`, async () => {
      const next = generator(seed);
      const dir = tempDir("usage-thread-");
      const here = openSqliteStore(join(dir, "here.db"));
      const there = await withUpkeep(join(dir, "there.db"));
      let now = T0;
      const writers = [here, there].map((store) => createUsageWriter({ store, clock: clockAt(() => now), log: quiet }));
      for (const store of [here, there]) {
        await store.credit.give(1, [{ amount: 5_000_000, expiresAt: null }], null, now);
        await store.credit.give(2, [{ amount: 2_000_000, expiresAt: T0 + 20 * HOUR }, { amount: 1_000_000, expiresAt: null }], null, now);
      }
      there.changedElsewhere();
      const made: NewUsageEventRow[] = [];
      const models = ["gpt-4o", "claude-sonnet", "gemini-pro"];
      for (let batch = 0; batch < 30; batch++) {
        now += Math.floor(next() * 3 * HOUR);
        const day = new Date(now).toISOString().slice(0, 10);
        const rows: NewUsageEventRow[] = [];
        for (let n = Math.floor(next() * 40); n > 0; n--) {
          const roll = next();
          // A row written before, one twice in the batch, or a new call.
          if (roll < 0.1 && made.length > 0) rows.push(made[Math.floor(next() * made.length)]!);
          else if (roll < 0.2 && rows.length > 0) rows.push(rows[rows.length - 1]!);
          else {
            const i = made.length;
            const row: NewUsageEventRow = {
              requestId: `req-${i}`,
              accountId: 1 + Math.floor(next() * 3),
              day,
              createdAt: now + rows.length,
              endpoint: i % 5 === 0 ? "/v1/messages" : "/v1/chat/completions",
              requestedModel: models[i % 3]!,
              effectiveModel: next() < 0.1 ? null : models[i % 3]!,
              level: 1 + (i % 2),
              keyId: 1 + (i % 2),
              status: next() < 0.1 ? 502 : 200,
              stream: next() < 0.5,
              promptTokens: Math.floor(next() * 5_000),
              completionTokens: Math.floor(next() * 2_000),
              cacheReadTokens: Math.floor(next() * 100),
              reasoningTokens: Math.floor(next() * 50),
              source: next() < 0.2 ? "estimated" : "upstream",
              latencyMs: Math.floor(next() * 900),
              costNanos: next() < 0.05 ? 0 : Math.floor(next() * 90_000),
              extra: next() < 0.1 ? JSON.stringify({ images: 2 }) : null,
            };
            made.push(row);
            rows.push(row);
          }
        }
        const health: NewKeyHealthRow[] = [1, 2].map((keyId) => ({
          keyId,
          tenantId: 0,
          day,
          requests: rows.length,
          errors: Math.floor(next() * 3),
          latencyMs: 40 * rows.length,
          spendNanos: 1000,
          lastSuccessAt: now,
          ...(next() < 0.3 && { lastErrorAt: now - 5, lastErrorStatus: 502, lastErrorMessage: "upstream 502" }),
        }));
        const check = next() < 0.3;
        const [a, b] = [await writers[0]!.write(rows, health, check), await writers[1]!.write(rows, health, check)];
        expect({ batch, ...comparable(b) }).toEqual({ batch, ...comparable(a) });
        expect({ batch, ...(await standing(there, now)) }).toEqual({ batch, ...(await standing(here, now)) });
      }
      // The thread's commits are the server's own: nothing for its caches to drop.
      expect(there.changedElsewhere()).toBe(false);
      here.close();
    });
  }

  test("a row the database refuses is set aside there as here, and the rest of its batch is written and charged", async () => {
    const dir = tempDir("usage-thread-");
    const here = openSqliteStore(join(dir, "here.db"));
    const there = await withUpkeep(join(dir, "there.db"));
    const results = [];
    for (const store of [here, there]) {
      await store.credit.give(1, [{ amount: 1_000_000, expiresAt: null }], null, T0);
      const writer = createUsageWriter({ store, clock: clockAt(() => T0), log: quiet });
      // The first batch proves the database takes rows: a later refusal is the row's, not ours.
      await writer.write([usageRow("ok-0", 100)], [], false);
      const refused = { ...usageRow("bad", 700), day: null } as unknown as NewUsageEventRow;
      const written = await writer.write([usageRow("ok-1", 10), refused, usageRow("ok-2", 20)], [], false);
      results.push({ written: comparable(written), balance: await store.credit.balance(1, T0), latest: await store.usage.latestId() });
    }
    expect(results[1]).toEqual(results[0]!);
    expect(results[0]).toMatchObject({ written: { charged: [[1, 30]], setAside: [[1, 700]] }, balance: 1_000_000 - 130 });
    here.close();
  });

  test("a thread gone after its commit, without answering: the rows written again are found stored and charged once", async () => {
    const there = await withUpkeep(join(tempDir("usage-thread-"), "there.db"));
    await there.credit.give(1, [{ amount: 1_000_000, expiresAt: null }], null, T0);
    let lose = true;
    // The writer commits, then its answer is lost (the thread died on the way back).
    const flaky: Store = Object.assign(Object.create(there) as Store, {
      usageBatches: () => ({
        async write(rows: readonly NewUsageEventRow[], health: readonly NewKeyHealthRow[], now: number) {
          const done = await there.usageBatches()!.write(rows, health, now);
          if (!lose) return done;
          lose = false;
          throw new ServiceError("the upkeep thread failed", undefined, true);
        },
      }),
    });
    const writer = createUsageWriter({ store: flaky, clock: clockAt(() => T0), log: quiet });
    // A writer's first write also prunes old claim notes, in a transaction of its own on this thread.
    await writer.write([], [], false);
    const rows = [usageRow("a", 300), usageRow("b", 200)];
    await expect(writer.write(rows, [], false)).rejects.toThrow("the upkeep thread failed");
    expect(writer.mayHaveStored(rows[0]!)).toBe(true);
    // The recorder writes them again, checked: found stored, they were this process's own, and their charges stop being held.
    const again = await writer.write(rows, [], true);
    expect([...again.charged]).toEqual([...chargesOf(rows)]);
    expect(await there.credit.balance(1, T0)).toBe(1_000_000 - 500);
    expect(await there.usage.latestId()).toBe(2);
    expect(writer.mayHaveStored(rows[0]!)).toBe(false);
  });

  test("another connection's write to what the server caches is noticed; the server's own writes and usage batches are not", async () => {
    const file = join(tempDir("usage-thread-"), "router.db");
    const server = await withUpkeep(file);
    server.changedElsewhere();
    await server.usageBatches()!.write([usageRow("x", 5)], [], T0);
    await server.settings.put(0, [["LEVEL_MAPPER", "{}"]], T0);
    expect(server.changedElsewhere()).toBe(false);
    const cli = openConnection(file);
    // Not a table the server caches: no reason to drop anything.
    cli.sqlite.run("INSERT INTO credit_grants (account_id, amount, remaining, created_at) VALUES (1, 5, 5, 0)");
    expect(server.changedElsewhere()).toBe(false);
    cli.sqlite.run("INSERT INTO settings (tenant_id, key, value, updated_at) VALUES (0, 'probe', '1', 0)");
    cli.close();
    expect(server.changedElsewhere()).toBe(true);
    expect(server.changedElsewhere()).toBe(false);
  });

  test("the thread failing answers the write under way as of unknown outcome, and refuses the next at once", async () => {
    let handler: ((report: UsageWriteReport) => void) | undefined;
    let failed: ((error: string) => void) | undefined;
    const posted: UsageWriteMessage[] = [];
    const channel: ServiceChannel<UsageWriteMessage, UsageWriteReport> = {
      post: (message) => {
        posted.push(message);
        if (message.type === "start") queueMicrotask(() => handler?.({ type: "ready" }));
      },
      listen: (onReport, onFailed) => {
        handler = onReport;
        failed = onFailed;
      },
    };
    const writer = (await startUsageWriter("unused.db", quiet, channel))!;
    const pending = writer.write([usageRow("p", 1)], [], T0);
    expect(posted.map((m) => m.type)).toEqual(["start", "write"]);
    failed!("killed");
    const error = await pending.catch((e: unknown) => e);
    expect(error).toMatchObject({ outcomeUnknown: true });
    expect(writer.alive()).toBe(false);
    const next = await writer.write([usageRow("q", 1)], [], T0).catch((e: unknown) => e);
    expect(next).toMatchObject({ outcomeUnknown: false });
    expect(posted).toHaveLength(2);
  });
});

function usageRow(requestId: string, costNanos: number): NewUsageEventRow {
  return {
    requestId,
    accountId: 1,
    day: "2026-11-28",
    createdAt: T0,
    endpoint: "/v1/chat/completions",
    requestedModel: "m",
    effectiveModel: "m",
    status: 200,
    promptTokens: 10,
    completionTokens: 5,
    source: "upstream",
    latencyMs: 5,
    costNanos,
  };
}

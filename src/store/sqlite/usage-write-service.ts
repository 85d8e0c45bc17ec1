/**
 * The usage writer's side of the upkeep thread (see usage-write-client.ts): its own
 * connection to the database, where each batch of usage rows the server posts is one
 * transaction (the rows, their daily rollups, the credit they charge, the keys' health
 * figures), so that none of it runs on the thread that serves requests. Plain
 * statements (usage-statements.ts), no query builder.
 */
import { Database } from "bun:sqlite";
import { chargesOf, dailyRollups } from "../../metering/usage-batch.ts";
import { usageEventRows, type SqlValue } from "../row-values.ts";
import type { NewKeyHealthRow, NewUsageEventRow } from "../store.ts";
import { creditConsumer, keyHealthAdder, newestUsageId, rollupAdder, usageEventInserter } from "./usage-statements.ts";

/**
 * What the serving thread asks, answered by id: `rows` are the rows' values in column
 * order, one flat JSON array (`flatValues`); `health` the keys' health rows as JSON.
 */
export type UsageWriteRequest = { type: "write"; rows: string; health: string; now: number } | { type: "stop" };
export type UsageWriteMessage = { type: "start"; path: string } | (UsageWriteRequest & { id: number });

/**
 * `written`: the positions in the batch of the rows written, or "all"; `latest`: the
 * newest usage row's id once the batch committed. An error carries SQLite's code (the
 * serving thread tells a refused row from the rest by it) and comes after a rollback.
 */
export type UsageWriteReport =
  | { type: "ready" }
  | { type: "failed"; error: string }
  | { type: "done"; id: number; written: "all" | number[]; latest: number }
  | { type: "error"; id: number; error: string; code?: string };

/** The writer's message handler on the upkeep thread, reporting through `report`. */
export function usageWriteService(report: (message: UsageWriteReport) => void): (message: UsageWriteMessage) => void {
  let sqlite: Database | undefined;
  let write: ((rows: NewUsageEventRow[], values: SqlValue[], health: NewKeyHealthRow[], now: number) => { written: "all" | number[]; latest: number }) | undefined;

  return (message) => {
    if (message.type === "start") {
      try {
        sqlite = new Database(message.path);
        // Both connections write this file: one waits for the other's transaction.
        sqlite.run("PRAGMA busy_timeout = 5000");
        sqlite.run("PRAGMA foreign_keys = ON");
        sqlite.run("PRAGMA synchronous = NORMAL");
        const insert = usageEventInserter(sqlite);
        const addRollups = rollupAdder(sqlite);
        const consume = creditConsumer(sqlite);
        const addHealth = keyHealthAdder(sqlite);
        const latest = newestUsageId(sqlite);
        const batch = sqlite.transaction((rows: NewUsageEventRow[], values: SqlValue[], health: NewKeyHealthRow[], now: number) => {
          // The steps of usage-writer.ts's transaction, in its order.
          const fresh = insert(rows, values);
          addRollups(dailyRollups(fresh).values());
          for (const [accountId, amount] of chargesOf(fresh)) consume(accountId, amount, now);
          if (health.length > 0) addHealth(health);
          const written: "all" | number[] = fresh.length === rows.length ? "all" : positionsOf(rows, fresh);
          return { written, latest: latest() };
        });
        // IMMEDIATE: the write lock is taken first, so a transaction never fails halfway for a lock the other connection holds.
        write = (rows, values, health, now) => batch.immediate(rows, values, health, now);
        report({ type: "ready" });
      } catch (error) {
        report({ type: "failed", error: (error as Error).message });
      }
      return;
    }
    if (message.type === "stop") {
      try {
        sqlite?.close();
      } catch {
        // Closing is best effort: the WAL is checkpointed by the next connection that opens the file.
      }
      sqlite = undefined;
      write = undefined;
      report({ type: "done", id: message.id, written: [], latest: 0 });
      return;
    }
    try {
      if (!write) throw new Error("the usage writer is not started");
      const values = JSON.parse(message.rows) as SqlValue[];
      const result = write(usageEventRows(values), values, JSON.parse(message.health) as NewKeyHealthRow[], message.now);
      report({ type: "done", id: message.id, ...result });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      report({ type: "error", id: message.id, error: (error as Error).message, ...(typeof code === "string" && { code }) });
    }
  };
}

/** Where in `rows` the rows of `fresh` are (`fresh` keeps their order). */
function positionsOf(rows: readonly NewUsageEventRow[], fresh: readonly NewUsageEventRow[]): number[] {
  const positions: number[] = [];
  let next = 0;
  for (let i = 0; i < rows.length && next < fresh.length; i++) {
    if (rows[i] === fresh[next]) {
      positions.push(i);
      next++;
    }
  }
  return positions;
}

/**
 * The usage writer's side of the upkeep thread (see usage-write-client.ts): its own
 * connection to the database, where each batch of usage rows the server posts is one
 * transaction (the rows, their daily rollups, the credit they charge, the keys' health
 * figures), so that none of it runs on the thread that serves requests. Plain
 * statements (usage-statements.ts), no query builder.
 */
import { chargesOf, dailyRollups } from "../../metering/usage-batch.ts";
import { usageEventRows, type SqlValue } from "../row-values.ts";
import type { NewKeyHealthRow, NewUsageEventRow } from "../store.ts";
import { hostService, type ServiceMessage, type ServiceReport } from "./service-host.ts";
import { creditConsumer, keyHealthAdder, newestUsageId, rollupAdder, usageEventInserter } from "./usage-statements.ts";

/**
 * What the serving thread asks, answered by id: `rows` are the rows' values in column
 * order, one flat JSON array (`flatValues`); `health` the keys' health rows as JSON.
 */
export type UsageWriteRequest = { type: "write"; rows: string; health: string; now: number } | { type: "stop" };
export type UsageWriteMessage = ServiceMessage<UsageWriteRequest>;

/**
 * `written`: the positions in the batch of the rows written, or "all"; `latest`: the
 * newest usage row's id once the batch committed. An error carries SQLite's code (the
 * serving thread tells a refused row from the rest by it) and comes after a rollback.
 */
export type UsageWritten = { written: "all" | number[]; latest: number };
export type UsageWriteReport = ServiceReport<UsageWritten>;

/** The writer's message handler on the upkeep thread, reporting through `report`. */
export function usageWriteService(report: (message: UsageWriteReport) => void): (message: UsageWriteMessage) => void {
  return hostService<Exclude<UsageWriteRequest, { type: "stop" }>, UsageWritten>(
    report,
    (sqlite) => {
      sqlite.run("PRAGMA foreign_keys = ON");
      const insert = usageEventInserter(sqlite);
      const addRollups = rollupAdder(sqlite);
      const consume = creditConsumer(sqlite);
      const addHealth = keyHealthAdder(sqlite);
      const latest = newestUsageId(sqlite);
      const batch = sqlite.transaction((rows: NewUsageEventRow[], values: SqlValue[], health: NewKeyHealthRow[], now: number): UsageWritten => {
        // The steps of usage-writer.ts's transaction, in its order.
        const fresh = insert(rows, values);
        addRollups(dailyRollups(fresh).values());
        for (const [accountId, amount] of chargesOf(fresh)) consume(accountId, amount, now);
        if (health.length > 0) addHealth(health);
        return { written: fresh.length === rows.length ? "all" : positionsOf(rows, fresh), latest: latest() };
      });
      return (request) => {
        const values = JSON.parse(request.rows) as SqlValue[];
        // IMMEDIATE: the write lock is taken first, so a transaction never fails halfway for a lock the other connection holds.
        return batch.immediate(usageEventRows(values), values, JSON.parse(request.health) as NewKeyHealthRow[], request.now);
      };
    },
    { written: [], latest: 0 },
  );
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

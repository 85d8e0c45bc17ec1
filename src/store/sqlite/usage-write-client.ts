import type { Logger } from "../../core/log.ts";
import { appendUsageEventValues, flatValues } from "../row-values.ts";
import type { NewKeyHealthRow, NewUsageEventRow, UsageBatchWriter } from "../store.ts";
import { startServiceClient } from "./service-client.ts";
import type { ServiceChannel } from "./upkeep-thread.ts";
import type { UsageWriteMessage, UsageWriteReport, UsageWriteRequest, UsageWritten } from "./usage-write-service.ts";

/**
 * Starts the usage writer on the upkeep thread, on its own connection to the database
 * (usage-write-service.ts). A write on the serving thread held it for as long as it
 * ran (about 0.6 ms for a 50 ms tick's rows at c=1), and each call that arrived
 * meanwhile waited for it: a third of the calls slower than p50 + 0.7 ms at c=1
 * (docs/benchmarks.md). The rows cross as one flat JSON array of their values. Resolves undefined when the writer
 * cannot start: usage rows are then written on the serving thread, as before.
 */
export async function startUsageWriter(
  path: string,
  log: Logger,
  thread: ServiceChannel<UsageWriteMessage, UsageWriteReport>,
): Promise<(UsageBatchWriter & { alive(): boolean; stop(): Promise<void> }) | undefined> {
  const client = await startServiceClient<Exclude<UsageWriteRequest, { type: "stop" }>, UsageWritten>(thread, path);
  if ("failed" in client) {
    log.warn("the usage writer could not open the database on its own thread; usage rows are written on the serving thread", { error: client.failed });
    return undefined;
  }
  log.debug("usage rows are written on their own thread");
  return {
    async write(rows: readonly NewUsageEventRow[], health: readonly NewKeyHealthRow[], now: number) {
      const done = await client.ask({ type: "write", rows: JSON.stringify(flatValues(rows, appendUsageEventValues)), health: JSON.stringify(health), now });
      return { fresh: done.written === "all" ? rows.slice() : done.written.map((position) => rows[position]!), latest: done.latest };
    },
    alive: client.alive,
    stop: () => client.stop(new Error("the usage writer stopped")),
  };
}

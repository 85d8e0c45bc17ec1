import type { Database } from "bun:sqlite";
import type { Logger } from "../../core/log.ts";
import type { CheckpointerMessage, CheckpointerReport } from "./checkpoint-service.ts";
import type { ServiceChannel } from "./upkeep-thread.ts";

/** How often the worker checkpoints. Under load the WAL grows a few MB between rounds. */
const CHECKPOINT_EVERY_MS = 1000;
/** SQLite's default: back to it whenever the worker is not doing the job. */
const AUTOCHECKPOINT_PAGES = 1000;

export interface Checkpointer {
  stop(): Promise<void>;
}

/**
 * Moves WAL checkpoints off the serving thread, to the upkeep thread (upkeep-worker.ts). SQLite checkpoints on commit once the
 * WAL passes 1,000 pages: under load that is every few seconds, and the commit that
 * does it copies megabytes and fsyncs, holding every request for 4 to 11 ms (measured
 * with 64-row usage batches). The upkeep thread's own connection checkpoints once a
 * second instead, and the server's connection stops checkpointing, only once that is
 * running; if it fails, automatic checkpoints come back.
 */
export function startCheckpointer(sqlite: Database, path: string, log: Logger, thread: ServiceChannel<CheckpointerMessage, CheckpointerReport>): Checkpointer {
  let stopped: (() => void) | undefined;
  const autoCheckpoint = (pages: number) => sqlite.run(`PRAGMA wal_autocheckpoint = ${pages}`);
  thread.listen(
    (report) => {
      if (report.type === "ready") {
        autoCheckpoint(0);
        log.debug("WAL checkpoints run on their own thread", { everyMs: CHECKPOINT_EVERY_MS });
      } else if (report.type === "failed") {
        autoCheckpoint(AUTOCHECKPOINT_PAGES);
        log.warn("WAL checkpoints are back on the serving thread", { error: report.error });
      } else stopped?.();
    },
    (error) => {
      autoCheckpoint(AUTOCHECKPOINT_PAGES);
      log.warn("the upkeep thread failed; WAL checkpoints are back on the serving thread", { error });
    },
  );
  thread.post({ type: "start", path, everyMs: CHECKPOINT_EVERY_MS });
  return {
    async stop() {
      autoCheckpoint(AUTOCHECKPOINT_PAGES);
      const done = new Promise<void>((resolve) => {
        stopped = resolve;
        setTimeout(resolve, 2000).unref();
      });
      thread.post({ type: "stop" });
      await done;
    },
  };
}

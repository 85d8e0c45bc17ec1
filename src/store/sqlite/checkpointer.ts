import type { Database } from "bun:sqlite";
import type { Logger } from "../../core/log.ts";
import { workerUrl } from "../../core/worker-url.ts";
import type { CheckpointerMessage, CheckpointerReport } from "./checkpoint-worker.ts";

/** How often the worker checkpoints. Under load the WAL grows a few MB between rounds. */
const CHECKPOINT_EVERY_MS = 1000;
/** SQLite's default: back to it whenever the worker is not doing the job. */
const AUTOCHECKPOINT_PAGES = 1000;

export interface Checkpointer {
  stop(): Promise<void>;
}

/**
 * Moves WAL checkpoints off the serving thread. SQLite checkpoints on commit once the
 * WAL passes 1,000 pages: under load that is every few seconds, and the commit that
 * does it copies megabytes and fsyncs, holding every request for 4 to 11 ms (measured
 * with 64-row usage batches). A Worker with its own connection checkpoints once a
 * second instead, and the server's connection stops checkpointing, only once the
 * worker is running; if it fails, automatic checkpoints come back.
 */
export function startCheckpointer(sqlite: Database, path: string, log: Logger): Checkpointer {
  const worker = new Worker(workerUrl("store/sqlite/checkpoint-worker.ts"));
  let stopped: (() => void) | undefined;
  const autoCheckpoint = (pages: number) => sqlite.run(`PRAGMA wal_autocheckpoint = ${pages}`);
  worker.onmessage = (event: MessageEvent<CheckpointerReport>) => {
    const report = event.data;
    if (report.type === "ready") {
      autoCheckpoint(0);
      log.debug("WAL checkpoints run on their own thread", { everyMs: CHECKPOINT_EVERY_MS });
    }
    else if (report.type === "failed") {
      autoCheckpoint(AUTOCHECKPOINT_PAGES);
      log.warn("WAL checkpoints are back on the serving thread", { error: report.error });
    } else stopped?.();
  };
  worker.onerror = (event) => {
    autoCheckpoint(AUTOCHECKPOINT_PAGES);
    log.warn("WAL checkpoint worker failed; checkpoints are back on the serving thread", { error: event.message });
  };
  worker.postMessage({ type: "start", path, everyMs: CHECKPOINT_EVERY_MS } satisfies CheckpointerMessage);
  // The worker must not keep a stopping process alive.
  (worker as unknown as { unref(): void }).unref();
  return {
    async stop() {
      autoCheckpoint(AUTOCHECKPOINT_PAGES);
      const done = new Promise<void>((resolve) => {
        stopped = resolve;
        setTimeout(resolve, 2000).unref();
      });
      worker.postMessage({ type: "stop" } satisfies CheckpointerMessage);
      await done;
      worker.terminate();
    },
  };
}

/**
 * The WAL checkpointer's side of the upkeep thread (see checkpointer.ts): its own
 * connection to the database, checkpointing on a timer so that copying WAL pages into
 * the database file, and the fsync that ends it, never run on the thread that serves
 * requests.
 */
import { Database } from "bun:sqlite";

export type CheckpointerMessage = { type: "start"; path: string; everyMs: number } | { type: "stop" };
export type CheckpointerReport = { type: "ready" } | { type: "failed"; error: string } | { type: "stopped" };

/** The checkpointer's message handler on the upkeep thread, reporting through `report`. */
export function checkpointService(report: (message: CheckpointerReport) => void): (message: CheckpointerMessage) => void {
  let db: Database | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  return (message) => {
    if (message.type === "start") {
      try {
        db = new Database(message.path);
        db.run("PRAGMA busy_timeout = 5000");
        const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
        checkpoint.run();
        // PASSIVE never waits for readers or the writer: it copies what it can and
        // leaves the rest for the next round.
        timer = setInterval(() => {
          try {
            checkpoint.run();
          } catch (error) {
            report({ type: "failed", error: (error as Error).message });
          }
        }, message.everyMs);
        report({ type: "ready" });
      } catch (error) {
        report({ type: "failed", error: (error as Error).message });
      }
      return;
    }
    clearInterval(timer);
    try {
      db?.close();
    } catch {
      // Closing is best effort: the server's own connection checkpoints when it closes.
    }
    report({ type: "stopped" });
  };
}

/**
 * Work a call still owes once its answer is decided (its settlement, its access-log
 * line) runs right after the request handlers of this turn of the event loop return,
 * so the answer is written to the client first instead of waiting for bookkeeping the
 * client does not see. Everything queued in one turn runs in one macrotask, in the
 * order it was queued, within microseconds of the answer.
 *
 * One queue per process (per event loop), so that whatever must see every settled
 * call (the usage recorder's flush on shutdown and in tests) can run what is still
 * queued first: `runQueuedAfterAnswer`.
 *
 * Tasks handle their own failures; one that throws anyway is logged (at once, on
 * stderr: no logger is at hand here) and the tasks after it still run.
 */
import { createLogger } from "./log.ts";

const fallback = createLogger("error", (line) => void process.stderr.write(`${line}\n`));

let queue: Array<() => void> = [];
let scheduled = false;

export function afterAnswer(task: () => void): void {
  queue.push(task);
  if (!scheduled) {
    scheduled = true;
    setImmediate(runQueuedAfterAnswer);
  }
}

/** Runs every queued task now (the scheduled run then finds nothing to do). */
export function runQueuedAfterAnswer(): void {
  scheduled = false;
  while (queue.length > 0) {
    const tasks = queue;
    queue = [];
    for (const task of tasks) {
      try {
        task();
      } catch (error) {
        fallback.error("deferred work after an answer failed", { error: String((error as Error)?.message ?? error) });
      }
    }
  }
}

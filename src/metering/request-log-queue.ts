import { causeMessage } from "../core/errors.ts";
import { outage, type Logger } from "../core/log.ts";
import type { NewRequestLogRow } from "../store/store.ts";
import { requestLogRow, type LoggedCall } from "./request-log.ts";
import type { UsageEvent } from "./usage-event.ts";

/** A log row waits at most this long before it is appended (the console's live tail polls every few seconds). */
export const LOG_WAIT_MS = 200;
/** A batch this large is appended at once, without waiting for LOG_WAIT_MS. */
export const LOG_BATCH_ROWS = 1024;

export interface RequestLogQueue {
  /** A settled or refused call's row; dropped when `limit` rows already wait (the log gives way before bills do). */
  push(row: NewRequestLogRow): void;
  /** A row built once the call's failed attempts' error bodies are read (at most about a second each). */
  pushAfter(reading: readonly Promise<void>[], build: () => NewRequestLogRow): void;
  /** Appends the waiting rows when the oldest has waited LOG_WAIT_MS (the recorder's tick). */
  appendIfDue(): void;
  /** Appends everything waiting now, rows still reading their messages included; resolves once the store answered. */
  flush(): Promise<void>;
  readonly size: number;
}

/**
 * Request-log rows wait here and go to the store in batches of up to LOG_WAIT_MS of
 * calls, apart from the usage rows and their charges. A commit's cost in the log's file
 * is mostly the index pages it rewrites: rows of many accounts touch as many leaves of
 * the account index, once per commit. With 50 accounts calling, a row cost 8.6 µs of
 * CPU in commits of 60 rows (the size the usage batches gave at 12,000 calls a second)
 * and 3.8 µs in commits of 1,024 (docs/benchmarks.md). Rows are for reading back, never
 * for bills: they wait in this process only, and a crash loses at most the last
 * LOG_WAIT_MS of them; rows the store refuses go back to the front and are retried on
 * the next due batch.
 */
export function createRequestLogQueue(deps: {
  append: (rows: NewRequestLogRow[]) => Promise<void>;
  log: Logger;
  now: () => number;
  limit: number;
  /** Whether an error is the store refusing a value of the rows (Store.refusedRow): then they go one at a time, and the refused one is dropped. */
  refused?: (error: unknown) => boolean;
}): RequestLogQueue {
  let waiting: NewRequestLogRow[] = [];
  /** When the oldest waiting row must be appended. */
  let dueAt = Infinity;
  /** Rows waiting for failed attempts' error messages. */
  const reading = new Set<Promise<void>>();
  const appends = new Set<Promise<void>>();
  const outageOfLog = outage(deps.log, "warn", "request-log rows are written again");
  let soon = false;

  const add = (row: NewRequestLogRow) => {
    if (waiting.length === 0) dueAt = deps.now() + LOG_WAIT_MS;
    waiting.push(row);
    // A full batch goes after the current request's work, not inside it.
    if (waiting.length >= LOG_BATCH_ROWS && !soon) {
      soon = true;
      setImmediate(() => {
        soon = false;
        appendNow();
      });
    }
  };
  const appendNow = () => {
    if (waiting.length === 0) return;
    const rows = waiting;
    waiting = [];
    dueAt = Infinity;
    const retry = (rows: NewRequestLogRow[], error: unknown) => {
      if (waiting.length === 0) dueAt = deps.now() + LOG_WAIT_MS;
      waiting = rows.concat(waiting);
      outageOfLog.failed("request-log rows could not be written; retrying with the next batch", { rows: rows.length, error: causeMessage(error) });
    };
    // A row the store refuses would hold back every row after it: it is dropped, the others written.
    const apart = async (rows: NewRequestLogRow[]) => {
      for (let i = 0; i < rows.length; i++) {
        try {
          await deps.append([rows[i]!]);
        } catch (error) {
          if (!deps.refused?.(error)) return retry(rows.slice(i), error);
          deps.log.warn("a request-log row the database refuses is dropped", { req: rows[i]!.requestId, error: causeMessage(error) });
        }
      }
      outageOfLog.succeeded();
    };
    const done = deps.append(rows).then(outageOfLog.succeeded, (error: unknown) => (deps.refused?.(error) ? apart(rows) : retry(rows, error)));
    appends.add(done);
    void done.finally(() => appends.delete(done));
  };

  return {
    push(row) {
      if (waiting.length < deps.limit) add(row);
    },
    pushAfter(pending, build) {
      if (waiting.length >= deps.limit) return;
      const read: Promise<void> = Promise.all(pending)
        .then(() => add(build()))
        .finally(() => reading.delete(read));
      reading.add(read);
    },
    appendIfDue() {
      if (deps.now() >= dueAt) appendNow();
    },
    async flush() {
      await Promise.all([...reading]);
      appendNow();
      await Promise.all([...appends]);
    },
    get size() {
      return waiting.length;
    },
  };
}

/**
 * Puts a settled call's request-log row in `queue`. A failed attempt's error body may
 * still be read for its message (a second at most): the row waits for it; the charge
 * and the usage row do not.
 */
export function queueLogRow(queue: RequestLogQueue, event: UsageEvent, logged: LoggedCall, costNanos: number): void {
  if (logged.trace.reading.length === 0) queue.push(requestLogRow(event, logged, costNanos));
  else queue.pushAfter(logged.trace.reading, () => requestLogRow(event, logged, costNanos));
}

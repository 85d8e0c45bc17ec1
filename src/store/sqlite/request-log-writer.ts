import type { Logger } from "../../core/log.ts";
import type { NewRequestLogRow } from "../store.ts";
import type { WriterMessage, WriterReport, WriterRequest } from "./request-log-service.ts";
import type { ServiceChannel } from "./upkeep-thread.ts";
import { ServiceError, startServiceClient } from "./service-client.ts";
import { appendRequestLogValues, flatValues } from "../row-values.ts";

/** What the serving thread hands the request log's writer. */
export interface RequestLogWriter {
  /** Resolves once the rows are committed to the log's file. */
  append(rows: readonly NewRequestLogRow[]): Promise<void>;
  /** Removes rows that began before `before` (ms); resolves with how many. */
  prune(before: number): Promise<number>;
  /** Stops the writer once what was posted before it is written (the upkeep thread is ended by its owner). */
  stop(): Promise<void>;
}

/**
 * Starts the request log's writer on the upkeep thread, on the log's file
 * (request-log-file.ts): the serving thread posts a batch's values as one flat JSON
 * array (under 1 µs a row, against about 4.5 µs a row for the insert it no longer makes;
 * no object per row on either side) and reads the log through its own connection, where
 * the file is attached. Resolves undefined when the writer cannot start: the rows are
 * then written on the serving thread, as before.
 */
export async function startRequestLogWriter(path: string, log: Logger, thread: ServiceChannel<WriterMessage, WriterReport>): Promise<RequestLogWriter | undefined> {
  const client = await startServiceClient<Exclude<WriterRequest, { type: "stop" }>, { changes: number }>(thread, path);
  if ("failed" in client) {
    log.warn("the request log's writer could not open its file; its rows are written on the serving thread", { error: client.failed });
    return undefined;
  }
  log.debug("request-log rows are written on their own thread", { file: path });
  const ask = (request: Exclude<WriterRequest, { type: "stop" }>): Promise<number> =>
    client.ask(request).then(
      (done) => done.changes,
      (error: Error) => {
        if (!(error instanceof ServiceError)) throw error;
        throw new Error(error.outcomeUnknown ? `the request log's writer thread failed: ${error.message}` : `the request log could not be written: ${error.message}`);
      },
    );
  /** Batches being serialized: stop waits for them, so their rows are posted before it. */
  const serializing = new Set<Promise<string>>();
  return {
    async append(rows) {
      if (rows.length === 0) return;
      const values = serializeInSlices(rows);
      serializing.add(values);
      try {
        await ask({ type: "append", values: await values });
      } finally {
        serializing.delete(values);
      }
    },
    prune: (before) => ask({ type: "prune", before }),
    async stop() {
      await Promise.all(serializing);
      await client.stop(new Error("the request log's writer stopped"));
    },
  };
}

/** Rows serialized per macrotask: about 0.15 ms of the serving thread's time each. */
export const SERIALIZE_SLICE_ROWS = 128;

/**
 * The rows' values as one flat JSON array (`flatValues`), made a slice of rows per turn
 * of the event loop. A due batch holds up to 1,024 rows (request-log-queue.ts), and
 * serializing them at once held the serving thread for about 1 ms every 200 ms: the
 * calls that arrived meanwhile waited for it (a c=1 p99 outlier each time).
 */
export async function serializeInSlices(rows: readonly NewRequestLogRow[], sliceRows = SERIALIZE_SLICE_ROWS): Promise<string> {
  const parts: string[] = [];
  for (let start = 0; start < rows.length; start += sliceRows) {
    if (start > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    // Each slice without its brackets: the slices joined by commas are one array.
    parts.push(JSON.stringify(flatValues(rows.slice(start, start + sliceRows), appendRequestLogValues)).slice(1, -1));
  }
  return `[${parts.join(",")}]`;
}

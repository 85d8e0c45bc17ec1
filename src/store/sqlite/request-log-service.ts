/**
 * The request log's writer, on the upkeep thread (see request-log-writer.ts): its own
 * connection to the log's file, where it appends the rows the server posts and prunes
 * old ones, so that neither an insert nor a prune runs on the thread that serves requests.
 * Plain statements, no query builder: the thread then loads no more than it needs.
 */
import { Database } from "bun:sqlite";
import type { SqlValue } from "../row-values.ts";
import { requestLogInsert } from "./grouped-insert.ts";

/** What the serving thread asks of the writer, answered by id; `values` are the rows' values in column order, one flat JSON array (`flatValues`). */
export type WriterRequest = { type: "append"; values: string } | { type: "prune"; before: number } | { type: "stop" };
export type WriterMessage = { type: "start"; path: string } | (WriterRequest & { id: number });

export type WriterReport = { type: "ready" } | { type: "failed"; error: string } | { type: "done"; id: number; changes: number } | { type: "error"; id: number; error: string };

/** The writer's message handler on the upkeep thread, reporting through `report`. */
export function requestLogService(report: (message: WriterReport) => void): (message: WriterMessage) => void {
  let sqlite: Database | undefined;
  let append: ((values: SqlValue[]) => void) | undefined;
  let prune: ((before: number) => number) | undefined;

  return (message) => {
    if (message.type === "start") {
      try {
        sqlite = new Database(message.path, { strict: true });
        sqlite.run("PRAGMA busy_timeout = 5000");
        sqlite.run("PRAGMA synchronous = NORMAL");
        const db = sqlite;
        const insert = requestLogInsert(db);
        const remove = db.prepare<unknown, [number]>("DELETE FROM request_log WHERE created_at < ?");
        // A batch of rows is one commit.
        append = db.transaction((values: SqlValue[]) => insert(values));
        prune = (before) => remove.run(before).changes;
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
      report({ type: "done", id: message.id, changes: 0 });
      return;
    }
    try {
      if (!sqlite || !append || !prune) throw new Error("the request log's writer is not started");
      if (message.type === "append") {
        append(JSON.parse(message.values) as SqlValue[]);
        report({ type: "done", id: message.id, changes: 0 });
      } else report({ type: "done", id: message.id, changes: prune(message.before) });
    } catch (error) {
      report({ type: "error", id: message.id, error: (error as Error).message });
    }
  };
}

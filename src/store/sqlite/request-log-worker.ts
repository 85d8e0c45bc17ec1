/**
 * The request log's writer thread (see request-log-writer.ts): its own connection to the
 * log's file, where it appends the rows the server posts and prunes old ones, so that
 * neither an insert nor a prune runs on the thread that serves requests.
 */
import { Database } from "bun:sqlite";
import { drizzle } from "drizzle-orm/bun-sqlite";
import * as schema from "../schema/index.ts";
import type { NewRequestLogRow } from "../store.ts";
import { sqliteRequestLog } from "./request-log.ts";

declare const self: Worker;

/** What the serving thread asks of the writer, answered by id. */
export type WriterRequest = { type: "append"; rows: string } | { type: "prune"; before: number } | { type: "stop" };
export type WriterMessage = { type: "start"; path: string } | (WriterRequest & { id: number });

export type WriterReport = { type: "ready" } | { type: "failed"; error: string } | { type: "done"; id: number; changes: number } | { type: "error"; id: number; error: string };

let sqlite: Database | undefined;
let repository: ReturnType<typeof sqliteRequestLog> | undefined;
let append: ((rows: NewRequestLogRow[]) => void) | undefined;

const report = (message: WriterReport) => postMessage(message);

self.onmessage = (event: MessageEvent<WriterMessage>) => {
  const message = event.data;
  if (message.type === "start") {
    try {
      sqlite = new Database(message.path, { strict: true });
      sqlite.run("PRAGMA busy_timeout = 5000");
      sqlite.run("PRAGMA synchronous = NORMAL");
      repository = sqliteRequestLog({ sqlite, db: drizzle(sqlite, { schema }) });
      const repo = repository;
      // A batch of rows is one commit.
      append = sqlite.transaction((rows: NewRequestLogRow[]) => repo.append(rows));
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
    if (!sqlite || !repository || !append) throw new Error("the request log's writer is not started");
    if (message.type === "append") {
      append(JSON.parse(message.rows) as NewRequestLogRow[]);
      report({ type: "done", id: message.id, changes: 0 });
    } else report({ type: "done", id: message.id, changes: repository.prune(message.before) });
  } catch (error) {
    report({ type: "error", id: message.id, error: (error as Error).message });
  }
};

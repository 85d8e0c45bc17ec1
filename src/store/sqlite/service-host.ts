import { Database } from "bun:sqlite";

/** The reports of a service that answers requests by id (service-client.ts reads them). */
export type ServiceReport<Answer> =
  | { type: "ready" }
  | { type: "failed"; error: string }
  | ({ type: "done"; id: number } & Answer)
  | { type: "error"; id: number; error: string; code?: string };

/** What a service asks for: `start` first, then requests by id, `stop` last. */
export type ServiceMessage<Request> = { type: "start"; path: string } | ((Request | { type: "stop" }) & { id: number });

/**
 * The upkeep thread's side of a service that answers requests by id: `open` makes its
 * connection to `path` (busy timeout, synchronous NORMAL) and what answers a request; a
 * request's error is reported with SQLite's code, a `stop` closes the connection.
 */
export function hostService<Request extends { type: string }, Answer>(
  report: (message: ServiceReport<Answer>) => void,
  open: (sqlite: Database) => (request: Request) => Answer,
  stopped: Answer,
): (message: ServiceMessage<Request>) => void {
  let sqlite: Database | undefined;
  let answer: ((request: Request) => Answer) | undefined;
  return (message) => {
    if (message.type === "start") {
      try {
        sqlite = new Database((message as { path: string }).path);
        // The server's own connection writes the file too: one waits for the other's transaction.
        sqlite.run("PRAGMA busy_timeout = 5000");
        sqlite.run("PRAGMA synchronous = NORMAL");
        // A multi-row INSERT inside a transaction keeps a statement journal (to undo just that
        // statement); past 64 KiB SQLite spills it to a temporary file. A request-log batch's
        // 32-row statements touch as many account-index pages as accounts calling and spilled
        // every time: 5.4 µs of CPU a row, 3.5 of them in the kernel; in memory, 3.0.
        // These connections only insert and delete, so no large sort or temp table lands in memory.
        sqlite.run("PRAGMA temp_store = MEMORY");
        answer = open(sqlite);
        report({ type: "ready" });
      } catch (error) {
        report({ type: "failed", error: (error as Error).message });
      }
      return;
    }
    const { id } = message as { id: number };
    if (message.type === "stop") {
      try {
        sqlite?.close();
      } catch {
        // Closing is best effort: the WAL is checkpointed by the next connection that opens the file.
      }
      sqlite = undefined;
      answer = undefined;
      report({ type: "done", id, ...stopped });
      return;
    }
    try {
      if (!answer) throw new Error("the service is not started");
      report({ type: "done", id, ...answer(message as unknown as Request) });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      report({ type: "error", id, error: (error as Error).message, ...(typeof code === "string" && { code }) });
    }
  };
}

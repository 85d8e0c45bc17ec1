/**
 * The request log's writer, on the upkeep thread (see request-log-writer.ts): its own
 * connection to the log's file, where it appends the rows the server posts and prunes
 * old ones, so that neither an insert nor a prune runs on the thread that serves requests.
 * Plain statements, no query builder: the thread then loads no more than it needs.
 */
import type { SqlValue } from "../row-values.ts";
import { requestLogInsert } from "./grouped-insert.ts";
import { hostService, type ServiceMessage, type ServiceReport } from "./service-host.ts";

/** What the serving thread asks of the writer, answered by id; `values` are the rows' values in column order, one flat JSON array (`flatValues`). */
export type WriterRequest = { type: "append"; values: string } | { type: "prune"; before: number } | { type: "stop" };
export type WriterMessage = ServiceMessage<WriterRequest>;
export type WriterReport = ServiceReport<{ changes: number }>;

/** The writer's message handler on the upkeep thread, reporting through `report`. */
export function requestLogService(report: (message: WriterReport) => void): (message: WriterMessage) => void {
  return hostService<Exclude<WriterRequest, { type: "stop" }>, { changes: number }>(
    report,
    (sqlite) => {
      const insert = requestLogInsert(sqlite);
      const remove = sqlite.prepare<unknown, [number]>("DELETE FROM request_log WHERE created_at < ?");
      // A batch of rows is one commit.
      const append = sqlite.transaction((values: SqlValue[]) => insert(values));
      return (request) => {
        if (request.type === "prune") return { changes: remove.run(request.before).changes };
        append(JSON.parse(request.values) as SqlValue[]);
        return { changes: 0 };
      };
    },
    { changes: 0 },
  );
}

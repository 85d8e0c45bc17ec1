/**
 * The embedded store's upkeep thread: the WAL checkpointer (checkpoint-service.ts) and
 * the request log's writer (request-log-service.ts) in one Worker, so the server carries
 * one more JavaScript heap, not two (each is a few MB of resident memory). Messages and
 * reports are tagged with their service.
 */
import { checkpointService, type CheckpointerMessage, type CheckpointerReport } from "./checkpoint-service.ts";
import { requestLogService, type WriterMessage, type WriterReport } from "./request-log-service.ts";

declare const self: Worker;

export type UpkeepMessage = ({ service: "checkpoint" } & CheckpointerMessage) | ({ service: "log" } & WriterMessage);
export type UpkeepReport = ({ service: "checkpoint" } & CheckpointerReport) | ({ service: "log" } & WriterReport);

const checkpoint = checkpointService((report) => postMessage({ service: "checkpoint", ...report } satisfies UpkeepReport));
const log = requestLogService((report) => postMessage({ service: "log", ...report } satisfies UpkeepReport));

self.onmessage = (event: MessageEvent<UpkeepMessage>) => {
  const { service, ...message } = event.data;
  if (service === "checkpoint") checkpoint(message as CheckpointerMessage);
  else log(message as WriterMessage);
};

/**
 * The embedded store's upkeep thread: the WAL checkpointer (checkpoint-service.ts), the
 * request log's writer (request-log-service.ts) and the usage writer
 * (usage-write-service.ts) in one Worker, so the server carries one more JavaScript
 * heap, not three (each is a few MB of resident memory). Messages and reports are
 * tagged with their service.
 */
import { checkpointService, type CheckpointerMessage, type CheckpointerReport } from "./checkpoint-service.ts";
import { requestLogService, type WriterMessage, type WriterReport } from "./request-log-service.ts";
import { usageWriteService, type UsageWriteMessage, type UsageWriteReport } from "./usage-write-service.ts";

declare const self: Worker;

/** Each service's messages and reports. */
export interface UpkeepServices {
  checkpoint: { message: CheckpointerMessage; report: CheckpointerReport };
  log: { message: WriterMessage; report: WriterReport };
  usage: { message: UsageWriteMessage; report: UsageWriteReport };
}
export type UpkeepService = keyof UpkeepServices;
export type UpkeepMessage = { [S in UpkeepService]: { service: S } & UpkeepServices[S]["message"] }[UpkeepService];
export type UpkeepReport = { [S in UpkeepService]: { service: S } & UpkeepServices[S]["report"] }[UpkeepService];

const reporter =
  <S extends UpkeepService>(service: S) =>
  (report: UpkeepServices[S]["report"]) =>
    postMessage({ service, ...report });
const handlers: { [S in UpkeepService]: (message: UpkeepServices[S]["message"]) => void } = {
  checkpoint: checkpointService(reporter("checkpoint")),
  log: requestLogService(reporter("log")),
  usage: usageWriteService(reporter("usage")),
};

self.onmessage = (event: MessageEvent<UpkeepMessage>) => {
  const { service, ...message } = event.data;
  (handlers[service] as (message: unknown) => void)(message);
};

import { workerUrl } from "../../core/worker-url.ts";
import type { CheckpointerMessage, CheckpointerReport } from "./checkpoint-service.ts";
import type { WriterMessage, WriterReport } from "./request-log-service.ts";
import type { UpkeepMessage, UpkeepReport } from "./upkeep-worker.ts";

/** One service's end of the upkeep thread (upkeep-worker.ts). */
export interface ServiceChannel<Message, Report> {
  post(message: Message): void;
  /** Reports of this service; the thread's failure arrives as `failed`. */
  listen(handler: (report: Report) => void, failed: (error: string) => void): void;
}

export interface UpkeepThread {
  readonly checkpoint: ServiceChannel<CheckpointerMessage, CheckpointerReport>;
  readonly log: ServiceChannel<WriterMessage, WriterReport>;
  terminate(): void;
}

/** Starts the upkeep thread; undefined when Workers are unavailable (each service then stays on the serving thread). */
export function startUpkeepThread(): UpkeepThread | undefined {
  let worker: Worker;
  try {
    worker = new Worker(workerUrl("store/sqlite/upkeep-worker.ts"));
  } catch {
    return undefined;
  }
  const handlers: { checkpoint?: (report: CheckpointerReport) => void; log?: (report: WriterReport) => void } = {};
  const failures: Array<(error: string) => void> = [];
  worker.onmessage = (event: MessageEvent<UpkeepReport>) => {
    const { service, ...report } = event.data;
    if (service === "checkpoint") handlers.checkpoint?.(report as CheckpointerReport);
    else handlers.log?.(report as WriterReport);
  };
  worker.onerror = (event) => {
    for (const failed of failures) failed(event.message);
  };
  // The thread must not keep a stopping process alive.
  (worker as unknown as { unref(): void }).unref();
  return {
    checkpoint: {
      post: (message) => worker.postMessage({ service: "checkpoint", ...message } satisfies UpkeepMessage),
      listen(handler, failed) {
        handlers.checkpoint = handler;
        failures.push(failed);
      },
    },
    log: {
      post: (message) => worker.postMessage({ service: "log", ...message } satisfies UpkeepMessage),
      listen(handler, failed) {
        handlers.log = handler;
        failures.push(failed);
      },
    },
    terminate: () => worker.terminate(),
  };
}

import { workerUrl } from "../../core/worker-url.ts";
import type { UpkeepMessage, UpkeepReport, UpkeepService, UpkeepServices } from "./upkeep-worker.ts";

/** One service's end of the upkeep thread (upkeep-worker.ts). */
export interface ServiceChannel<Message, Report> {
  post(message: Message): void;
  /** Reports of this service; the thread's failure arrives as `failed`. */
  listen(handler: (report: Report) => void, failed: (error: string) => void): void;
}

export type UpkeepThread = { readonly [S in UpkeepService]: ServiceChannel<UpkeepServices[S]["message"], UpkeepServices[S]["report"]> } & {
  terminate(): void;
};

/** Starts the upkeep thread; undefined when Workers are unavailable (each service then stays on the serving thread). */
export function startUpkeepThread(): UpkeepThread | undefined {
  let worker: Worker;
  try {
    worker = new Worker(workerUrl("store/sqlite/upkeep-worker.ts"));
  } catch {
    return undefined;
  }
  const handlers: Partial<Record<UpkeepService, (report: unknown) => void>> = {};
  const failures: Array<(error: string) => void> = [];
  worker.onmessage = (event: MessageEvent<UpkeepReport>) => {
    const { service, ...report } = event.data;
    handlers[service]?.(report);
  };
  worker.onerror = (event) => {
    for (const failed of failures) failed(event.message);
  };
  // The thread must not keep a stopping process alive.
  (worker as unknown as { unref(): void }).unref();
  const channel = <S extends UpkeepService>(service: S): ServiceChannel<UpkeepServices[S]["message"], UpkeepServices[S]["report"]> => ({
    post: (message) => worker.postMessage({ service, ...message } as UpkeepMessage),
    listen(handler, failed) {
      handlers[service] = handler as (report: unknown) => void;
      failures.push(failed);
    },
  });
  return { checkpoint: channel("checkpoint"), log: channel("log"), usage: channel("usage"), terminate: () => worker.terminate() };
}

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
  const handle = worker as unknown as { ref(): void; unref(): void };
  /**
   * Requests posted and not answered yet. The thread must not keep a stopping process
   * alive, so it is unreferenced, but only while nothing waits for it: while a reply
   * from an unreferenced Worker is awaited, Bun's event loop polls for it without
   * sleeping, and the serving thread burned as much CPU as the upkeep thread took to
   * answer (a request-log batch's insert, a usage batch's transaction).
   */
  let awaited = 0;
  const settle = (answered: boolean) => {
    if (answered && awaited > 0 && --awaited === 0) handle.unref();
  };
  worker.onmessage = (event: MessageEvent<UpkeepReport>) => {
    const { service, ...report } = event.data;
    settle("id" in report);
    handlers[service]?.(report);
  };
  worker.onerror = (event) => {
    // Its services fail what waits (service-client.ts): nothing is awaited from it any more.
    awaited = 0;
    handle.unref();
    for (const failed of failures) failed(event.message);
  };
  handle.unref();
  const channel = <S extends UpkeepService>(service: S): ServiceChannel<UpkeepServices[S]["message"], UpkeepServices[S]["report"]> => ({
    post(message) {
      // A request (it has an id) is answered by a report with its id.
      if ("id" in message && awaited++ === 0) handle.ref();
      worker.postMessage({ service, ...message } as UpkeepMessage);
    },
    listen(handler, failed) {
      handlers[service] = handler as (report: unknown) => void;
      failures.push(failed);
    },
  });
  return { checkpoint: channel("checkpoint"), log: channel("log"), usage: channel("usage"), terminate: () => worker.terminate() };
}

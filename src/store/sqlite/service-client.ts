import type { ServiceMessage, ServiceReport } from "./service-host.ts";
import type { ServiceChannel } from "./upkeep-thread.ts";

/** An upkeep service's error, with SQLite's code when it had one; `outcomeUnknown` when the thread failed before it answered. */
export class ServiceError extends Error {
  constructor(
    message: string,
    readonly code?: string,
    readonly outcomeUnknown = false,
  ) {
    super(message);
  }
}

export interface ServiceClient<Request, Answer> {
  /** Resolves with the service's answer to `request`; rejects with a ServiceError. */
  ask(request: Request): Promise<Answer>;
  /** Asks the service to close its connection (2 s at most), then rejects what still waits with `error`. */
  stop(error: Error): Promise<void>;
  /** False once the thread failed: requests are refused at once from then on. */
  alive(): boolean;
}

/**
 * The serving thread's end of a service that answers requests by id (the request log's
 * writer, the usage writer): starts it on `path` and resolves once it is ready, with
 * the reason it could not start otherwise.
 */
export async function startServiceClient<Request extends { type: string }, Answer>(
  channel: ServiceChannel<ServiceMessage<Request>, ServiceReport<Answer>>,
  path: string,
): Promise<ServiceClient<Request, Answer> | { failed: string }> {
  let next = 0;
  let failedThread: string | undefined;
  const waiting = new Map<number, { resolve: (answer: Answer) => void; reject: (error: Error) => void }>();
  let started: ((outcome: string | undefined) => void) | undefined;
  const ready = new Promise<string | undefined>((resolve) => (started = resolve));
  const failAll = (error: Error) => {
    for (const entry of waiting.values()) entry.reject(error);
    waiting.clear();
  };
  channel.listen(
    (report) => {
      if (report.type === "ready") return started?.(undefined);
      if (report.type === "failed") return started?.(report.error);
      const entry = waiting.get(report.id);
      if (!entry) return;
      waiting.delete(report.id);
      if (report.type === "done") entry.resolve(report);
      else entry.reject(new ServiceError(report.error, report.code));
    },
    (error) => {
      failedThread = error;
      started?.(error);
      failAll(new ServiceError(error, undefined, true));
    },
  );
  channel.post({ type: "start", path });
  const failed = await ready;
  if (failed !== undefined) return { failed };
  const post = (request: Request | { type: "stop" }) =>
    new Promise<Answer>((resolve, reject) => {
      // Never posted: nothing of it happened.
      if (failedThread !== undefined) return reject(new ServiceError(`the upkeep thread failed: ${failedThread}`));
      const id = ++next;
      waiting.set(id, { resolve, reject });
      channel.post({ ...request, id } as ServiceMessage<Request>);
    });
  return {
    ask: post,
    async stop(error) {
      await Promise.race([post({ type: "stop" }), new Promise((resolve) => setTimeout(resolve, 2000).unref())]).catch(() => {});
      failAll(error);
    },
    alive: () => failedThread === undefined,
  };
}

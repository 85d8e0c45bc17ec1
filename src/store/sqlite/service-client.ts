import type { ServiceChannel } from "./upkeep-thread.ts";

/** The reports every request-answering service of the upkeep thread sends. */
type Lifecycle = { type: "ready" } | { type: "failed"; error: string };
type Refusal = { type: "error"; id: number; error: string; code?: string };

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

export interface ServiceClient<Request, Done> {
  /** Resolves with the service's answer to `request`; rejects with a ServiceError. */
  ask(request: Request): Promise<Done>;
  /** Rejects every request still waiting (the service stopped). */
  failAll(error: Error): void;
  /** False once the thread failed: requests are refused at once from then on. */
  alive(): boolean;
}

/**
 * The serving thread's end of a service that answers requests by id (the request log's
 * writer, the usage writer): starts it on `path` and resolves once it is ready, with
 * the reason it could not start otherwise.
 */
export async function startServiceClient<Request, Done extends { type: "done"; id: number }>(
  channel: ServiceChannel<{ type: "start"; path: string } | (Request & { id: number }), Lifecycle | Done | Refusal>,
  path: string,
): Promise<ServiceClient<Request, Done> | { failed: string }> {
  let next = 0;
  let failedThread: string | undefined;
  const waiting = new Map<number, { resolve: (done: Done) => void; reject: (error: Error) => void }>();
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
      if (report.type === "done") entry.resolve(report as Done);
      else entry.reject(new ServiceError((report as Refusal).error, (report as Refusal).code));
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
  return {
    ask: (request) =>
      new Promise<Done>((resolve, reject) => {
        // Never posted: nothing of it happened.
        if (failedThread !== undefined) return reject(new ServiceError(`the upkeep thread failed: ${failedThread}`));
        const id = ++next;
        waiting.set(id, { resolve, reject });
        channel.post({ ...request, id });
      }),
    failAll,
    alive: () => failedThread === undefined,
  };
}

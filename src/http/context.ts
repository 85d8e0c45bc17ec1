import type { Server } from "bun";

/**
 * What the server wrapper knows about a request and handlers may add to: the id
 * echoed in `X-Request-Id`, the client address, and the account for the log line.
 */
export interface RequestMeta {
  readonly id: string;
  readonly startedAt: number;
  /** Socket peer address (before any X-Forwarded-For interpretation), looked up on first use. */
  readonly peerIp: string | undefined;
  readonly server: Server<unknown> | undefined;
  accountId?: number;
}

const metas = new WeakMap<Request, RequestMeta>();

export function attachMeta(request: Request, meta: RequestMeta): void {
  metas.set(request, meta);
}

export function metaOf(request: Request): RequestMeta | undefined {
  return metas.get(request);
}

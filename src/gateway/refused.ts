import type { Clock } from "../core/clock.ts";
import { HttpError } from "../core/errors.ts";
import type { ClientCall } from "../formats/format.ts";
import { familyOfRequest } from "../formats/registry.ts";
import { metaOf } from "../http/context.ts";
import type { Caller } from "../http/plugins.ts";
import { refusedRow } from "../metering/request-log.ts";
import { RedisUnavailable } from "../state/redis/connection.ts";
import { startTrace, type TraceConfig } from "./trace.ts";

/** How far a refused call got: read (model, stream flag) and routed (effective model). */
export interface RefusedAt {
  call?: ClientCall;
  effectiveModel?: string;
}

/** The status and error kind a thrown error becomes for the client, when it is a refusal the log keeps. */
function refusalOf(error: unknown): { status: number; error: string } | undefined {
  if (error instanceof HttpError) return { status: error.status, error: error.code ?? error.kind };
  if (error instanceof RedisUnavailable) return { status: 503, error: "redis_unavailable" };
  return undefined;
}

/**
 * Puts a call the router refused after it knew the caller (AllowIPs and Resources 403,
 * a bad body 400, AllowModels 403, limits and credit 429, …) in the request log: no
 * attempt, no token, no cost. Runs only on the refusal's path; the row goes out with
 * the recorder's next batch. A call with a missing or unknown key (401) has no account
 * to scope it to and is not logged.
 */
export function logRefused(deps: { clock: Clock; config: TraceConfig }, request: Request, path: string, caller: Caller, error: unknown, at: RefusedAt = {}): void {
  const refusal = refusalOf(error);
  if (!refusal) return;
  const meta = metaOf(request);
  if (!meta) return;
  const durationMs = performance.now() - meta.startedAt;
  const trace = startTrace(request, deps.config);
  const { call } = at;
  caller.tenant.meter.refused(
    refusedRow({
      requestId: meta.id,
      tenantId: caller.tenant.tenantId,
      accountId: caller.principal.account.id,
      at: deps.clock.now() - durationMs,
      durationMs,
      family: call?.family ?? familyOfRequest(request, path),
      endpoint: call?.endpoint.path ?? path,
      requestedModel: call?.requestedModel,
      effectiveModel: at.effectiveModel,
      stream: call?.stream ?? false,
      status: refusal.status,
      error: refusal.error,
      clientIp: trace.clientIp,
      userAgent: trace.userAgent,
    }),
  );
}

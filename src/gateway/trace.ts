import type { ServeConfig } from "../config.ts";
import { clientIp } from "../http/client-ip.ts";
import { MAX_USER_AGENT, type CallTrace } from "../metering/request-log.ts";

/** What a trace needs of the configuration: whose address to trust, and whether calls are logged at all. */
export type TraceConfig = Pick<ServeConfig, "trustProxy" | "requestLogDays">;

/**
 * A model call's request-log trace as it starts: who called (address as the router
 * trusts it, user agent cut short), no attempt yet. Headers only: never the body.
 * With the request log off (`--request-log-days 0`) nothing reads who called, and the
 * socket's peer address is a system call per call (1.6-2.7 µs of CPU a call at c=32):
 * the attempts alone are kept (key health counts them).
 */
export function startTrace(request: Request, config: TraceConfig): CallTrace {
  if (config.requestLogDays === 0) return { attempts: [], reading: [] };
  return {
    attempts: [],
    reading: [],
    clientIp: clientIp(request, config.trustProxy),
    userAgent: request.headers.get("user-agent")?.slice(0, MAX_USER_AGENT) || undefined,
  };
}

import { clientIp } from "../http/client-ip.ts";
import { MAX_USER_AGENT, type CallTrace } from "../metering/request-log.ts";

/**
 * A model call's request-log trace as it starts: who called (address as the router
 * trusts it, user agent cut short), no attempt yet. Headers only: never the body.
 */
export function startTrace(request: Request, trustProxy: boolean): CallTrace {
  return {
    attempts: [],
    reading: [],
    clientIp: clientIp(request, trustProxy),
    userAgent: request.headers.get("user-agent")?.slice(0, MAX_USER_AGENT) || undefined,
  };
}

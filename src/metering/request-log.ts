import type { NewRequestLogRow } from "../store/store.ts";

/** One upstream attempt of a call, as the request log keeps it (never a secret, never a body). */
export interface AttemptFact {
  keyId: number;
  keyName: string;
  level: number;
  /** The upstream's HTTP status; absent when none arrived (timeout, refused, network). */
  status?: number;
  /** Why the attempt failed: `status`, `timeout`, `refused`, `network`, `blocked`, `non_answer`, `client_closed`. */
  error?: string;
  /** What the upstream or the connection said, redacted and cut short. */
  message?: string;
  durationMs: number;
  /** This attempt's answer went to the client. */
  answered: boolean;
  /** The upstream wire format the call was translated to, when the key did not speak the client's. */
  translatedTo?: string;
}

/**
 * What the request log keeps of a call besides its usage, gathered on the way: the
 * pipeline starts it (client address, user agent), the attempts add each attempt and
 * the time to first byte, and settlement hands it to the usage recorder.
 */
export interface CallTrace {
  readonly attempts: AttemptFact[];
  /** From the call's start to the answering upstream's first byte (a stream's first event). */
  ttfbMs?: number;
  readonly clientIp?: string;
  readonly userAgent?: string;
  /**
   * Failed attempts' error bodies still being read for their messages: the next key is
   * tried meanwhile, and the call's log row waits for these (at most about a second);
   * its charge and usage row do not.
   */
  readonly reading: Promise<void>[];
  /** Why the router refused the call itself before any attempt (no key could take it): its error code. */
  refusal?: string;
}

/** The call's facts beyond a usage row: absent, the call leaves no request-log row. */
export interface LoggedCall {
  tenantId: number;
  family: string;
  trace: CallTrace;
}

/** Longest user agent and attempt message kept: enough to recognise them, not a place to store text. */
export const MAX_USER_AGENT = 300;
export const MAX_MESSAGE = 500;

/** `,3,7,`: ids a LIKE on `%,3,%` finds (RequestLogFilter's key and Level). */
function idList(attempts: readonly AttemptFact[], pick: (attempt: AttemptFact) => number): string {
  // Nearly every call has one attempt: no set or array for it (this runs per call).
  if (attempts.length === 0) return ",";
  if (attempts.length === 1) return `,${pick(attempts[0]!)},`;
  return `,${[...new Set(attempts.map(pick))].join(",")},`;
}

/** The request-log row of a settled call: built on the request path, written with its usage row. */
export function requestLogRow(
  event: {
    requestId: string;
    accountId: number;
    endpoint: string;
    requestedModel: string | undefined;
    effectiveModel: string | undefined;
    status: number;
    stream: boolean;
    usage: { prompt: number; completion: number; cacheRead: number; cacheWrite: number; reasoning: number };
    source: string;
    latencyMs: number;
    at: number;
  },
  logged: LoggedCall,
  costNanos: number,
): NewRequestLogRow {
  const attempts = logged.trace.attempts;
  return {
    requestId: event.requestId,
    tenantId: logged.tenantId,
    accountId: event.accountId,
    createdAt: event.at,
    family: logged.family,
    endpoint: event.endpoint,
    requestedModel: event.requestedModel ?? null,
    effectiveModel: event.effectiveModel ?? null,
    stream: event.stream,
    status: event.status,
    // A call no key could take was the router's refusal, as those before admission are.
    ...(logged.trace.refusal !== undefined && { error: logged.trace.refusal }),
    attempts: JSON.stringify(attempts),
    keyIds: idList(attempts, (a) => a.keyId),
    levels: idList(attempts, (a) => a.level),
    ttfbMs: logged.trace.ttfbMs === undefined ? null : Math.round(logged.trace.ttfbMs),
    durationMs: Math.round(event.latencyMs),
    promptTokens: event.usage.prompt,
    completionTokens: event.usage.completion,
    cacheReadTokens: event.usage.cacheRead,
    cacheWriteTokens: event.usage.cacheWrite,
    reasoningTokens: event.usage.reasoning,
    costNanos,
    source: logged.trace.refusal !== undefined ? "none" : event.source,
    clientIp: logged.trace.clientIp ?? null,
    userAgent: logged.trace.userAgent?.slice(0, MAX_USER_AGENT) ?? null,
  };
}

/** A call the router refused before its first upstream attempt, as the request log keeps it. */
export interface RefusedCall {
  requestId: string;
  tenantId: number;
  accountId: number;
  /** When the call arrived (ms). */
  at: number;
  durationMs: number;
  family: string;
  endpoint: string;
  requestedModel: string | undefined;
  effectiveModel: string | undefined;
  stream: boolean;
  status: number;
  /** The refusal's code (`rpm_limit_reached`, `model_not_allowed`, …), or its type when it has none. */
  error: string;
  clientIp: string | undefined;
  userAgent: string | undefined;
}

/** The request-log row of a refused call: no attempt, no token, no cost. */
export function refusedRow(call: RefusedCall): NewRequestLogRow {
  return {
    requestId: call.requestId,
    tenantId: call.tenantId,
    accountId: call.accountId,
    createdAt: call.at,
    family: call.family,
    endpoint: call.endpoint,
    requestedModel: call.requestedModel ?? null,
    effectiveModel: call.effectiveModel ?? null,
    stream: call.stream,
    status: call.status,
    error: call.error,
    attempts: "[]",
    keyIds: ",",
    levels: ",",
    ttfbMs: null,
    durationMs: Math.max(0, Math.round(call.durationMs)),
    costNanos: 0,
    source: "none",
    clientIp: call.clientIp ?? null,
    userAgent: call.userAgent?.slice(0, MAX_USER_AGENT) ?? null,
  };
}

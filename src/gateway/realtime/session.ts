import type { ServerWebSocket } from "bun";
import type { Tenant } from "../../tenancy/tenants.ts";
import type { EphemeralGrant } from "./handshake.ts";
import type { Principal } from "../../accounts/principal.ts";
import type { Clock } from "../../core/clock.ts";
import type { Admission, Meter } from "../../metering/meter.ts";
import type { UsageSink } from "../../metering/usage-recorder.ts";
import type { Endpoint } from "../../formats/format.ts";
import type { Usage, UsageSource } from "../../formats/usage.ts";
import { REALTIME_PATH } from "./handshake.ts";
import type { PickedKey } from "./pick.ts";

/** Realtime sessions are token-billed by ChatPricing on the effective model, one admission per response. */
export const REALTIME_ENDPOINT: Endpoint = { family: "openai", path: REALTIME_PATH, model: "none", idempotent: false, statefulInput: true };

/** How a session ended first, and by whom. */
export interface SessionEnd {
  by: "client" | "upstream" | "router";
  code: number;
  reason: string;
}

/**
 * Everything one bridged session holds; nothing is kept elsewhere per session, and
 * all of it is dropped when the session ends.
 */
export interface RealtimeSession {
  /** The upgrade request's id: every usage row of the session carries it. */
  readonly id: string;
  readonly principal: Principal;
  /** The principal's tenant: its keys, switch-over state and meter serve the session. */
  readonly tenant: Tenant;
  /** Opened with a client secret: only its key, with the secret as the credential. */
  readonly ephemeral: EphemeralGrant | undefined;
  readonly requestedModel: string;
  readonly effectiveModel: string;
  /** The Level the model routes to. */
  readonly level: number;
  readonly beta: string | undefined;
  /** The client's address at the upgrade: AllowIPs is checked again against it when the account changes. */
  readonly clientIp: string | undefined;
  readonly openedAt: number;
  /** The key in use (in flight in the pool) while connecting or connected. */
  picked: PickedKey | undefined;
  readonly tried: Set<number>;
  attempts: number;
  /** The reservation the next `response.done` settles. */
  admission: Admission | undefined;
  admittedAt: number;
  /** When the response under way started (its `response.created`), if one is. */
  responseStartedAt: number | undefined;
  /** Responses created and not done yet (out-of-band responses may run side by side). */
  underWay: number;
  /**
   * Bytes of text the response under way generated (text, transcripts, tool arguments)
   * as read from the upstream: what a cut response without usage is estimated on.
   */
  generatedBytes: number;
  /**
   * Set while the client side is closed and a response under way is still read for its
   * `response.done` (until the drain deadline): a stop waits for it (`EndingCalls`).
   */
  drain: { readonly ended: Promise<void>; readonly end: () => void } | undefined;
  /**
   * The last response's charge until the State counted it, when it landed in a day other
   * than its reservation's (midnight passed): the next response is admitted after it.
   */
  charging: Promise<void> | undefined;
  /** The start of the last response's usage row: each row of the session starts later (see `settle`). */
  lastRowAt: number;
  responses: number;
  client: ServerWebSocket<RealtimeSession> | undefined;
  upstream: WebSocket | undefined;
  upstreamOpen: boolean;
  upstreamClosed: boolean;
  /** Client frames that arrived before the upstream was open. */
  pending: Array<string | Uint8Array<ArrayBuffer>>;
  pendingBytes: number;
  lastActivity: number;
  clientClosed: boolean;
  end: SessionEnd | undefined;
  /** Status for the closing usage row when the upstream refused the session. */
  failStatus: number | undefined;
  finished: boolean;
  /** The connect timeout while connecting; the drain deadline after the client side closed. */
  timer: ReturnType<typeof setTimeout> | undefined;
}

export function newSession(fields: {
  id: string;
  principal: Principal;
  tenant: Tenant;
  ephemeral: EphemeralGrant | undefined;
  requestedModel: string;
  effectiveModel: string;
  level: number;
  beta: string | undefined;
  clientIp: string | undefined;
  picked: PickedKey | undefined;
  tried: Set<number>;
  admission: Admission;
  now: number;
}): RealtimeSession {
  const { now, ...rest } = fields;
  return {
    ...rest,
    openedAt: now,
    attempts: 1,
    admittedAt: now,
    responseStartedAt: undefined,
    underWay: 0,
    generatedBytes: 0,
    drain: undefined,
    charging: undefined,
    lastRowAt: -Infinity,
    responses: 0,
    client: undefined,
    upstream: undefined,
    upstreamOpen: false,
    upstreamClosed: false,
    pending: [],
    pendingBytes: 0,
    lastActivity: now,
    clientClosed: false,
    end: undefined,
    failStatus: undefined,
    finished: false,
    timer: undefined,
  };
}

/** Admission and charging for sessions: every admission settles in exactly one usage row. */
export function createSessionMeter(tenant: { meter: Meter & UsageSink }, clock: Clock) {
  return {
    /** A fresh reservation for the next response; throws the meter's HttpError when refused. */
    admit(principal: Principal, effectiveModel: string): Promise<Admission> {
      return tenant.meter.admit({ principal, endpoint: REALTIME_ENDPOINT, effectiveModel, json: undefined, bodyBytes: 0 });
    },
    /** Lets go of the current admission without a usage row: no response used it. */
    release(session: RealtimeSession): void {
      const admission = session.admission;
      if (!admission) return;
      session.admission = undefined;
      // Redis away: the State sends it again once Redis answers (repairs.ts); unhandled, the rejection would end the process.
      void tenant.meter.release(admission).catch(() => {});
    },
    /**
     * Settles the session's current admission with one usage row; the promise settles once
     * its charge is counted in the State (`Meter.settle`). Undefined: nothing to settle.
     */
    settle(session: RealtimeSession, status: number, usage: Usage, source: UsageSource, at: number): Promise<void> | undefined {
      const admission = session.admission;
      if (!admission) return undefined;
      session.admission = undefined;
      // The session's rows share its id: a row is told from another (and written once) by
      // its start, so two responses starting in one millisecond start a millisecond apart.
      at = Math.max(at, session.lastRowAt + 1);
      session.lastRowAt = at;
      return tenant.meter.settle({
        requestId: session.id,
        accountId: session.principal.account.id,
        endpoint: REALTIME_PATH,
        requestedModel: session.requestedModel,
        effectiveModel: session.effectiveModel,
        level: session.picked?.level ?? session.level,
        keyId: session.picked?.key.id,
        status,
        stream: true,
        usage,
        source,
        latencyMs: clock.now() - at,
        at,
        admission,
      });
    },
  };
}

export type SessionMeter = ReturnType<typeof createSessionMeter>;

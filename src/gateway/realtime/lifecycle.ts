import type { ServerWebSocket, WebSocketHandler } from "bun";
import { HttpError } from "../../core/errors.ts";
import type { ServeConfig } from "../../config.ts";
import type { Clock } from "../../core/clock.ts";
import type { InvalidationBus } from "../../core/invalidation.ts";
import type { Logger } from "../../core/log.ts";
import type { Store } from "../../store/store.ts";
import type { AddressGuard } from "../../upstreams/address-policy.ts";
import { redact } from "../../core/redact.ts";
import { ZERO_USAGE, type Usage } from "../../formats/usage.ts";
import type { EndingCalls } from "../ending-calls.ts";
import { estimateTokens } from "../usage/content-count.ts";
import { dialUpstream, dropUpstream, type UpstreamEvents } from "./connect.ts";
import { closeReason, errorEvent, refusalOf, sendableCloseCode } from "./events.ts";
import { pickRealtimeKey } from "./pick.ts";
import { createSessionMeter, type RealtimeSession } from "./session.ts";
import { revocationOf } from "./revocation.ts";
import { generatedTextBytes, isResponseCreated, responseDoneOf, saysQuotaSpent } from "./usage.ts";

export interface LifecycleOptions {
  /** A session with no frame either way for this long is closed (1000 "idle"). */
  idleMs: number;
  /** Client bytes held while the upstream connects; more closes the session with 1009. */
  pendingLimit: number;
  /** Client bytes queued towards a slow upstream before the session is closed (1013). */
  upstreamBufferLimit: number;
  connectTimeoutMs: number;
  /**
   * After the client side closed, how long a response under way is still read for its
   * `response.done` (and how long the upstream may take to close): the HTTP streams'
   * `--drain-timeout`, which also bounds how long a stop waits for them.
   */
  drainMs: number;
}

/**
 * The life of bridged sessions: connecting upstream (with failover to another key
 * before anything was exchanged), relaying frames both ways, charging each
 * `response.done`, propagating closes, and cleaning up idle sessions.
 */
type SettleRest = Parameters<ReturnType<typeof createSessionMeter>["settle"]> extends [unknown, ...infer Rest] ? Rest : never;

export interface LifecycleDeps {
  readonly config: Pick<ServeConfig, "maxAttempts">;
  readonly clock: Clock;
  readonly log: Logger;
  readonly store: { readonly accounts: Pick<Store["accounts"], "byId"> };
  readonly bus: Pick<InvalidationBus, "subscribe">;
  readonly upstreamTls: { ca: string[] } | undefined;
  readonly addressGuard: Pick<AddressGuard, "check">;
  /** Responses still read for their usage after the client side closed: a stop waits for them before its last usage write. */
  readonly endingCalls: Pick<EndingCalls, "add" | "done">;
}

export function createLifecycle(deps: LifecycleDeps, options: LifecycleOptions) {
  const { clock, log } = deps;
  // Health writes outside any request: one the State cannot make (Redis away) is logged; unhandled, Bun would end the process.
  const unrecorded = (what: string, req: string) => (error: unknown) => log.warn(`realtime: ${what} could not be recorded`, { req, error: (error as Error)?.message });
  // Keys, switch-over state and meter belong to the session's tenant.
  const metering = {
    settle: (session: RealtimeSession, ...rest: SettleRest) => createSessionMeter(session.tenant, clock).settle(session, ...rest),
    release: (session: RealtimeSession) => createSessionMeter(session.tenant, clock).release(session),
    admit: (session: RealtimeSession) => createSessionMeter(session.tenant, clock).admit(session.principal, session.effectiveModel),
  };
  const live = new Set<RealtimeSession>();
  let sweeper: ReturnType<typeof setInterval> | undefined;
  const dial = { tls: deps.upstreamTls, connectTimeoutMs: options.connectTimeoutMs, checkUrl: (url: string) => deps.addressGuard.check(url) };

  /**
   * Re-checks live sessions after a change (docs/api.md, "Realtime"): those of `accountId`
   * and its subtree, or of a tenant, or all. A session its key or access no longer allows
   * gets an `error` event and is closed with 1008; what it used is metered as it ends.
   */
  const recheck = async (filter: { accountId?: number; tenantId?: number }) => {
    for (const session of [...live]) {
      if (session.finished || session.clientClosed) continue;
      if (filter.accountId !== undefined && !session.principal.account.path.includes(`/${filter.accountId}/`)) continue;
      if (filter.tenantId !== undefined && session.tenant.tenantId !== filter.tenantId) continue;
      const why = await revocationOf(session, (id) => deps.store.accounts.byId(id));
      if (!why || session.finished || session.clientClosed) continue;
      log.info("realtime session revoked", { req: session.id, account: session.principal.account.id, why });
      sendToClient(session, errorEvent("invalid_request_error", "session_revoked", `The session was closed: ${why}`));
      closeByRouter(session, 1008, closeReason(why));
    }
  };
  // The bus waits for these, so a write's response follows the sessions it ended.
  deps.bus.subscribe((event) => {
    if (event.kind === "account") return recheck({ accountId: event.accountId });
    if (event.kind === "config") {
      // The tenant's settings are read again first: the bus's other subscriber reloading
      // them runs alongside, and a re-check ahead of it would judge by the old RESOURCES.
      const tenant = [...live].find((session) => session.tenant.tenantId === event.tenantId)?.tenant;
      return tenant ? tenant.settings.reload().then(() => recheck({ tenantId: event.tenantId })) : undefined;
    }
    if (event.kind === "everything") return recheck({});
  });

  const sweep = () => {
    const now = clock.now();
    for (const session of live) if (now - session.lastActivity >= options.idleMs) closeByRouter(session, 1000, "idle");
  };

  /**
   * The router ends a session: the client gets `code`, the upstream a plain 1000 (once a
   * response under way is done, as when the client leaves).
   */
  const closeByRouter = (session: RealtimeSession, code: number, reason: string) => {
    session.end ??= { by: "router", code, reason };
    if (session.client && !session.clientClosed) {
      const client = session.client;
      // At once, not when Bun reports the close: a stop (closeAll) must know whether the session drains.
      clientGone(session, code, reason);
      client.close(code, closeReason(reason));
    } else finish(session);
  };

  /** The status of a response the client did not see to its end: 499 when it left, 502 when the router or the upstream ended it. */
  const cutStatus = (session: RealtimeSession) => (session.end?.by === "client" ? 499 : 502);

  /**
   * What a response the upstream reported no usage for is charged: the text it generated
   * (as read, about 4 bytes a token, as for HTTP streams); the meter caps it within the
   * response's reservation. The input is not estimated: the conversation it read is held
   * upstream, out of the router's sight. A response that generated nothing costs nothing.
   */
  const estimateOf = (session: RealtimeSession): Usage => (session.generatedBytes > 0 ? { ...ZERO_USAGE, completion: estimateTokens(session.generatedBytes) } : ZERO_USAGE);

  /** Closes the upstream as the session's end says: with the client's own code when it left. */
  const closeUpstream = (session: RealtimeSession) => {
    const end = session.end;
    if (end?.by === "client") dropUpstream(session, sendableCloseCode(end.code), closeReason(end.reason));
    else dropUpstream(session, 1000, "session ended");
  };

  /**
   * The client side closed (the client left, or the router closed it). Between responses
   * the upstream is closed and the session ends with it. While a response is under way
   * the upstream is not cut, since it is generating (and charging) already: it is read
   * on, as an HTTP stream is, until its `response.done` (charged with its usage) or the
   * drain deadline (charged an estimate of what it generated).
   */
  const clientGone = (session: RealtimeSession, code: number, reason: string) => {
    if (session.clientClosed) return;
    session.clientClosed = true;
    session.client = undefined;
    session.pending = [];
    session.pendingBytes = 0;
    session.end ??= { by: "client", code, reason };
    if (session.finished) return;
    const upstream = session.upstream;
    if (!upstream || session.upstreamClosed || !session.upstreamOpen) return finish(session);
    clearTimeout(session.timer);
    session.timer = setTimeout(() => finish(session), options.drainMs);
    if (session.underWay === 0) {
      // Its frames are still read until it closes: a response.done already on its way still counts.
      const end = session.end;
      upstream.close(end.by === "client" ? sendableCloseCode(end.code) : 1000, closeReason(end.by === "client" ? end.reason : "session ended"));
      return;
    }
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    session.drain = { ended, end };
    deps.endingCalls.add(ended);
  };

  const sendToClient = (session: RealtimeSession, data: string | ArrayBuffer) => {
    if (!session.client || session.clientClosed) return;
    // 0: dropped past the backpressure limit; never lose a frame silently.
    if (session.client.send(data) === 0) closeByRouter(session, 1013, "the client is not reading fast enough");
  };

  /** Ends a session for good: one closing usage row, the key released, every reference dropped. */
  const finish = (session: RealtimeSession) => {
    if (session.finished) return;
    session.finished = true;
    live.delete(session);
    if (live.size === 0 && sweeper) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
    clearTimeout(session.timer);
    session.timer = undefined;
    const end = session.end;
    closeUpstream(session);
    const inProgress = session.underWay > 0;
    // Requests count responses: a close between responses writes no row, it only frees
    // the reservation held for the next one. A response cut short still leaves its row,
    // charged for the text it generated (nothing, when it generated none).
    if (session.failStatus === undefined && !inProgress) metering.release(session);
    else metering.settle(session, session.failStatus ?? cutStatus(session), estimateOf(session), "estimated", session.responseStartedAt ?? session.admittedAt);
    if (session.drain) {
      deps.endingCalls.done(session.drain.ended);
      session.drain.end();
      session.drain = undefined;
    }
    if (session.picked) void session.tenant.pool.release(session.picked.key);
    session.picked = undefined;
    session.pending = [];
    session.pendingBytes = 0;
    session.client = undefined;
    log.info("realtime session ended", {
      req: session.id,
      account: session.principal.account.id,
      model: session.effectiveModel,
      responses: session.responses,
      by: end?.by,
      code: end?.code,
      seconds: Math.round((clock.now() - session.openedAt) / 1000),
    });
  };

  /** Follows the responses in an upstream text frame; a `response.done` is charged (true). */
  const charge = (session: RealtimeSession, text: string): boolean => {
    const done = responseDoneOf(text);
    if (!done) {
      if (isResponseCreated(text)) {
        session.underWay++;
        session.responseStartedAt ??= clock.now();
      } else if (session.underWay > 0) session.generatedBytes += generatedTextBytes(text);
      return false;
    }
    const at = session.responseStartedAt ?? session.admittedAt;
    // Read after the client side closed: the client did not see it end.
    const status = session.clientClosed ? cutStatus(session) : done.status === "failed" ? 502 : 200;
    const reservedOn = session.admission?.day;
    const counted = metering.settle(session, status, done.usage ?? estimateOf(session), done.usage ? "upstream" : "estimated", at);
    // Across midnight the charge goes to a day that never held its reservation: until the
    // State counted it, the new day's DailyLimit would not see it, so the next response
    // waits for it. Within a day nothing waits: the reservation already counted more.
    if (counted && reservedOn !== clock.businessDate(at)) session.charging = counted;
    session.responses++;
    session.underWay = Math.max(0, session.underWay - 1);
    session.responseStartedAt = undefined;
    session.generatedBytes = 0;
    return true;
  };

  /** The next response's reservation; a refusal closes the session. */
  const readmit = async (session: RealtimeSession) => {
    const charging = session.charging;
    session.charging = undefined;
    try {
      if (charging) await charging;
      session.admission = await metering.admit(session);
      session.admittedAt = clock.now();
      // The session ended while this was admitted: nothing will settle it, so it is let go now.
      if (session.finished) metering.release(session);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      const refusal = refusalOf(error);
      sendToClient(session, refusal.event);
      closeByRouter(session, refusal.code, refusal.reason);
    }
  };

  /** After a failed dial: the next key, or the end of the session. */
  const redial = async (session: RealtimeSession): Promise<void> => {
    // A client-secret session lives on its key alone: no other key knows the secret.
    // A key the State cannot read (Redis away) is none: the client is told, the process goes on.
    const next =
      !session.ephemeral && session.attempts < deps.config.maxAttempts ? await pickRealtimeKey(session.tenant, clock, session.level, session.tried).catch((error: unknown) => void log.warn("realtime: no other key could be read", { req: session.id, error: (error as Error)?.message })) : undefined;
    if (next && session.clientClosed) {
      void session.tenant.pool.release(next.key);
      return finish(session);
    }
    if (next) {
      session.picked = next;
      session.attempts++;
      return dialUpstream(session, dial, events);
    }
    if (session.clientClosed) return finish(session);
    session.failStatus = 502;
    sendToClient(session, errorEvent("server_error", "upstream_unavailable", "No upstream realtime endpoint could be reached; try again later"));
    closeByRouter(session, 1011, "upstream unavailable");
  };

  const events: UpstreamEvents = {
    open(session) {
      const { key, level, probe } = session.picked!;
      const { pool, switchOver } = session.tenant;
      void pool.report(key, { kind: "success" });
      void switchOver.recordSuccess(level, probe).catch(unrecorded("the Level's recovery", session.id));
      for (const frame of session.pending) session.upstream!.send(frame);
      session.pending = [];
      session.pendingBytes = 0;
    },
    message(session, data) {
      session.lastActivity = clock.now();
      const done = typeof data === "string" && charge(session, data);
      // A spent quota: the key is put aside like a 401 (new sessions go to another key); this
      // session's client hears it from the upstream's own event, as sent.
      if (typeof data === "string" && session.picked && saysQuotaSpent(data)) {
        log.warn("realtime upstream says the key's quota is spent", { req: session.id, key: session.picked.key.id });
        void session.tenant.pool.report(session.picked.key, { kind: "credential" });
      }
      if (!session.clientClosed) sendToClient(session, data);
      if (!done) return;
      // With the client side closed the upstream is read only while responses are under way.
      if (session.clientClosed && session.underWay === 0) return finish(session);
      void readmit(session).catch((error: unknown) => log.error("realtime readmission failed", { req: session.id, error: (error as Error).message }));
    },
    closed(session, code, reason) {
      if (session.clientClosed) return finish(session);
      session.end ??= { by: "upstream", code, reason };
      session.client?.close(sendableCloseCode(code), closeReason(reason));
    },
    failed(session, failure, message) {
      const { key, level, probe } = session.picked!;
      const { pool, switchOver } = session.tenant;
      log.warn("realtime upstream did not connect", { req: session.id, key: key.id, key_level: level, failure: failure.kind, error: redact(message ?? "") });
      if (failure.kind === "blocked") {
        void pool.markUnusable(key, failure.reason);
        if (probe) void switchOver.abandonProbe(level).catch(unrecorded("the end of the Level's probe", session.id));
      } else if (failure.kind === "client") {
        void pool.report(key, { kind: "success" });
        void switchOver.recordSuccess(level, probe).catch(unrecorded("the Level's recovery", session.id));
      } else {
        void pool.report(key, failure.kind === "credential" ? { kind: "credential" } : { kind: "retryable" });
        if (failure.kind === "retryable") void switchOver.recordError(level, clock.now()).catch(unrecorded("the Level's error", session.id));
        if (probe) void switchOver.abandonProbe(level).catch(unrecorded("the end of the Level's probe", session.id));
      }
      void pool.release(key);
      session.tried.add(key.id);
      session.picked = undefined;
      session.upstream = undefined;
      if (session.clientClosed) return finish(session);
      if (failure.kind === "client") {
        session.failStatus = failure.status;
        const text = failure.secret
          ? `The upstream refused the client secret (HTTP ${failure.status}); it may have expired: create a new one`
          : `The upstream refused the realtime session (HTTP ${failure.status}); check the model and session parameters`;
        sendToClient(session, errorEvent("invalid_request_error", failure.secret ? "client_secret_refused" : "upstream_refused", text));
        return closeByRouter(session, 1008, `upstream refused the session (HTTP ${failure.status})`);
      }
      void redial(session);
    },
  };

  const websocket: WebSocketHandler<RealtimeSession> = {
    // Half-open clients: Bun pings before this runs out and drops clients that do not answer.
    idleTimeout: 120,
    sendPings: true,
    perMessageDeflate: false,
    maxPayloadLength: 16 * 1024 * 1024,
    open(ws: ServerWebSocket<RealtimeSession>) {
      const session = ws.data;
      session.client = ws;
      session.lastActivity = clock.now();
      live.add(session);
      sweeper ??= setInterval(sweep, Math.max(50, Math.min(options.idleMs / 4, 30_000)));
      sweeper.unref?.();
      dialUpstream(session, dial, events);
    },
    message(ws, message) {
      const session = ws.data;
      if (session.clientClosed || session.finished) return;
      session.lastActivity = clock.now();
      const upstream = session.upstream;
      if (upstream && session.upstreamOpen) {
        upstream.send(message);
        if (upstream.bufferedAmount > options.upstreamBufferLimit) closeByRouter(session, 1013, "the upstream is not reading fast enough");
        return;
      }
      const frame = typeof message === "string" ? message : new Uint8Array(message);
      session.pendingBytes += typeof frame === "string" ? Buffer.byteLength(frame) : frame.byteLength;
      if (session.pendingBytes > options.pendingLimit) {
        session.pending = [];
        return closeByRouter(session, 1009, "too much data before the upstream connected");
      }
      session.pending.push(frame);
    },
    close(ws, code, reason) {
      clientGone(ws.data, code, reason);
    },
    error(error, ws) {
      log.error("realtime session failed", { req: ws.data.id, error: redact(error.message) });
    },
  };

  return {
    websocket,
    /** Sessions open now. */
    size: () => live.size,
    /**
     * Closes every session's client now (shutdown). Sessions end at once, settled without
     * waiting for their upstreams, except those with a response under way: read on for its
     * usage until the drain deadline, as when a client leaves, and the stop waits for them.
     */
    closeAll(code = 1001, reason = "server shutting down") {
      for (const session of [...live]) {
        if (session.drain) continue;
        closeByRouter(session, code, reason);
        if (!session.drain) finish(session);
      }
    },
  };
}

export type Lifecycle = ReturnType<typeof createLifecycle>;

import type { RealtimeSession } from "./session.ts";
import { classifyHandshakeFailure, realtimeTarget, type HandshakeFailure } from "./upstream.ts";

/** What the bridge hears from one upstream connection. */
export interface UpstreamEvents {
  open(session: RealtimeSession): void;
  message(session: RealtimeSession, data: string | ArrayBuffer): void;
  /** The open connection ended (code and reason as the upstream reported them). */
  closed(session: RealtimeSession, code: number, reason: string): void;
  /** The connection never opened. */
  failed(session: RealtimeSession, failure: HandshakeFailure, message: string | undefined): void;
}

export interface DialOptions {
  tls: { ca: string[] } | undefined;
  connectTimeoutMs: number;
  /** The upstream address policy: why the URL's host may not be reached, or undefined. */
  checkUrl(url: string): Promise<string | undefined>;
}

/**
 * Opens the upstream WebSocket of a session with the key it holds. Events of a socket
 * the session has since let go of (failover, end) are ignored.
 */
export function dialUpstream(session: RealtimeSession, options: DialOptions, events: UpstreamEvents): void {
  const picked = session.picked!;
  const target = realtimeTarget(picked.key, session.effectiveModel, session.beta, session.ephemeral?.token);
  // The key's secret goes in the upgrade's headers: only where the address policy allows.
  void options.checkUrl(target.url).then((refusal) => {
    // The client left, or the session moved on, while the name was being resolved.
    if (session.clientClosed || session.finished || session.picked !== picked) return;
    if (refusal) events.failed(session, { kind: "blocked", reason: refusal }, refusal);
    else openSocket(session, target, options, events);
  });
}

function openSocket(session: RealtimeSession, target: ReturnType<typeof realtimeTarget>, options: DialOptions, events: UpstreamEvents): void {
  let timedOut = false;
  let errorMessage: string | undefined;
  const init: Bun.WebSocketOptions = {
    headers: target.headers,
    // Per-socket zlib contexts cost memory on every session; realtime audio barely compresses.
    perMessageDeflate: false,
    ...(options.tls ? { tls: options.tls } : {}),
  };
  // Bun's client takes headers and TLS options; the DOM typing only knows subprotocols.
  const socket = new WebSocket(target.url, init as unknown as string[]);
  socket.binaryType = "arraybuffer";
  session.upstream = socket;
  session.upstreamOpen = false;
  session.upstreamClosed = false;
  clearTimeout(session.timer);
  session.timer = setTimeout(() => {
    timedOut = true;
    socket.close();
  }, options.connectTimeoutMs);

  socket.onopen = () => {
    if (session.upstream !== socket) return;
    clearTimeout(session.timer);
    session.timer = undefined;
    session.upstreamOpen = true;
    events.open(session);
  };
  socket.onmessage = (event) => {
    if (session.upstream === socket) events.message(session, event.data as string | ArrayBuffer);
  };
  socket.onerror = (event) => {
    errorMessage = (event as ErrorEvent).message;
  };
  socket.onclose = (event) => {
    socket.onopen = socket.onmessage = socket.onerror = socket.onclose = null;
    if (session.upstream !== socket) return;
    session.upstreamClosed = true;
    if (session.upstreamOpen) {
      events.closed(session, event.code, event.reason);
      return;
    }
    clearTimeout(session.timer);
    session.timer = undefined;
    events.failed(session, timedOut ? { kind: "retryable" } : classifyHandshakeFailure(errorMessage, session.ephemeral !== undefined), timedOut ? "connect timeout" : errorMessage);
  };
}

/** Lets go of a session's upstream socket: no more events reach the session, and it is closed. */
export function dropUpstream(session: RealtimeSession, code: number, reason: string): void {
  const socket = session.upstream;
  session.upstream = undefined;
  if (!socket) return;
  socket.onopen = socket.onmessage = socket.onerror = socket.onclose = null;
  if (socket.readyState === WebSocket.CLOSED || socket.readyState === WebSocket.CLOSING) return;
  try {
    if (socket.readyState === WebSocket.OPEN) socket.close(code, reason);
    else socket.close();
  } catch {
    socket.close();
  }
}

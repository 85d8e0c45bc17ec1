import type { Server } from "bun";
import { createIdempotency } from "./http/idempotency.ts";
import { afterAnswer } from "./core/after-answer.ts";
import { createApp } from "./app.ts";
import { HttpError } from "./core/errors.ts";
import { requestId } from "./core/ids.ts";
import { pathOnly } from "./core/redact.ts";
import { familyOfRequest } from "./formats/registry.ts";
import type { Deps } from "./deps.ts";
import { errorResponse } from "./http/envelopes.ts";
import { attachMeta, type RequestMeta } from "./http/context.ts";
import { createRealtimeBridge, type RealtimeSession } from "./gateway/realtime/bridge.ts";
import { consoleRoutes } from "./console/routes.ts";
import type { HotRoutes } from "./gateway/routes.ts";
import { thrownResponse } from "./http/error-response.ts";
import { corsPolicy, DEFAULT_CORS_ORIGINS } from "./http/cors.ts";

export interface RunningServer {
  readonly server: Server<unknown>;
  /** e.g. `http://127.0.0.1:8080` (the port actually bound). */
  readonly url: string;
  readonly port: number;
  /**
   * Graceful stop: /readyz answers 503 at once while the socket still listens for
   * `drainPauseMs` (by default min(grace, 5 s) with --redis, else none: see
   * `defaultDrainPauseMs`) so a load balancer sees it and sends no more;
   * then refuse new connections, let in-flight requests finish within the grace period,
   * close the store.
   */
  stop(graceSeconds?: number, drainPauseMs?: number): Promise<void>;
}

/** Bun answers a bare 413 above this; our own limit (--max-body) must always bite first. */
const BUN_BODY_CEILING = Number.MAX_SAFE_INTEGER;
/** Idle seconds before Bun closes a silent connection; streaming routes lift it per request. */
const IDLE_TIMEOUT_SECONDS = 120;

/** The longest pause between /readyz turning 503 and the socket closing, in a graceful stop. */
export const MAX_DRAIN_PAUSE_SECONDS = 5;

/**
 * Only an instance that may have peers (several instances share a database through
 * Redis) sits behind a load balancer that can send its calls elsewhere: it pauses. A
 * single instance has nowhere to drain to, and stops at once as it always did.
 */
export function defaultDrainPauseMs(shared: boolean, graceSeconds: number): number {
  return shared ? Math.min(graceSeconds, MAX_DRAIN_PAUSE_SECONDS) * 1000 : 0;
}

export class ServeError extends Error {}

/**
 * Fails with the same message `startServer` would when the address cannot be listened
 * on, before anything is created: `serve` asks this first, so a port in use leaves no
 * database and no initial-owner-key behind. (Port 0 always works.)
 */
export function assertCanListen(host: string, port: number): void {
  if (port === 0) return;
  try {
    const probe = Bun.listen({ hostname: host, port, socket: { data() {} } });
    probe.stop(true);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "EADDRINUSE") throw new ServeError(`port ${port} on ${host} is already in use`);
    if (code === "EACCES") throw new ServeError(`not allowed to listen on ${host}:${port}`);
    throw new ServeError(`cannot listen on ${host}:${port}: ${(error as Error).message}`);
  }
}

/** The response with a header set; one whose headers are immutable is re-wrapped, its body not copied. */
function withHeader(response: Response, name: string, value: string): Response {
  try {
    response.headers.set(name, value);
    return response;
  } catch {
    const wrapped = new Response(response.body, response);
    wrapped.headers.set(name, value);
    return wrapped;
  }
}

export function startServer(deps: Deps): RunningServer {
  const { config, log } = deps;
  const hot: HotRoutes = new Map();
  const app = createApp(deps, hot);
  /** A model call by its exact path, ahead of Elysia's router. */
  const handleHot = async (route: HotRoutes extends Map<string, infer R> ? R : never, request: Request, path: string): Promise<Response> => {
    try {
      return await route(request, path);
    } catch (error) {
      return thrownResponse(deps, error, request, path);
    }
  };
  // GET /v1/realtime is upgraded to a WebSocket here, ahead of the HTTP app.
  const realtime = createRealtimeBridge(deps);
  // Management writes with an Idempotency-Key run once (http/idempotency.ts).
  const idempotent = createIdempotency({ ...deps, refuse: (error, request, path) => thrownResponse(deps, error, request, path) });
  const handleApp = (request: Request) => app.handle(request);
  // Browser apps' preflights are answered here, before any route (and any key check).
  const cors = corsPolicy(config.corsOrigins ?? DEFAULT_CORS_ORIGINS, {
    setHeader: withHeader,
    refuse: (request) => {
      const path = pathOnly(request.url);
      return errorResponse(familyOfRequest(request, path), new HttpError("permission", "This router takes no calls from pages of this origin (--cors-origins)", { code: "origin_not_allowed" }));
    },
  });
  /** The app behind the Idempotency-Key check, whose own store reads may fail (the database away). */
  const handleManaged = async (request: Request, path: string): Promise<Response> => {
    let response: Response;
    try {
      response = await idempotent(request, path, handleApp);
    } catch (error) {
      response = thrownResponse(deps, error, request, path);
    }
    // Management answers can hold a new API key or an opened provider secret: no cache, on
    // the way or in a client's HTTP library, may keep them, nor a browser read them as another type.
    if (!path.startsWith("/x-") && !path.startsWith("/dashboard/")) return response;
    return withHeader(withHeader(response, "cache-control", "no-store"), "x-content-type-options", "nosniff");
  };

  const fetch = async (request: Request, server: Server<RealtimeSession>): Promise<Response | undefined> => {
    let peer: { address?: string } | null | undefined;
    const meta: RequestMeta = {
      id: requestId(),
      startedAt: performance.now(),
      // A system call per lookup: only AllowIPs, sign-up limits and realtime need it.
      get peerIp() {
        peer ??= server.requestIP(request);
        return peer?.address;
      },
      server,
    };
    attachMeta(request, meta);
    const path = pathOnly(request.url);
    const route = request.method === "POST" ? hot.get(path) : undefined;
    let response = route
      ? await handleHot(route, request, path)
      : realtime.handles(request)
        ? await realtime.upgrade(request, server)
        : (cors.preflight(request, path) ?? (await handleManaged(request, path)));
    if (!response) {
      if (log.enabled("info")) log.info("request", { method: request.method, path, status: 101, account: meta.accountId, req: meta.id });
      return undefined;
    }
    response = cors.decorate(request, path, withHeader(response, "x-request-id", meta.id));
    // The Anthropic SDKs read the id as `request-id` (message._request_id, an error's
    // requestID), and Claude Code prints it: the id the request log files the call under.
    if (familyOfRequest(request, path) === "anthropic") response = withHeader(response, "request-id", meta.id);
    if (log.enabled("info")) {
      const fields = {
        method: request.method,
        path,
        status: response.status,
        ms: Math.round((performance.now() - meta.startedAt) * 100) / 100,
        account: meta.accountId,
        req: meta.id,
      };
      // The line is formatted once the answer is on its way.
      afterAnswer(() => log.info("request", fields));
    }
    return response;
  };

  let server: Server<RealtimeSession>;
  try {
    server = Bun.serve({
      hostname: config.host,
      port: config.port,
      reusePort: false,
      maxRequestBodySize: BUN_BODY_CEILING,
      idleTimeout: IDLE_TIMEOUT_SECONDS,
      tls: config.tlsCert && config.tlsKey ? { cert: Bun.file(config.tlsCert), key: Bun.file(config.tlsKey) } : undefined,
      // The console's pages and their bundled assets; every other path goes to fetch.
      // Production mode: bundled once, minified, no hot-reload client in the pages.
      development: false,
      routes: consoleRoutes,
      fetch,
      websocket: realtime.websocket,
      error(error) {
        log.error("request failed outside the app", { error: error.message });
        return errorResponse("openai", new HttpError("internal", "Internal error"));
      },
    });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "EADDRINUSE") throw new ServeError(`port ${config.port} on ${config.host} is already in use`);
    if (code === "EACCES") throw new ServeError(`not allowed to listen on ${config.host}:${config.port}`);
    throw new ServeError(`cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`);
  }

  // Another process (the CLI) may change accounts, keys or config in the SQLite file:
  // what it changed is not known here, so every cache and live session hears
  // "everything". On PostgreSQL, changes arrive through the invalidation bus instead.
  const watcher =
    config.database === undefined
      ? setInterval(() => {
          if (deps.store.changedElsewhere()) void deps.bus.publish({ kind: "everything" });
        }, 1000)
      : undefined;
  watcher?.unref();

  const scheme = config.tlsCert ? "https" : "http";
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const port = server.port ?? config.port;
  let stopping: Promise<void> | undefined;

  return {
    server,
    url: `${scheme}://${host}:${port}`,
    port,
    stop(graceSeconds = config.graceSeconds, drainPauseMs = defaultDrainPauseMs(config.redis !== undefined, graceSeconds)) {
      // From here /readyz answers 503, so a load balancer drains this instance.
      deps.lifecycle.stopping = true;
      stopping ??= (async () => {
        // A balancer learns of the 503 at its next health check: until then the socket
        // stays open and calls are still served, rather than refused at the door.
        if (drainPauseMs > 0) {
          log.info("stopping: /readyz answers 503; the socket closes after the drain pause", { pauseMs: drainPauseMs });
          await Bun.sleep(drainPauseMs);
        }
        clearInterval(watcher);
        realtime.closeAll();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const graceful = server.stop(false);
        const expired = new Promise<"expired">((resolve) => {
          timer = setTimeout(() => resolve("expired"), graceSeconds * 1000);
        });
        if ((await Promise.race([graceful.then(() => "done" as const), expired])) === "expired") {
          log.warn("grace period over; closing remaining connections", { pending: server.pendingRequests });
          await server.stop(true);
        }
        clearTimeout(timer);
        for (const hook of deps.beforeClose) await hook();
        deps.store.close();
      })();
      return stopping;
    },
  };
}


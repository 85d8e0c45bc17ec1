import type { Server, WebSocketHandler } from "bun";
import { HttpError } from "../../core/errors.ts";
import { requestId } from "../../core/ids.ts";
import type { ServeConfig } from "../../config.ts";
import type { Authenticator } from "../../http/auth.ts";
import type { Tenant } from "../../tenancy/tenants.ts";
import type { AccountRow } from "../../store/store.ts";
import type { Affinity } from "../affinity.ts";
import { metaOf } from "../../http/context.ts";
import { clientIp } from "../../http/client-ip.ts";
import { errorResponse } from "../../http/envelopes.ts";
import { routeModel } from "../../routing/route-model.ts";
import { ZERO_USAGE } from "../../formats/usage.ts";
import { readHandshake, REALTIME_PATH } from "./handshake.ts";
import { principalOf } from "../../accounts/principal.ts";
import { clientSecretId } from "../created-objects.ts";
import { createLifecycle, type LifecycleDeps, type LifecycleOptions } from "./lifecycle.ts";
import { pickRealtimeKey } from "./pick.ts";
import { createSessionMeter, newSession, type RealtimeSession } from "./session.ts";

export type { RealtimeSession } from "./session.ts";

/** The realtime WebSocket bridge, hooked into the server ahead of the HTTP app. */
export interface RealtimeBridge {
  /** True for `GET /v1/realtime`, which the bridge answers instead of the app. */
  handles(request: Request): boolean;
  /**
   * Authenticates, checks, routes and admits the session, picks a key, then upgrades.
   * A refusal comes back as an error Response (before any upgrade); a successful
   * upgrade as undefined.
   */
  upgrade(request: Request, server: Server<RealtimeSession>): Promise<Response | undefined>;
  /** The `websocket` handlers for Bun.serve. */
  readonly websocket: WebSocketHandler<RealtimeSession>;
  /** Sessions open now. */
  size(): number;
  /** Closes every session (shutdown). */
  closeAll(code?: number, reason?: string): void;
}

/** The bridge's own limits; the drain deadline is the configured `--drain-timeout` (see `createRealtimeBridge`). */
export const REALTIME_DEFAULTS: Omit<LifecycleOptions, "drainMs"> = {
  idleMs: 5 * 60_000,
  pendingLimit: 1024 * 1024,
  upstreamBufferLimit: 16 * 1024 * 1024,
  connectTimeoutMs: 15_000,
};

export interface RealtimeDeps extends LifecycleDeps {
  readonly config: LifecycleDeps["config"] & Pick<ServeConfig, "firstByteTimeoutMs" | "trustProxy" | "drainTimeoutMs">;
  readonly auth: Authenticator;
  readonly affinity: Pick<Affinity, "lookup">;
  tenantOf(account: Pick<AccountRow, "path">): Promise<Tenant>;
}

export function createRealtimeBridge(deps: RealtimeDeps, overrides: Partial<LifecycleOptions> = {}): RealtimeBridge {
  const options: LifecycleOptions = {
    ...REALTIME_DEFAULTS,
    connectTimeoutMs: Math.min(REALTIME_DEFAULTS.connectTimeoutMs, deps.config.firstByteTimeoutMs),
    // A response under way when the client leaves is read on as long as an HTTP stream
    // would be, and no longer than a stop waits for calls read for their usage.
    drainMs: deps.config.drainTimeoutMs,
    ...overrides,
  };
  const lifecycle = createLifecycle(deps, options);

  const start = async (request: Request, server: Server<RealtimeSession>): Promise<void> => {
    const handshake = await readHandshake(
      {
        auth: deps.auth,
        trustProxy: deps.config.trustProxy,
        resourcesFor: async (principal) => (await deps.tenantOf(principal.account)).settings.resources(),
        ephemeral: async (token) => {
          const bound = await deps.affinity.lookup(clientSecretId(token));
          const account = bound?.kind === "client_secret" ? await deps.store.accounts.byId(bound.accountId) : undefined;
          // A secret dies with the key that minted it (a rotation), as the sessions it opened do.
          const minterKept = !bound?.mintedBy || bound.mintedBy === account?.keyHash;
          return bound && account && minterKept ? { principal: principalOf(account), keyId: bound.keyId } : undefined;
        },
      },
      request,
    );
    const tenant = await deps.tenantOf(handshake.principal.account);
    const metering = createSessionMeter(tenant, deps.clock);
    const route = routeModel(tenant.settings.routing(), handshake.requestedModel);
    const effectiveModel = route.effectiveModel ?? handshake.requestedModel;
    const admission = await metering.admit(handshake.principal, effectiveModel);
    const now = deps.clock.now();
    const id = metaOf(request)?.id ?? requestId();
    const tried = new Set<number>();
    // A client secret lives on the key that issued it; a gone key means no key (503 below).
    const pinned = handshake.ephemeral ? await tenant.pool.acquireById(handshake.ephemeral.keyId) : undefined;
    const picked = handshake.ephemeral
      ? pinned && { key: pinned, level: pinned.level, probe: false }
      : await pickRealtimeKey(tenant, deps.clock, route.level, tried);
    const session = newSession({
      id,
      principal: handshake.principal,
      tenant,
      ephemeral: handshake.ephemeral,
      requestedModel: handshake.requestedModel,
      effectiveModel,
      level: route.level,
      beta: handshake.beta,
      clientIp: clientIp(request, deps.config.trustProxy),
      picked,
      tried,
      admission,
      now,
    });
    if (!picked) {
      metering.settle(session, 503, ZERO_USAGE, "upstream", now);
      throw new HttpError("unavailable", `No upstream key is available for model ${handshake.requestedModel}; try again later`, {
        code: "no_available_key",
      });
    }
    const headers: Record<string, string> = { "x-request-id": id };
    if (handshake.protocol) headers["sec-websocket-protocol"] = handshake.protocol;
    if (!server.upgrade(request, { data: session, headers })) {
      metering.settle(session, 400, ZERO_USAGE, "estimated", now);
      void tenant.pool.release(picked.key);
      throw new HttpError("invalid_request", "The WebSocket upgrade request is not valid", { code: "invalid_upgrade" });
    }
  };

  return {
    handles(request) {
      if (request.method !== "GET" || !request.url.includes(REALTIME_PATH)) return false;
      return new URL(request.url).pathname === REALTIME_PATH;
    },
    async upgrade(request, server) {
      try {
        await start(request, server);
        return undefined;
      } catch (error) {
        if (error instanceof HttpError) return errorResponse("openai", error);
        throw error;
      }
    },
    websocket: lifecycle.websocket,
    size: lifecycle.size,
    closeAll: lifecycle.closeAll,
  };
}

import type { Principal } from "../../accounts/principal.ts";
import { extractApiKey, refuseKeyInUrl, type Authenticator } from "../../http/auth.ts";
import { badRequest, HttpError, unauthorized } from "../../core/errors.ts";
import type { CompiledPattern } from "../../routing/patterns.ts";
import { checkAccess, checkModel } from "../../http/access.ts";
import { clientIp } from "../../http/client-ip.ts";
import { attachMeta, metaOf } from "../../http/context.ts";

export const REALTIME_PATH = "/v1/realtime";

/** The subprotocol a realtime client speaks; the only one the router ever selects. */
export const REALTIME_PROTOCOL = "realtime";
/**
 * Browsers cannot set headers on a WebSocket, so OpenAI's browser form carries the key
 * as a subprotocol: `Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.<key>`.
 */
const KEY_PROTOCOL = "openai-insecure-api-key.";
/** The browser form of the `OpenAI-Beta: realtime=v1` header. */
const BETA_PROTOCOL = "openai-beta.realtime-v1";

/** What the upgrade request of a realtime session asked for, once authenticated and checked. */
/** A session opened with a realtime client secret (`ek_…`) the router issued. */
export interface EphemeralGrant {
  /** The provider key the secret was created on: the session may use no other. */
  keyId: number;
  /** The secret itself, presented upstream in place of the provider key (it carries the session's settings). */
  token: string;
}

export interface Handshake {
  principal: Principal;
  ephemeral?: EphemeralGrant;
  requestedModel: string;
  /** The subprotocol to answer with when the client offered any (always `realtime`). */
  protocol: string | undefined;
  /** `OpenAI-Beta` value for the upstream, when the client asked for the beta protocol. */
  beta: string | undefined;
}

/** The subprotocols a client offered, in its order. */
export function offeredProtocols(request: Request): string[] {
  const header = request.headers.get("sec-websocket-protocol");
  if (!header) return [];
  return header
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "");
}

/** True when the request asks to be upgraded to a WebSocket. */
/** Realtime client secrets as OpenAI issues them. */
const EPHEMERAL_PREFIX = "ek_";

export function isWebSocketUpgrade(request: Request): boolean {
  return (request.headers.get("upgrade") ?? "").toLowerCase() === "websocket";
}

/**
 * Authenticates the upgrade request (Bearer header, or the browser subprotocol form;
 * a key in the URL is refused like everywhere), then runs the access checks
 * (AllowIPs, system RESOURCES and the account's Resources, AllowModels). Throws an
 * HttpError, answered before any upgrade.
 */
export async function readHandshake(
  deps: {
    auth: Authenticator;
    trustProxy: boolean;
    resourcesFor: (principal: Principal) => Promise<readonly CompiledPattern[] | null>;
    /** Resolves a client secret the router handed out; undefined when unknown. */
    ephemeral: (token: string) => Promise<{ principal: Principal; keyId: number } | undefined>;
  },
  request: Request,
): Promise<Handshake> {
  const offered = offeredProtocols(request);
  let authRequest = request;
  const keyProtocol = offered.find((p) => p.startsWith(KEY_PROTOCOL));
  if (keyProtocol !== undefined && !request.headers.has("authorization")) {
    // Authenticate through the ordinary path (key-in-URL refusal included) with the
    // subprotocol's key as if it came as a Bearer header.
    authRequest = new Request(request.url, { headers: { authorization: `Bearer ${keyProtocol.slice(KEY_PROTOCOL.length)}` } });
    const meta = metaOf(request);
    if (meta) attachMeta(authRequest, meta);
  }
  refuseKeyInUrl(request.url);
  const presented = extractApiKey(authRequest, "openai");
  let ephemeral: EphemeralGrant | undefined;
  let principal: Principal;
  if (presented?.startsWith(EPHEMERAL_PREFIX)) {
    const grant = await deps.ephemeral(presented);
    if (!grant) throw unauthorized("Unknown or expired realtime client secret", "invalid_client_secret");
    principal = grant.principal;
    ephemeral = { keyId: grant.keyId, token: presented };
  } else principal = await deps.auth.require(authRequest, "openai");
  checkAccess(principal, REALTIME_PATH, () => clientIp(request, deps.trustProxy), await deps.resourcesFor(principal));

  const url = new URL(request.url);
  const model = url.searchParams.get("model")?.trim();
  if (!model) {
    throw badRequest("The `model` query parameter is required: GET /v1/realtime?model=<model>", "model");
  }
  checkModel(principal, model);

  if (offered.length > 0 && !offered.includes(REALTIME_PROTOCOL)) {
    throw badRequest(`Offer the \`${REALTIME_PROTOCOL}\` WebSocket subprotocol (or none)`, "Sec-WebSocket-Protocol");
  }
  if (!isWebSocketUpgrade(request)) {
    throw new HttpError("invalid_request", "GET /v1/realtime must be a WebSocket upgrade (Upgrade: websocket)", {
      status: 426,
      code: "upgrade_required",
      headers: { upgrade: "websocket" },
    });
  }
  const betaHeader = request.headers.get("openai-beta") ?? undefined;
  const beta = betaHeader ?? (offered.includes(BETA_PROTOCOL) ? "realtime=v1" : undefined);
  return { principal, ephemeral, requestedModel: model, protocol: offered.length > 0 ? REALTIME_PROTOCOL : undefined, beta };
}

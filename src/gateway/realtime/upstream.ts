import { DEFAULT_AZURE_API_VERSION, type AzureConfig } from "../../routing/provider-config.ts";
import type { PoolKey } from "../../routing/pool-key.ts";
import { joinProviderPath } from "../../upstreams/standard.ts";

/** Where a realtime session goes upstream and how it authenticates there. */
export interface RealtimeTarget {
  url: string;
  headers: Record<string, string>;
}

/** `https://…` → `wss://…` (and `http://` → `ws://` for plain test upstreams). */
function toWebSocketUrl(url: string): string {
  return url.replace(/^http(s?):\/\//i, (_, s: string) => `ws${s}://`);
}

/** Provider types with a realtime WebSocket endpoint (Vertex has none). */
export function supportsRealtime(key: PoolKey): boolean {
  const type = key.config.provider_type;
  return type === "standard" || type === "azure";
}

/**
 * The upstream realtime endpoint for a key and effective model:
 * - standard: `wss://<provider host+path>/v1/realtime?model=<model>`, `Authorization: Bearer <secret>`;
 * - azure: `wss://<host>/openai/realtime?api-version=<v>&deployment=<deployment>`, `api-key: <secret>`.
 * `OpenAI-Beta` is sent only when the client asked for the beta protocol.
 */
export function realtimeTarget(
  key: PoolKey,
  model: string,
  beta: string | undefined,
  /** A realtime client secret to present instead of the key's own secret. */
  credential?: string,
  env: NodeJS.ProcessEnv = process.env,
): RealtimeTarget {
  const secret = credential ?? key.secret;
  const headers: Record<string, string> = {};
  if (beta) headers["openai-beta"] = beta;
  if (key.config.provider_type === "azure") {
    const config = key.config as AzureConfig;
    const params = new URLSearchParams({
      "api-version": config.api_versions?.[model] || env.AZURE_OPENAI_API_VERSION || DEFAULT_AZURE_API_VERSION,
      deployment: config.deployments?.[model] || model,
    });
    headers["api-key"] = secret;
    return { url: `${toWebSocketUrl(key.provider)}/openai/realtime?${params}`, headers };
  }
  headers.authorization = `Bearer ${secret}`;
  const base = toWebSocketUrl(joinProviderPath(key.provider, "/v1/realtime"));
  return { url: `${base}?model=${encodeURIComponent(model)}`, headers };
}

/** How an upstream handshake failed, from Bun's error message (`Expected 101 status code: 401`). */
export type HandshakeFailure =
  /** The key's URL reaches an address the upstream policy refuses: nothing was sent. */
  | { kind: "blocked"; reason: string }
  | { kind: "credential"; status: number }
  | { kind: "retryable"; status?: number }
  /** `secret`: a client secret presented upstream was refused (401/403), not the key. */
  | { kind: "client"; status: number; secret?: true };

export function classifyHandshakeFailure(message: string | undefined, clientSecret = false): HandshakeFailure {
  const status = Number(/Expected 101 status code: (\d{3})/.exec(message ?? "")?.[1] ?? NaN);
  if (Number.isNaN(status)) return { kind: "retryable" };
  // A client secret's 401/403 (expired, revoked) judges the secret, not the key: else anyone
  // holding an old secret could put the key aside for everyone.
  if (clientSecret && (status === 401 || status === 403)) return { kind: "client", status, secret: true };
  // 402: the key's account is out of credit, as on HTTP (provider-errors.ts): put aside like a
  // 401 and another key tried, not relayed as the client's mistake. Bun's client gives the
  // status only, so a 429's body (insufficient_quota or a rate limit) cannot be told apart.
  if (status === 401 || status === 402 || status === 403) return { kind: "credential", status };
  if (status === 408 || status === 429 || status >= 500) return { kind: "retryable", status };
  // The upstream refused what the client asked for (unknown model, bad parameter).
  return { kind: "client", status };
}

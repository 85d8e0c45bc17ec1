import type { ProviderType } from "../routing/provider-config.ts";
import type { PoolKey } from "../routing/pool-key.ts";
import { createAzureAdapter } from "./azure.ts";
import { standardAdapter } from "./standard.ts";
import type { UpstreamAdapter } from "./types.ts";
import { createVertexAdapter } from "./vertex.ts";

export type Adapters = Record<ProviderType, UpstreamAdapter>;

/** The adapter table: one entry per provider type, chosen by lookup, never by a switch. */
/** `checkUrl` is the upstream address policy, applied to URLs an adapter fetches itself (a Vertex token exchange). */
export function createAdapters(fetchInit: BunFetchRequestInit = {}, checkUrl?: (url: string) => Promise<string | undefined>): Adapters {
  return { standard: standardAdapter, azure: createAzureAdapter(), vertex: createVertexAdapter(fetchInit, checkUrl) };
}

export function adapterFor(adapters: Adapters, key: PoolKey): UpstreamAdapter {
  return adapters[key.config.provider_type] ?? adapters.standard;
}

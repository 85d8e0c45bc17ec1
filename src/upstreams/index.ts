import type { ProviderType } from "../routing/provider-config.ts";
import type { PoolKey } from "../routing/pool-key.ts";
import { createAzureAdapter } from "./azure.ts";
import { standardAdapter } from "./standard.ts";
import type { UpstreamAdapter } from "./types.ts";
import { createVertexAdapter } from "./vertex.ts";

export type Adapters = Record<ProviderType, UpstreamAdapter>;

/** The adapter table: one entry per provider type, chosen by lookup, never by a switch. */
export function createAdapters(fetchInit: BunFetchRequestInit = {}): Adapters {
  return { standard: standardAdapter, azure: createAzureAdapter(), vertex: createVertexAdapter(fetchInit) };
}

export function adapterFor(adapters: Adapters, key: PoolKey): UpstreamAdapter {
  return adapters[key.config.provider_type] ?? adapters.standard;
}

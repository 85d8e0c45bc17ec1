/**
 * `config` of a Provider Key: which upstream scheme it speaks, and that scheme's options.
 * The shapes are the wire models (src/wire/provider-keys.ts), so what the management
 * API stores and shows is what routing and the upstream adapters read.
 */
export type { AzureConfig, ProviderConfig, StandardConfig, VertexConfig } from "../wire/provider-keys.ts";
export { PROVIDER_TYPES, type ProviderType } from "../wire/constants.ts";

export const DEFAULT_AZURE_API_VERSION = "2025-04-01-preview";

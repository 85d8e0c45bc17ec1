/** `config` of a Provider Key: which upstream scheme it speaks, and that scheme's options. */
export type ProviderConfig = StandardConfig | AzureConfig | VertexConfig;

/** Members every provider type may have. */
export interface CommonConfig {
  /**
   * Model names and patterns the key serves, for model lists; when absent, what its
   * upstream's own model list says.
   */
  models?: string[];
}

export interface StandardConfig extends CommonConfig {
  provider_type: "standard";
}

export interface AzureConfig extends CommonConfig {
  provider_type: "azure";
  /** model → deployment name; a model without an entry uses its own name as the deployment. */
  deployments?: Record<string, string>;
  /** model → api-version; falls back to env AZURE_OPENAI_API_VERSION, then DEFAULT_AZURE_API_VERSION. */
  api_versions?: Record<string, string>;
}

export interface VertexConfig extends CommonConfig {
  provider_type: "vertex";
  project_id?: string;
  /** Default `global`. */
  location?: string;
  /** Default derived from the location. */
  base_url?: string;
  token_uri?: string;
}

export type ProviderType = ProviderConfig["provider_type"];
export const PROVIDER_TYPES: readonly ProviderType[] = ["standard", "azure", "vertex"];

export const DEFAULT_AZURE_API_VERSION = "2025-04-01-preview";

/** Shapes of the router's answers the console reads (docs/api.md). */

export interface AccountStatus {
  id: number;
  name: string;
  email: string;
  alias: string | null;
  isOwner: boolean;
  level: number;
  balance: number;
  manage: boolean;
}

export const RATE_FIELDS = ["RPM", "RPH", "RPD", "TPM", "TPH", "TPD"] as const;
export const SPEND_FIELDS = ["DailyLimit", "HardLimit", "SoftLimit"] as const;
export const LIMIT_MEMBERS = ["rpm", "rph", "rpd", "tpm", "tph", "tpd"] as const;
export type LimitField = (typeof RATE_FIELDS)[number] | (typeof SPEND_FIELDS)[number];
export type ModelLimits = Record<string, Partial<Record<(typeof LIMIT_MEMBERS)[number], number>>>;

export interface AccountRecord extends Record<LimitField, number | null> {
  ID: number;
  Name: string;
  Email: string;
  Alias: string | null;
  BillingEmail: string | null;
  ParentID: number | null;
  Level: number;
  IsOwner: boolean;
  Rates: number;
  ModelLimits: ModelLimits;
  AllowIPs: string;
  AllowModels: string;
  Resources: string;
  KeyPrefix: string;
  CreatedAt: string;
  UpdatedAt: string;
  Balance?: number;
  APIKey?: string;
}

export type ProviderType = "standard" | "azure" | "vertex";

export interface ProviderConfig {
  provider_type?: ProviderType;
  deployments?: Record<string, string>;
  api_versions?: Record<string, string>;
  project_id?: string;
  location?: string;
  base_url?: string;
  token_uri?: string;
}

export interface ProviderKey {
  ID: number;
  Name: string;
  Level: number;
  Provider: string;
  PartialKey: string;
  NoSleep: boolean;
  Status: boolean;
  Sleeping: boolean;
  CreatedAt: string;
  /** Full record only. */
  config?: ProviderConfig;
  SleepReason?: string | null;
  SleepUntil?: string | null;
}

export interface UsageTotals {
  Requests: number;
  Prompt: number;
  Completion: number;
  Reasoning: number;
  CreditUsed: number;
  ModelUsage?: Record<string, Omit<UsageTotals, "ModelUsage">>;
}

export interface LiveUsage {
  account: { id: number; name: string; balance: number };
  daily_usage: UsageTotals;
  monthly_usage: UsageTotals;
}

// Bill shapes are the server's own types (type-only imports: nothing of the server is bundled).
import type { BillInfo as ServerBill, DailyCost, ModelUsageRecord } from "../../../src/metering/reports/bill.ts";
import type { UsageUser } from "../../../src/metering/reports/ranking.ts";

export type LineUsage = ModelUsageRecord;
export type BillDay = DailyCost;
export type RankingEntry = UsageUser;
/** `/dashboard/bill`; `/x-bill` adds `usage_users`. */
export type BillInfo = ServerBill & { usage_users?: RankingEntry[] };

export interface Notice {
  id: number;
  title: string;
  content: string;
  target_id: number | null;
  author_id: number;
  created_at: string;
  expires_at: string;
}

export interface LogRow {
  id: number;
  time: string;
  action: string;
  operator_id: number | null;
  target_id: number | null;
  details: Record<string, unknown>;
  ip: string | null;
}

export const PRICING_SECTIONS = ["ChatPricing", "ImgPricing", "AudioPricing", "VideoPricing", "CallPricing"] as const;
export type PricingSection = (typeof PRICING_SECTIONS)[number];
export type PriceEntry = Record<string, number | Record<string, number>>;
export type PricingTable = Partial<Record<PricingSection, Record<string, PriceEntry>>>;

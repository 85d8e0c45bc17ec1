/**
 * Usage reports on the wire (spec 2.3, docs/reports.md): `/dashboard/live`,
 * `/dashboard/bill` and `/x-bill`. Amounts are credits, counts are tokens or requests.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Count, Credits, Nullable } from "./common.ts";

/** Requests, tokens and credit of one model or of all, over a period. */
export const ModelTotals = Type.Object({
  Requests: Count(),
  Prompt: Count(),
  Completion: Count(),
  Reasoning: Count(),
  CreditUsed: Credits(),
});
export type ModelTotals = Static<typeof ModelTotals>;

/** `daily_usage` / `monthly_usage` of `/dashboard/live`: the totals and their breakdown by model. */
export const UsageTotals = Type.Composite([ModelTotals, Type.Object({ ModelUsage: Type.Record(Type.String(), ModelTotals) })]);
export type UsageTotals = Static<typeof UsageTotals>;

/** `GET /dashboard/live`: the caller, its balance, and its usage this business day and month. */
export const LiveUsage = Type.Object({
  object: Type.Literal("live_usage"),
  account: Type.Object({
    id: Count(),
    name: Type.String(),
    email: Type.String(),
    alias: Nullable(Type.String()),
    level: Count(),
    isOwner: Type.Boolean(),
    balance: Credits(),
  }),
  daily_usage: UsageTotals,
  monthly_usage: UsageTotals,
});
export type LiveUsage = Static<typeof LiveUsage>;

/** Token and request counts of one model (bill `line_items[].usage`). */
export const ModelUsageRecord = Type.Object({
  requests: Count(),
  prompt: Count(),
  completion: Count(),
  reasoning: Count(),
  cached_input: Count(),
  cache_write: Count(),
});
export type ModelUsageRecord = Static<typeof ModelUsageRecord>;

export const LineItem = Type.Object({ name: Type.String(), cost: Credits(), usage: ModelUsageRecord });
export type LineItem = Static<typeof LineItem>;

export const DailyCost = Type.Object({
  date: Type.String({ description: "business date, YYYY-MM-DD" }),
  total_requests: Count(),
  total_prompt: Count(),
  total_completion: Count(),
  total_credit_used: Credits(),
  line_items: Type.Array(LineItem),
});
export type DailyCost = Static<typeof DailyCost>;

export const TokenSummary = Type.Object({
  cached_input: Count(),
  uncached_input: Count(),
  cache_write: Count(),
  input_total: Count(),
  output_total: Count(),
  processed_total: Count(),
});
export type TokenSummary = Static<typeof TokenSummary>;

/** The aggregate record shared by `/dashboard/bill` and `/x-bill`. */
export const BillInfo = Type.Object({
  object: Type.Literal("bill_info"),
  daily_costs: Type.Array(DailyCost),
  usage_summary: Type.Record(Type.String(), Type.Composite([ModelUsageRecord, Type.Object({ cost: Credits() })])),
  total_requests: Count(),
  total_prompt: Count(),
  total_completion: Count(),
  total_reasoning: Count(),
  total_credit_used: Credits(),
  token_summary: TokenSummary,
});
export type BillInfo = Static<typeof BillInfo>;

/** One entry of `/x-bill`'s `usage_users`: an account under the caller, ranked by credit used. */
export const UsageUser = Type.Object({
  id: Count(),
  name: Type.String(),
  alias: Nullable(Type.String()),
  email: Type.String(),
  top_cost_model: Nullable(Type.String()),
  top_request_model: Nullable(Type.String()),
  total_requests: Count(),
  total_prompt: Count(),
  total_completion: Count(),
  total_reasoning: Count(),
  total_credit_used: Credits(),
  /** Percentages (0–100, 2 decimals) of the requests and credit of all the ranked accounts. */
  usage_analysis: Type.Object({ request_percentage: Type.Number(), cost_percentage: Type.Number() }),
});
export type UsageUser = Static<typeof UsageUser>;

/** `GET /x-bill`: the bill of the accounts under the caller, and their ranking. */
export const RankedBill = Type.Composite([BillInfo, Type.Object({ usage_users: Type.Array(UsageUser) })]);
export type RankedBill = Static<typeof RankedBill>;

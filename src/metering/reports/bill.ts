import { nanosToCredits } from "../../accounts/records.ts";
import { datesIn, type DateRange } from "./dates.ts";
import type { BillInfo, DailyCost, ModelUsageRecord, TokenSummary } from "../../wire/usage.ts";
import { addSums, ZERO_SUMS, type UsageSums } from "./usage-query.ts";

const usageRecord = (sums: UsageSums): ModelUsageRecord => ({
  requests: sums.requests,
  prompt: sums.prompt,
  completion: sums.completion,
  reasoning: sums.reasoning,
  cached_input: sums.cacheRead,
  cache_write: sums.cacheWrite,
});

/** Most expensive first, then by name, so equal inputs always give the same order. */
export function byCostThenName<T extends { model: string; costNanos: number }>(a: T, b: T): number {
  if (a.costNanos !== b.costNanos) return b.costNanos - a.costNanos;
  return a.model < b.model ? -1 : a.model > b.model ? 1 : 0;
}

/** `prompt` holds every input token, cache reads and writes included; `completion` every output token. */
export function tokenSummary(total: UsageSums): TokenSummary {
  return {
    cached_input: total.cacheRead,
    uncached_input: total.prompt - total.cacheRead - total.cacheWrite,
    cache_write: total.cacheWrite,
    input_total: total.prompt,
    output_total: total.completion,
    processed_total: total.prompt + total.completion,
  };
}

/**
 * Builds the bill from usage_daily sums per day and model: one `daily_costs` entry
 * per date of the range (empty days included), ascending. Sums stay in integer
 * nano-credits until the end, so totals are exact before conversion.
 */
export function buildBill(rows: ReadonlyArray<UsageSums & { day: string; model: string }>, range: DateRange): BillInfo {
  const byDay = new Map<string, Array<UsageSums & { model: string }>>();
  const perModel = new Map<string, UsageSums & { model: string }>();
  const total: UsageSums = { ...ZERO_SUMS };
  for (const row of rows) {
    const list = byDay.get(row.day) ?? [];
    list.push(row);
    byDay.set(row.day, list);
    const model = perModel.get(row.model) ?? { ...ZERO_SUMS, model: row.model };
    perModel.set(row.model, addSums(model, row));
    addSums(total, row);
  }

  const daily_costs = datesIn(range).map((date): DailyCost => {
    const items = (byDay.get(date) ?? []).slice().sort(byCostThenName);
    const day = items.reduce((sum, item) => addSums(sum, item), { ...ZERO_SUMS });
    return {
      date,
      total_requests: day.requests,
      total_prompt: day.prompt,
      total_completion: day.completion,
      total_credit_used: nanosToCredits(day.costNanos),
      line_items: items.map((item) => ({ name: item.model, cost: nanosToCredits(item.costNanos), usage: usageRecord(item) })),
    };
  });

  const usage_summary: BillInfo["usage_summary"] = {};
  for (const model of [...perModel.values()].sort(byCostThenName)) {
    usage_summary[model.model] = { ...usageRecord(model), cost: nanosToCredits(model.costNanos) };
  }

  return {
    object: "bill_info",
    daily_costs,
    usage_summary,
    total_requests: total.requests,
    total_prompt: total.prompt,
    total_completion: total.completion,
    total_reasoning: total.reasoning,
    total_credit_used: nanosToCredits(total.costNanos),
    token_summary: tokenSummary(total),
  };
}

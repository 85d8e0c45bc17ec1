import { nanosToCredits } from "../../accounts/records.ts";
import type { Clock } from "../../core/clock.ts";
import type { Store } from "../../store/store.ts";
import type { DateRange } from "./dates.ts";
import type { ModelTotals, UsageTotals } from "../../wire/usage.ts";
import { addSums, ZERO_SUMS, type UsageSums } from "./usage-query.ts";

const record = (sums: UsageSums): ModelTotals => ({
  Requests: sums.requests,
  Prompt: sums.prompt,
  Completion: sums.completion,
  Reasoning: sums.reasoning,
  CreditUsed: nanosToCredits(sums.costNanos),
});

/**
 * `daily_usage` / `monthly_usage` of `/dashboard/live` (spec 2.3): one account's totals
 * over the range, with a per-model breakdown (effective model, sorted by name).
 */
export async function liveTotals(store: Pick<Store, "usage">, accountId: number, range: DateRange): Promise<UsageTotals> {
  const rows = await store.usage.sumsByModel({ accountId }, range);
  const total = rows.reduce((sum, row) => addSums(sum, row), { ...ZERO_SUMS });
  const ModelUsage: Record<string, ModelTotals> = {};
  for (const row of rows) ModelUsage[row.model] = record(row);
  return { ...record(total), ModelUsage };
}

/** The current business day and business month, in the clock's zone (a string range: `-31` bounds every month). */
export function liveRanges(clock: Clock): { day: DateRange; month: DateRange } {
  const now = clock.now();
  const today = clock.businessDate(now);
  const month = clock.businessMonth(now);
  return { day: { start: today, end: today }, month: { start: `${month}-01`, end: `${month}-31` } };
}

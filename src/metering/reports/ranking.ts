import { nanosToCredits } from "../../accounts/records.ts";
import { byCostThenName } from "./bill.ts";
import type { UsageUser } from "../../wire/usage.ts";
import { addSums, ZERO_SUMS, type AccountIdentity, type UsageSums } from "./usage-query.ts";

/** `part` as a percentage (0–100) of `whole`, rounded to 2 decimals; 0 when `whole` is 0. */
export function percentage(part: number, whole: number): number {
  if (whole <= 0) return 0;
  return Math.round((part / whole) * 10_000) / 100;
}

type ModelSums = UsageSums & { model: string };

/** Most requests first, then most expensive, then by name. */
const byRequests = (a: ModelSums, b: ModelSums) => b.requests - a.requests || byCostThenName(a, b);

/**
 * Ranks the accounts of the rows (sums per account and model) by credit used,
 * descending, ties by id. Accounts without requests are left out; percentages are of
 * the totals of all rows. `top_cost_model` is null when the account used no credit.
 */
export function rankUsers(
  rows: ReadonlyArray<ModelSums & { accountId: number }>,
  identityOf: (id: number) => AccountIdentity | undefined,
): UsageUser[] {
  const perAccount = new Map<number, { total: UsageSums; models: ModelSums[] }>();
  const whole: UsageSums = { ...ZERO_SUMS };
  for (const row of rows) {
    const entry = perAccount.get(row.accountId) ?? { total: { ...ZERO_SUMS }, models: [] };
    addSums(entry.total, row);
    entry.models.push(row);
    perAccount.set(row.accountId, entry);
    addSums(whole, row);
  }

  const ranked = [...perAccount.entries()]
    .filter(([, entry]) => entry.total.requests > 0)
    .sort(([idA, a], [idB, b]) => b.total.costNanos - a.total.costNanos || idA - idB);

  return ranked.map(([id, { total, models }]): UsageUser => {
    const identity = identityOf(id);
    const topCost = total.costNanos > 0 ? models.slice().sort(byCostThenName)[0] : undefined;
    const topRequests = models.slice().sort(byRequests)[0];
    return {
      id,
      name: identity?.name ?? "",
      alias: identity?.alias ?? null,
      email: identity?.email ?? "",
      top_cost_model: topCost?.model ?? null,
      top_request_model: topRequests?.model ?? null,
      total_requests: total.requests,
      total_prompt: total.prompt,
      total_completion: total.completion,
      total_reasoning: total.reasoning,
      total_credit_used: nanosToCredits(total.costNanos),
      usage_analysis: {
        request_percentage: percentage(total.requests, whole.requests),
        cost_percentage: percentage(total.costNanos, whole.costNanos),
      },
    };
  });
}

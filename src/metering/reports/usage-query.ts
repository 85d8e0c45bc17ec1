import type { AccountIdentity, Audience, RollupRow, UsageSums } from "../../store/store.ts";

/**
 * The in-memory side of usage reports: the store reads rollup rows (`store.usage`),
 * and a report that needs several groupings (by day and model, by account and model)
 * reads them once and sums here, which over months of data is cheaper than one
 * GROUP BY per grouping.
 */
export type { AccountIdentity, Audience, RollupRow, UsageSums };

export const ZERO_SUMS: Readonly<UsageSums> = Object.freeze({
  requests: 0,
  prompt: 0,
  completion: 0,
  reasoning: 0,
  cacheRead: 0,
  cacheWrite: 0,
  costNanos: 0,
});

export function addSums<T extends UsageSums>(into: T, add: UsageSums): T {
  into.requests += add.requests;
  into.prompt += add.prompt;
  into.completion += add.completion;
  into.reasoning += add.reasoning;
  into.cacheRead += add.cacheRead;
  into.cacheWrite += add.cacheWrite;
  into.costNanos += add.costNanos;
  return into;
}

/** Sums rollup rows under a key, keeping the first row's key fields. */
function groupRows<K extends object>(rows: readonly RollupRow[], keyOf: (row: RollupRow) => string, pick: (row: RollupRow) => K): Array<UsageSums & K> {
  const groups = new Map<string, UsageSums & K>();
  for (const row of rows) {
    const key = keyOf(row);
    let group = groups.get(key);
    if (!group) {
      group = { ...ZERO_SUMS, ...pick(row) };
      groups.set(key, group);
    }
    addSums(group, row);
  }
  return [...groups.values()];
}

export function groupByDayModel(rows: readonly RollupRow[]): Array<UsageSums & { day: string; model: string }> {
  return groupRows(rows, (r) => `${r.day}\u0000${r.model}`, (r) => ({ day: r.day, model: r.model })).sort(
    (a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : a.model < b.model ? -1 : a.model > b.model ? 1 : 0),
  );
}

export function groupByAccountModel(rows: readonly RollupRow[]): Array<UsageSums & { accountId: number; model: string }> {
  return groupRows(rows, (r) => `${r.accountId}\u0000${r.model}`, (r) => ({ accountId: r.accountId, model: r.model }));
}

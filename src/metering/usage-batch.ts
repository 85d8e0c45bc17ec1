import type { NewUsageEventRow, RollupRow } from "../store/store.ts";
import type { UsageEvent } from "./usage-event.ts";

/* What a batch of usage rows adds up to: the rollups bills read and the credit it charges. */

/** A call counts in bills when it was answered or cost something (a failed attempt costs nothing and is not a request). */
export function isBillable(row: NewUsageEventRow): boolean {
  return row.status < 400 || (row.costNanos ?? 0) > 0 || (row.promptTokens ?? 0) + (row.completionTokens ?? 0) > 0;
}

/** Credit charged per account by a batch's rows (nano-credits). */
export function chargesOf(rows: readonly NewUsageEventRow[]): Map<number, number> {
  const charged = new Map<number, number>();
  for (const row of rows) if (row.costNanos) charged.set(row.accountId, (charged.get(row.accountId) ?? 0) + row.costNanos);
  return charged;
}

/** The daily rollups of a batch's rows that count in bills, by account, day and model. */
export function dailyRollups(rows: readonly NewUsageEventRow[]): Map<string, RollupRow> {
  const rollups = new Map<string, RollupRow>();
  for (const row of rows) {
    if (!isBillable(row)) continue;
    const model = row.effectiveModel ?? row.requestedModel ?? "";
    const key = `${row.accountId}\u0000${row.day}\u0000${model}`;
    let sum = rollups.get(key);
    if (!sum) {
      sum = { accountId: row.accountId, day: row.day, model, requests: 0, prompt: 0, completion: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0, costNanos: 0 };
      rollups.set(key, sum);
    }
    sum.requests++;
    sum.prompt += row.promptTokens ?? 0;
    sum.completion += row.completionTokens ?? 0;
    sum.reasoning += row.reasoningTokens ?? 0;
    sum.cacheRead += row.cacheReadTokens ?? 0;
    sum.cacheWrite += row.cacheWriteTokens ?? 0;
    sum.costNanos += row.costNanos ?? 0;
  }
  return rollups;
}

/** A settled call's usage row, on its business `day`. */
export function usageRow(event: UsageEvent, day: string): NewUsageEventRow {
  return {
    requestId: event.requestId,
    accountId: event.accountId,
    day,
    createdAt: event.at,
    endpoint: event.endpoint,
    requestedModel: event.requestedModel,
    effectiveModel: event.effectiveModel,
    level: event.level,
    keyId: event.keyId,
    status: event.status,
    stream: event.stream,
    promptTokens: event.usage.prompt,
    completionTokens: event.usage.completion,
    cacheReadTokens: event.usage.cacheRead,
    cacheWriteTokens: event.usage.cacheWrite,
    reasoningTokens: event.usage.reasoning,
    source: event.source,
    latencyMs: Math.round(event.latencyMs),
    costNanos: event.costNanos ?? 0,
    extra: event.extra ? JSON.stringify(event.extra) : null,
  };
}

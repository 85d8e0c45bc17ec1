import { sql } from "drizzle-orm";
import { consume } from "../accounts/ledger.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import type { Usage, UsageSource } from "../gateway/usage/types.ts";
import type { Store } from "../store/db.ts";
import { usageDaily, usageEvents, type NewUsageEventRow } from "../store/schema/usage.ts";

/** What the gateway reports when a model call ends. */
export interface UsageEvent {
  requestId: string;
  accountId: number;
  endpoint: string;
  requestedModel: string | undefined;
  effectiveModel: string | undefined;
  level: number | undefined;
  keyId: number | undefined;
  status: number;
  stream: boolean;
  usage: Usage;
  source: UsageSource;
  latencyMs: number;
  /** When the call started (ms). */
  at: number;
  costNanos?: number;
  extra?: Record<string, number>;
  /** Opaque admission state the meter settles (reservation, window keys). */
  admission?: unknown;
}

/** Receives every completed call; metering charges it, then it is stored. */
export interface UsageSink {
  record(event: UsageEvent): void;
}

export interface UsageRecorder extends UsageSink {
  /** Writes everything pending now (shutdown, tests). */
  flush(): void;
  stop(): void;
  /** Called after each committed flush with the credit charged per account (nano-credits). */
  onCharged(listener: (charged: ReadonlyMap<number, number>) => void): void;
}

const FLUSH_INTERVAL_MS = 100;
const MAX_PENDING = 500;

/** A call counts in bills when it was answered or cost something (a failed attempt costs nothing and is not a request). */
export function isBillable(row: NewUsageEventRow): boolean {
  return row.status < 400 || (row.costNanos ?? 0) > 0 || (row.promptTokens ?? 0) + (row.completionTokens ?? 0) > 0;
}

/**
 * Buffers usage rows and writes them, their daily rollups and the credit they consumed
 * in one transaction per short tick, so SQLite never sits between a client and its
 * response. A clean shutdown flushes; a crash loses at most the last tick (100 ms).
 */
export function createUsageRecorder(deps: { store: Store; clock: Clock; log: Logger }): UsageRecorder {
  let pending: NewUsageEventRow[] = [];
  const listeners: Array<(charged: ReadonlyMap<number, number>) => void> = [];

  const write = (rows: NewUsageEventRow[]): Map<number, number> => {
    const charged = new Map<number, number>();
    const rollups = new Map<string, NewUsageEventRow & { requests: number }>();
    for (const row of rows) {
      if (row.costNanos) charged.set(row.accountId, (charged.get(row.accountId) ?? 0) + row.costNanos);
      if (!isBillable(row)) continue;
      const model = row.effectiveModel ?? row.requestedModel ?? "";
      const key = `${row.accountId}\u0000${row.day}\u0000${model}`;
      const sum = rollups.get(key) ?? { ...row, effectiveModel: model, requests: 0, promptTokens: 0, completionTokens: 0, reasoningTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costNanos: 0 };
      sum.requests++;
      sum.promptTokens! += row.promptTokens ?? 0;
      sum.completionTokens! += row.completionTokens ?? 0;
      sum.reasoningTokens! += row.reasoningTokens ?? 0;
      sum.cacheReadTokens! += row.cacheReadTokens ?? 0;
      sum.cacheWriteTokens! += row.cacheWriteTokens ?? 0;
      sum.costNanos! += row.costNanos ?? 0;
      rollups.set(key, sum);
    }
    const now = deps.clock.now();
    deps.store.db.transaction((tx) => {
      for (let i = 0; i < rows.length; i += 100) tx.insert(usageEvents).values(rows.slice(i, i + 100)).run();
      for (const sum of rollups.values()) {
        tx.insert(usageDaily)
          .values({
            accountId: sum.accountId,
            day: sum.day,
            model: sum.effectiveModel!,
            requests: sum.requests,
            promptTokens: sum.promptTokens,
            completionTokens: sum.completionTokens,
            reasoningTokens: sum.reasoningTokens,
            cacheReadTokens: sum.cacheReadTokens,
            cacheWriteTokens: sum.cacheWriteTokens,
            costNanos: sum.costNanos,
          })
          .onConflictDoUpdate({
            target: [usageDaily.accountId, usageDaily.day, usageDaily.model],
            set: {
              requests: sql`${usageDaily.requests} + excluded.requests`,
              promptTokens: sql`${usageDaily.promptTokens} + excluded.prompt_tokens`,
              completionTokens: sql`${usageDaily.completionTokens} + excluded.completion_tokens`,
              reasoningTokens: sql`${usageDaily.reasoningTokens} + excluded.reasoning_tokens`,
              cacheReadTokens: sql`${usageDaily.cacheReadTokens} + excluded.cache_read_tokens`,
              cacheWriteTokens: sql`${usageDaily.cacheWriteTokens} + excluded.cache_write_tokens`,
              costNanos: sql`${usageDaily.costNanos} + excluded.cost_nanos`,
            },
          })
          .run();
      }
      for (const [accountId, amount] of charged) consume(tx, accountId, amount, now);
    });
    return charged;
  };

  const flush = () => {
    if (pending.length === 0) return;
    const rows = pending;
    pending = [];
    let charged: Map<number, number>;
    try {
      charged = write(rows);
    } catch (error) {
      deps.log.error("usage rows could not be written; retrying on the next tick", { rows: rows.length, error: (error as Error).message });
      pending = rows.concat(pending);
      return;
    }
    for (const listener of listeners) listener(charged);
  };
  const timer = setInterval(flush, FLUSH_INTERVAL_MS);
  timer.unref();
  return {
    record(event) {
      pending.push({
        requestId: event.requestId,
        accountId: event.accountId,
        day: deps.clock.businessDate(event.at),
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
      });
      if (pending.length >= MAX_PENDING) flush();
    },
    flush,
    stop() {
      clearInterval(timer);
      flush();
    },
    onCharged(listener) {
      listeners.push(listener);
    },
  };
}

import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import type { Usage, UsageSource } from "../gateway/usage/types.ts";
import type { Store } from "../store/db.ts";
import { usageEvents, type NewUsageEventRow } from "../store/schema/usage.ts";

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
}

/** Receives every completed call; metering charges it, then it is stored. */
export interface UsageSink {
  record(event: UsageEvent): void;
}

export interface UsageRecorder extends UsageSink {
  /** Writes everything pending now (shutdown, tests). */
  flush(): void;
  stop(): void;
}

const FLUSH_INTERVAL_MS = 100;
const MAX_PENDING = 500;

/**
 * Buffers usage rows and writes them in one transaction per short tick, so SQLite
 * never sits between a client and its response.
 */
export function createUsageRecorder(deps: { store: Store; clock: Clock; log: Logger }): UsageRecorder {
  let pending: NewUsageEventRow[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const rows = pending;
    pending = [];
    try {
      deps.store.db.transaction((tx) => {
        for (let i = 0; i < rows.length; i += 100) tx.insert(usageEvents).values(rows.slice(i, i + 100)).run();
      });
    } catch (error) {
      deps.log.error("usage rows could not be written; retrying on the next tick", {
        rows: rows.length,
        error: (error as Error).message,
      });
      pending = rows.concat(pending);
    }
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
  };
}

import { createConsumer } from "../accounts/ledger.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import type { Admission } from "./admission.ts";
import type { Usage, UsageSource } from "../gateway/usage/types.ts";
import type { Store } from "../store/db.ts";
import type { NewUsageEventRow } from "../store/schema/usage.ts";

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
  /** A token count (`count_tokens`): settled and seen in metrics, but not usage, so never stored. */
  notUsage?: boolean;
  /** What admission decided for the call: the meter settles it (reservations, windows, spend). */
  admission?: Admission;
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

/** Short ticks keep each batch small, so one write never holds the event loop for long. */
const FLUSH_INTERVAL_MS = 50;
const MAX_PENDING = 500;
/** Rows per transaction when a tick writes: about 0.15 ms of work each. */
const SLICE_ROWS = 64;

/** A call counts in bills when it was answered or cost something (a failed attempt costs nothing and is not a request). */
export function isBillable(row: NewUsageEventRow): boolean {
  return row.status < 400 || (row.costNanos ?? 0) > 0 || (row.promptTokens ?? 0) + (row.completionTokens ?? 0) > 0;
}

/**
 * Buffers usage rows and writes them, their daily rollups and the credit they consumed
 * in one transaction per short tick, so SQLite never sits between a client and its
 * response. A clean shutdown flushes; a crash loses at most the last tick (50 ms).
 */
const EVENT_COLUMNS = [
  "request_id", "account_id", "day", "created_at", "endpoint", "requested_model", "effective_model", "level", "key_id", "status",
  "stream", "prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "source",
  "latency_ms", "cost_nanos", "extra",
] as const;

type SqlValue = string | number | null;

/** Rows per multi-row INSERT (20 columns each, far below SQLite's limit of bound parameters). */
const EVENTS_PER_STATEMENT = 32;

function appendEventValues(out: SqlValue[], row: NewUsageEventRow): SqlValue[] {
  out.push(
    row.requestId, row.accountId, row.day, row.createdAt, row.endpoint, row.requestedModel ?? null, row.effectiveModel ?? null,
    row.level ?? null, row.keyId ?? null, row.status, row.stream ? 1 : 0, row.promptTokens ?? 0, row.completionTokens ?? 0,
    row.cacheReadTokens ?? 0, row.cacheWriteTokens ?? 0, row.reasoningTokens ?? 0, row.source, row.latencyMs, row.costNanos ?? 0,
    row.extra ?? null,
  );
  return out;
}

export function createUsageRecorder(deps: { store: Store; clock: Clock; log: Logger }): UsageRecorder {
  let pending: NewUsageEventRow[] = [];
  const insertEvents = (count: number) =>
    deps.store.sqlite.prepare<unknown, SqlValue[]>(
      `INSERT INTO usage_events (${EVENT_COLUMNS.join(", ")}) VALUES ${Array.from({ length: count }, () => `(${EVENT_COLUMNS.map(() => "?").join(", ")})`).join(", ")}`,
    );
  const insertEvent = insertEvents(1);
  // Rows go in groups of EVENTS_PER_STATEMENT: one statement per group costs much less than one per row.
  const insertGroup = insertEvents(EVENTS_PER_STATEMENT);
  const upsertRollup = deps.store.sqlite.prepare<unknown, SqlValue[]>(
    `INSERT INTO usage_daily (account_id, day, model, requests, prompt_tokens, completion_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens, cost_nanos)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (account_id, day, model) DO UPDATE SET
       requests = requests + excluded.requests,
       prompt_tokens = prompt_tokens + excluded.prompt_tokens,
       completion_tokens = completion_tokens + excluded.completion_tokens,
       reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,
       cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
       cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
       cost_nanos = cost_nanos + excluded.cost_nanos`,
  );
  const consume = createConsumer(deps.store.sqlite);
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
    writeAll(rows, rollups.values(), charged, deps.clock.now());
    return charged;
  };
  // Prepared statements on the raw connection: the query builder cost more per row than SQLite did.
  // The transaction function is made once: making one per batch showed in the profile.
  const writeAll = deps.store.sqlite.transaction(
    (rows: NewUsageEventRow[], rollups: Iterable<NewUsageEventRow & { requests: number }>, charged: Map<number, number>, now: number) => {
      let i = 0;
      for (; i + EVENTS_PER_STATEMENT <= rows.length; i += EVENTS_PER_STATEMENT) {
        const values: SqlValue[] = [];
        for (let j = i; j < i + EVENTS_PER_STATEMENT; j++) appendEventValues(values, rows[j]!);
        insertGroup.run(...values);
      }
      for (; i < rows.length; i++) insertEvent.run(...appendEventValues([], rows[i]!));
      for (const sum of rollups) {
        upsertRollup.run(
          sum.accountId,
          sum.day,
          sum.effectiveModel!,
          sum.requests,
          sum.promptTokens ?? 0,
          sum.completionTokens ?? 0,
          sum.reasoningTokens ?? 0,
          sum.cacheReadTokens ?? 0,
          sum.cacheWriteTokens ?? 0,
          sum.costNanos ?? 0,
        );
      }
      for (const [accountId, amount] of charged) consume(accountId, amount, now);
    },
  );

  /** Writes `rows` in one transaction; on failure they go back to the front of the queue. */
  const writeRows = (rows: NewUsageEventRow[]): boolean => {
    let charged: Map<number, number>;
    try {
      charged = write(rows);
    } catch (error) {
      deps.log.error("usage rows could not be written; retrying on the next tick", { rows: rows.length, error: (error as Error).message });
      pending = rows.concat(pending);
      return false;
    }
    for (const listener of listeners) listener(charged);
    return true;
  };

  /** Everything pending, now, in one transaction (shutdown, tests). */
  const flush = () => {
    if (pending.length === 0) return;
    const rows = pending;
    pending = [];
    writeRows(rows);
  };

  /**
   * The tick's write, in slices of SLICE_ROWS rows with the event loop let through
   * between them: one transaction of a tick's rows held every request behind it for
   * as long (0.7 ms at 6,700 calls a second), which showed in the 99th percentile.
   * A backlog beyond a few slices is written in bigger ones, so the queue cannot grow.
   */
  let slicing = false;
  const writeSlice = () => {
    if (pending.length === 0) {
      slicing = false;
      return;
    }
    const size = Math.max(SLICE_ROWS, Math.ceil(pending.length / 4));
    const rows = pending.length <= size ? pending : pending.slice(0, size);
    pending = pending.length <= size ? [] : pending.slice(size);
    if (!writeRows(rows)) {
      slicing = false;
      return;
    }
    setImmediate(writeSlice);
  };
  const tick = () => {
    if (slicing || pending.length === 0) return;
    slicing = true;
    writeSlice();
  };
  const timer = setInterval(tick, FLUSH_INTERVAL_MS);
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
      // A full batch is written right after the current request's work, not inside it.
      if (pending.length >= MAX_PENDING && !slicing) {
        slicing = true;
        setImmediate(writeSlice);
      }
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

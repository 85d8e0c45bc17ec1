import type { Clock } from "../core/clock.ts";
import type { KeyHealthRow, KeyHealthStore, NewKeyHealthRow } from "../store/store.ts";
import type { AttemptFact } from "./request-log.ts";

/**
 * Provider keys' health figures, gathered from settled calls' attempts and added to the
 * store's `key_health` rows with the usage recorder's batches (docs/api.md, "Key health").
 * An attempt is an error when it failed (`error` set: a status, a timeout, a refused or
 * broken connection, an address blocked, a non-answer); a client that left is nobody's
 * error, and an upstream's 4xx for the client's own mistake, passed on, is answered (the
 * key worked). Its time is the call's start plus the attempts' durations up to its end.
 */
export class KeyHealthBatch {
  private rows = new Map<number, NewKeyHealthRow>();

  get size(): number {
    return this.rows.size;
  }

  /**
   * Adds a call's attempts once their error bodies were read (`reading`: a failed
   * attempt's words are its key's last error), as the call's log row waits for them.
   */
  addWhenRead(reading: readonly Promise<void>[], tenantId: number, day: string, start: number, attempts: readonly AttemptFact[], costNanos: number): void {
    if (attempts.length === 0) return;
    if (reading.length === 0) this.add(tenantId, day, start, attempts, costNanos);
    else void Promise.allSettled(reading).then(() => this.add(tenantId, day, start, attempts, costNanos));
  }

  /** Counts a settled call's attempts; `costNanos` goes to the key that answered. */
  add(tenantId: number, day: string, start: number, attempts: readonly AttemptFact[], costNanos: number): void {
    let at = start;
    for (const attempt of attempts) {
      at += attempt.durationMs;
      if (attempt.error === "client_closed") continue;
      const row = this.rowOf(attempt.keyId, tenantId, day);
      if (!row) continue;
      row.requests! += 1;
      row.latencyMs! += attempt.durationMs;
      if (attempt.answered) {
        row.spendNanos! += costNanos;
        if (row.lastSuccessAt == null || at > row.lastSuccessAt) row.lastSuccessAt = at;
      } else if (attempt.error !== undefined) {
        row.errors! += 1;
        if (row.lastErrorAt == null || at >= row.lastErrorAt) {
          row.lastErrorAt = at;
          row.lastErrorStatus = attempt.status ?? null;
          row.lastErrorMessage = attempt.message ?? attempt.error;
        }
      }
    }
  }

  /** The batch's rows, leaving it empty. */
  take(): NewKeyHealthRow[] {
    if (this.rows.size === 0) return [];
    const rows = [...this.rows.values()];
    this.rows = new Map();
    return rows;
  }

  /** Rows a failed write hands back, merged with what came since. */
  putBack(rows: readonly NewKeyHealthRow[]): void {
    for (const back of rows) {
      const row = this.rowOf(back.keyId, back.tenantId ?? 0, back.day);
      if (!row) continue;
      if (back.day !== row.day) continue;
      row.requests! += back.requests ?? 0;
      row.errors! += back.errors ?? 0;
      row.latencyMs! += back.latencyMs ?? 0;
      row.spendNanos! += back.spendNanos ?? 0;
      if (back.lastSuccessAt != null && (row.lastSuccessAt == null || back.lastSuccessAt > row.lastSuccessAt)) row.lastSuccessAt = back.lastSuccessAt;
      if (back.lastErrorAt != null && (row.lastErrorAt == null || back.lastErrorAt > row.lastErrorAt)) {
        row.lastErrorAt = back.lastErrorAt;
        row.lastErrorStatus = back.lastErrorStatus;
        row.lastErrorMessage = back.lastErrorMessage;
      }
    }
  }

  /** The key's row for `day`; a newer day starts its counts afresh (last error and success stay); an older day's figures are dropped (undefined). */
  private rowOf(keyId: number, tenantId: number, day: string): NewKeyHealthRow | undefined {
    let row = this.rows.get(keyId);
    if (!row) {
      row = { keyId, tenantId, day, requests: 0, errors: 0, latencyMs: 0, spendNanos: 0, lastErrorAt: null, lastErrorStatus: null, lastErrorMessage: null, lastSuccessAt: null };
      this.rows.set(keyId, row);
    } else if (day > row.day) {
      Object.assign(row, { day, requests: 0, errors: 0, latencyMs: 0, spendNanos: 0 });
    } else if (day < row.day) return undefined;
    return row;
  }
}

/** A key's health as the key records show it (docs/api.md, "Key health"). */
export interface KeyHealthFigures {
  Today: { Requests: number; Errors: number; Spend: number; AvgLatencyMs: number | null };
  LastError: { At: string; Status: number | null; Message: string } | null;
  LastSuccessAt: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The figures of a stored row (or none) on business day `today`; `credits` turns nano-credits into the wire's credits. */
export function keyHealthFigures(row: KeyHealthRow | undefined, today: string, credits: (nanos: number) => number): KeyHealthFigures {
  const current = row !== undefined && row.day === today;
  const requests = current ? row.requests : 0;
  return {
    Today: {
      Requests: requests,
      Errors: current ? row.errors : 0,
      Spend: current ? credits(row.spendNanos) : 0,
      AvgLatencyMs: requests > 0 ? Math.round(row!.latencyMs / requests) : null,
    },
    LastError: row?.lastErrorAt == null ? null : { At: iso(row.lastErrorAt), Status: row.lastErrorStatus ?? null, Message: row.lastErrorMessage ?? "" },
    LastSuccessAt: row?.lastSuccessAt == null ? null : iso(row.lastSuccessAt),
  };
}

/** How long a tenant's health rows are reused: a key list polled by several consoles reads the store once per this. */
export const KEY_HEALTH_CACHE_MS = 3000;

/**
 * Reads a tenant's health rows from the store (the figures every instance added to),
 * cached briefly; this process's own writes make the cache stale at once, so a call
 * settled here shows in the next read.
 */
export function createKeyHealthReader(deps: { store: { keyHealth: Pick<KeyHealthStore, "ofTenant"> }; clock: Clock; writes: () => number }) {
  const cache = new Map<number, { at: number; writes: number; rows: Promise<Map<number, KeyHealthRow>> }>();
  return (tenantId: number): Promise<Map<number, KeyHealthRow>> => {
    const now = deps.clock.now();
    const writes = deps.writes();
    const hit = cache.get(tenantId);
    if (hit && hit.writes === writes && now - hit.at >= 0 && now - hit.at < KEY_HEALTH_CACHE_MS) return hit.rows;
    const rows = deps.store.keyHealth.ofTenant(tenantId).then((list) => new Map(list.map((row) => [row.keyId, row])));
    cache.set(tenantId, { at: now, writes, rows });
    rows.catch(() => cache.delete(tenantId));
    return rows;
  };
}

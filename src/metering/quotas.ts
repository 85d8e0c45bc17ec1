import type { Clock } from "../core/clock.ts";
import type { Store } from "../store/store.ts";
import type { Measure, PeriodCounter, PeriodSeed } from "../state/state.ts";

/**
 * Business-day and business-month totals (RPD, TPD, DailyLimit, HardLimit/SoftLimit):
 * the counters that name them, and where the State seeds them from (the daily rollups),
 * so a restart or a new day does not reset a quota.
 *
 * What a total counts: `cost` includes the reservations of calls in flight (what
 * DailyLimit and HardLimit are checked against, so concurrent calls cannot overshoot
 * them); `spent` only what calls were actually charged (what SoftLimit is compared with,
 * so a reservation alone never sends the warning).
 */
export type { Measure as DailyMeasure } from "../state/state.ts";

/** Whether a total counts business days (`YYYY-MM-DD`) or months (`YYYY-MM`). */
export type PeriodKind = "day" | "month";

/**
 * Makes the period counters, each once (the same object for the same total, so the
 * State finds its cell by identity). Day and month totals are separate counters: a
 * counter holds one period at a time, so sharing one between `2026-03-10` and `2026-03`
 * would re-seed it on every switch.
 */
export function createPeriodCounters() {
  const made = new Map<string, PeriodCounter>();
  const counterAt = (key: string, seed: PeriodSeed): PeriodCounter => {
    let counter = made.get(key);
    if (!counter) made.set(key, (counter = Object.freeze({ kind: "period", key, seed })));
    return counter;
  };
  return {
    /** The total of one measure for one account (and model), or one model across accounts (of one BYOK tenant). */
    of(measure: Measure, kind: PeriodKind, accountId?: number, model?: string, tenantRoot?: number): PeriodCounter {
      const key = `q:${measure}:${kind}:${accountId ?? `t${tenantRoot ?? "*"}`}:${model ?? "*"}`;
      if (accountId !== undefined) return counterAt(key, { measure, accountId, model });
      return counterAt(key, { measure, model: model ?? "", tenantRoot });
    },
    /**
     * The total of one measure over an account's whole subtree (its own calls and every
     * descendant's): what its DailyLimit, HardLimit and SoftLimit bound.
     */
    subtree(measure: Measure, kind: PeriodKind, root: { id: number; path: string }): PeriodCounter {
      return counterAt(`q:${measure}:${kind}:s${root.id}`, { measure, subtreePath: root.path });
    },
  };
}

export type PeriodCounters = ReturnType<typeof createPeriodCounters>;

/**
 * Reads a period total from the daily rollups: `period` is a day (`YYYY-MM-DD`) or a month
 * (`YYYY-MM`). When the database cannot be read and the period began after it last
 * answered (`answeredAt`: a day, or a month, begins while PostgreSQL is away), the total
 * is 0: no usage row of a period can be in a database that was away since before it
 * began, and the calls of the period are counted by the State as they come. Without
 * that, every call failed at midnight until the database came back.
 */
export function createPeriodSeeder(
  store: Store,
  options: { clock?: Clock; answeredAt?: () => number | undefined; onAssumedZero?: (period: string) => void } = {},
): (seed: PeriodSeed, period: string) => Promise<number> {
  const { clock, answeredAt } = options;
  return async (seed, period) => {
    try {
      return await store.usage.periodTotal(seed, period);
    } catch (error) {
      const at = answeredAt?.();
      if (clock === undefined || at === undefined) throw error;
      const lastSeen = period.length === 7 ? clock.businessMonth(at) : clock.businessDate(at);
      if (period <= lastSeen) throw error;
      options.onAssumedZero?.(period);
      return 0;
    }
  };
}

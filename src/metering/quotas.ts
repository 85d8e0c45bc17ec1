import { and, eq, inArray, like, sql } from "drizzle-orm";
import { accounts } from "../store/schema/accounts.ts";
import type { Store } from "../store/db.ts";
import { usageDaily } from "../store/schema/usage.ts";
import type { Counters } from "./counters.ts";

/**
 * What a day quota or spend total counts. `cost` includes the reservations of calls in
 * flight (what DailyLimit and HardLimit are checked against, so concurrent calls cannot
 * overshoot them); `spent` only what calls were actually charged (what SoftLimit is
 * compared with, so a reservation alone never sends the warning).
 */
export type DailyMeasure = "requests" | "tokens" | "cost" | "spent";

/** Whether a slot counts business days (`YYYY-MM-DD`) or months (`YYYY-MM`). */
export type PeriodKind = "day" | "month";

/**
 * One total, period after period: reading or adding to a new period starts it afresh
 * from the daily rollups. The request path holds these handles instead of building
 * keys per call.
 */
export interface QuotaSlot {
  get(period: string): number;
  add(period: string, amount: number): void;
}

/**
 * Business-day and business-month totals (RPD, TPD, DailyLimit, HardLimit/SoftLimit)
 * kept in the Counters' daily slots. The first touch of a key on a new day seeds it
 * from the daily rollups, so a restart does not reset a quota.
 */
export function createQuotas(deps: { store: Store; counters: Counters }) {
  const column = {
    requests: sql<number>`coalesce(sum(${usageDaily.requests}), 0)`,
    tokens: sql<number>`coalesce(sum(${usageDaily.promptTokens} + ${usageDaily.completionTokens}), 0)`,
    cost: sql<number>`coalesce(sum(${usageDaily.costNanos}), 0)`,
    spent: sql<number>`coalesce(sum(${usageDaily.costNanos}), 0)`,
  };

  /** Seeds from the rollups: `period` is a day (`YYYY-MM-DD`) or a month (`YYYY-MM`). */
  const seed = (measure: DailyMeasure, period: string, accountId: number | undefined, model: string | undefined, tenantRoot: number | undefined) => {
    const parts = [period.length === 7 ? like(usageDaily.day, `${period}-%`) : eq(usageDaily.day, period)];
    if (accountId !== undefined) parts.push(eq(usageDaily.accountId, accountId));
    else if (tenantRoot !== undefined) {
      // A BYOK tenant's model totals count only its own accounts.
      const members = deps.store.db.select({ id: accounts.id }).from(accounts).where(like(accounts.path, `/${tenantRoot}/%`));
      parts.push(inArray(usageDaily.accountId, members));
    }
    if (model !== undefined) parts.push(eq(usageDaily.model, model));
    return deps.store.db.select({ value: column[measure] }).from(usageDaily).where(and(...parts)).get()?.value ?? 0;
  };

  // Day and month totals live in separate slots: a counter slot holds one period at a
  // time, so sharing one between `2026-03-10` and `2026-03` re-seeded it from the
  // database on every switch and lost the in-memory reservations and unflushed charges.
  const keyOf = (measure: DailyMeasure, kind: PeriodKind, accountId: number | undefined, model: string | undefined, tenantRoot: number | undefined) =>
    `q:${measure}:${kind}:${accountId ?? `t${tenantRoot ?? "*"}`}:${model ?? "*"}`;

  /** A subtree's total: every account whose path starts with the root's, deleted ones included. */
  const seedSubtree = (measure: DailyMeasure, period: string, path: string) => {
    const members = deps.store.db.select({ id: accounts.id }).from(accounts).where(like(accounts.path, `${path}%`));
    const day = period.length === 7 ? like(usageDaily.day, `${period}-%`) : eq(usageDaily.day, period);
    return deps.store.db.select({ value: column[measure] }).from(usageDaily).where(and(day, inArray(usageDaily.accountId, members))).get()?.value ?? 0;
  };

  const slots = new Map<string, QuotaSlot>();

  /** The slot under `key`, seeded by `seedFor` whenever it moves to a new period. */
  const slotAt = (key: string, seedFor: (period: string) => number): QuotaSlot => {
    let found = slots.get(key);
    if (found) return found;
    const cell = deps.counters.daySlot(key);
    /** The period this slot was last seeded for. */
    let held: string | undefined;
    const ensure = (period: string) => {
      if (cell.day === period) return;
      cell.day = period;
      cell.value = seedFor(period);
      held = period;
    };
    found = {
      get(period) {
        ensure(period);
        return cell.value;
      },
      add(period, amount) {
        if (amount === 0) return;
        // A call that began before midnight (or the month's end) and settles after it: the
        // past period is no longer checked, and moving the slot back to it would drop the
        // current period's in-memory total. Its row still reaches that day's rollup.
        if (cell.day !== period && (held ?? "") > period) return;
        ensure(period);
        cell.value += amount;
      },
    };
    slots.set(key, found);
    return found;
  };

  /** The total of one measure for one account (and model), or one model across accounts, period after period. */
  const slot = (measure: DailyMeasure, kind: PeriodKind, accountId?: number, model?: string, tenantRoot?: number): QuotaSlot =>
    slotAt(keyOf(measure, kind, accountId, model, tenantRoot), (period) => seed(measure, period, accountId, model, tenantRoot));

  /**
   * The total of one measure over an account's whole subtree (its own calls and every
   * descendant's), period after period: what its DailyLimit, HardLimit and SoftLimit bound.
   */
  const subtreeSlot = (measure: DailyMeasure, kind: PeriodKind, root: { id: number; path: string }): QuotaSlot =>
    slotAt(`q:${measure}:${kind}:s${root.id}`, (period) => seedSubtree(measure, period, root.path));

  const kindOf = (period: string): PeriodKind => (period.length === 7 ? "month" : "day");

  return {
    slot,
    subtreeSlot,
    /**
     * The total of `measure` in `period` for an account (and model), or for a model across
     * all accounts (of one BYOK tenant when `tenantRoot` is given).
     */
    get(measure: DailyMeasure, period: string, accountId?: number, model?: string, tenantRoot?: number): number {
      return slot(measure, kindOf(period), accountId, model, tenantRoot).get(period);
    },
    add(measure: DailyMeasure, period: string, amount: number, accountId?: number, model?: string, tenantRoot?: number): void {
      slot(measure, kindOf(period), accountId, model, tenantRoot).add(period, amount);
    },
  };
}

export type Quotas = ReturnType<typeof createQuotas>;

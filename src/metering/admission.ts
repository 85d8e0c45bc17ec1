import type { AccountRow } from "../store/store.ts";
import type { GaugeCounter, PeriodCounter } from "../state/state.ts";
import type { BillingPlan } from "./billing.ts";
import type { LimitSubject } from "./limits.ts";
import type { RateLimits } from "./rate-limit-headers.ts";

/** What admission decided, settled when the call ends. */
export interface Admission {
  account: Readonly<AccountRow>;
  accountId: number;
  rates: number;
  plan: BillingPlan;
  reserved: number;
  subjects: readonly LimitSubject[];
  /** The subtree totals the call spends against: its account's and every ancestor's. */
  spend: readonly SubtreeSpend[];
  /** When and on which business day the call was admitted: where its token reservation sits. */
  admittedAt: number;
  day: string;
  /** The tightest request and token limits as this call left them (the rate-limit headers); absent when no limit applies. */
  rateLimits?: RateLimits;
}

/**
 * One account's spend over its whole subtree: reservations and charges (`cost`, for
 * DailyLimit and HardLimit) and charges alone (`spent`, for SoftLimit), with the
 * reservations of the subtree's calls in flight (to tell whether waiting helps).
 */
export interface SubtreeSpend {
  account: Readonly<AccountRow>;
  costToday: PeriodCounter;
  costThisMonth: PeriodCounter;
  spentThisMonth: PeriodCounter;
  inFlight: GaugeCounter;
}

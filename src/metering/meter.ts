import type { Principal } from "../accounts/principal.ts";
import type { AccountRow } from "../store/schema/accounts.ts";
import { msUntilNextBusinessDay, msUntilNextBusinessMonth, type Clock } from "../core/clock.ts";
import { HttpError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { Endpoint } from "../gateway/endpoints.ts";
import type { Usage } from "../gateway/usage/types.ts";
import type { CreditBook } from "./credit.ts";
import type { Counters } from "./counters.ts";
import { checkWindows, countRequest, countTokens, type LimitScope, type SystemLimits } from "./limits.ts";
import { planBilling, type BillingPlan } from "./billing.ts";
import type { PriceBook } from "./pricing/price-book.ts";
import type { QuotaSlot, Quotas } from "./quotas.ts";
import type { UsageEvent, UsageRecorder, UsageSink } from "./usage-recorder.ts";
import type { RouterMetrics } from "../metrics/router-metrics.ts";
import { familyOf } from "../http/family.ts";

export { DEFAULT_MAX_OUTPUT_TOKENS, worstCaseNanos } from "./billing.ts";

export interface AdmitInput {
  principal: Principal;
  endpoint: Endpoint;
  effectiveModel: string | undefined;
  json: Record<string, unknown> | undefined;
  /** Text fields of a multipart body (image size and count, …). */
  fields?: ReadonlyMap<string, string>;
  bodyBytes: number;
}

/** What admission decided, settled when the call ends. */
export interface Admission {
  account: Readonly<AccountRow>;
  accountId: number;
  rates: number;
  plan: BillingPlan;
  reserved: number;
  scopes: LimitScope[];
}

/** An account's spend totals: reservations and charges (`cost`, for DailyLimit and HardLimit) and charges alone (`spent`, for SoftLimit). */
interface SpendSlots {
  costToday: QuotaSlot;
  costThisMonth: QuotaSlot;
  spentThisMonth: QuotaSlot;
}

const FREE_PLAN: BillingPlan = { reserve: 0, settle: () => 0 };

const nanos = (credits: number | null) => (credits === null ? null : Math.round(credits * 1e9));

/** A refusal waiting cannot cure: the official SDKs read this and do not retry. */
const NO_RETRY = { "x-should-retry": "false" } as const;
/** A refusal only calls in flight cause: they end within moments, so retry soon. */
const RETRY_SOON = { "retry-after": "1" } as const;

const seconds = (ms: number) => String(Math.max(1, Math.ceil(ms / 1000)));

export interface Meter extends UsageSink {
  /**
   * Admission after authentication and the allowlists: price, credit, spend limits,
   * account windows, account model limits, system model limits — in that order. A
   * refused call is not forwarded and not charged.
   */
  admit(input: AdmitInput): Admission;
  /**
   * Ends an admission that was never used, with no usage row: a realtime session that
   * closes between responses held a reservation for a response that never came.
   */
  release(admission: Admission): void;
}

/**
 * Admits, prices and charges model calls. Usage events pass through here on their
 * way to the recorder: the cost is computed from the reported tokens, the
 * reservation is released, spend and token windows are updated.
 */
export function createMeter(deps: {
  clock: Clock;
  log: Logger;
  prices: () => PriceBook;
  modelLimits: () => SystemLimits;
  credit: CreditBook;
  counters: Counters;
  quotas: Quotas;
  recorder: UsageRecorder;
  metrics?: RouterMetrics;
  /** The BYOK tenant this meter prices for; undefined in a single-tenant deployment. */
  tenantRoot?: number;
  onSpend?: (account: Readonly<AccountRow>) => void;
}): Meter {
  const { clock, credit, quotas } = deps;
  /** Each account's spend slots, resolved once. */
  const spendSlots = new Map<number, SpendSlots>();
  const spendOf = (accountId: number): SpendSlots => {
    let slots = spendSlots.get(accountId);
    if (!slots) {
      slots = {
        costToday: quotas.slot("cost", "day", accountId),
        costThisMonth: quotas.slot("cost", "month", accountId),
        spentThisMonth: quotas.slot("spent", "month", accountId),
      };
      spendSlots.set(accountId, slots);
    }
    return slots;
  };

  return {
    admit(input) {
      const account = input.principal.account;
      const model = input.effectiveModel;
      const plan =
        model === undefined
          ? FREE_PLAN
          : planBilling({ endpoint: input.endpoint, model, prices: deps.prices(), json: input.json, fields: input.fields, bodyBytes: input.bodyBytes, rates: account.rates });
      const reserve = plan.reserve;
      const now = clock.now();
      const day = clock.businessDate(now);
      const month = clock.businessMonth(now);
      // Reservations of calls in flight are what waiting can free: a refusal they alone
      // cause is worth a retry in a moment; one the settled spend causes is not.
      const inFlight = credit.reserved(account.id);
      if (!account.isOwner && reserve > 0 && credit.available(account.id) < reserve) {
        throw credit.available(account.id) + inFlight < reserve
          ? new HttpError("rate_limit", `Insufficient credit for this call (it may cost up to ${reserve / 1e9} credits)`, { code: "insufficient_credit", headers: NO_RETRY })
          : new HttpError("rate_limit", "Insufficient credit while other calls of this account are in flight; retry when they end", {
              code: "insufficient_credit",
              headers: RETRY_SOON,
            });
      }
      const spend = spendOf(account.id);
      // A token count spends nothing: only access rules (checked before) and request windows apply.
      const counting = input.endpoint.counting === true;
      const daily = counting ? null : nanos(account.dailyLimit);
      if (daily !== null && spend.costToday.get(day) + reserve > daily) {
        const settled = spend.costToday.get(day) - inFlight + reserve > daily;
        throw new HttpError("rate_limit", `DailyLimit of ${account.dailyLimit} credits reached for today${settled ? "" : " with the calls in flight"}`, {
          code: "daily_limit_reached",
          headers: settled ? { "retry-after": seconds(msUntilNextBusinessDay(clock, now)) } : RETRY_SOON,
        });
      }
      const hard = counting ? null : nanos(account.hardLimit);
      if (hard !== null && spend.costThisMonth.get(month) + reserve > hard) {
        const settled = spend.costThisMonth.get(month) - inFlight + reserve > hard;
        throw new HttpError("rate_limit", `HardLimit of ${account.hardLimit} credits reached for this month${settled ? "" : " with the calls in flight"}`, {
          code: "hard_limit_reached",
          headers: settled ? { "retry-after": seconds(msUntilNextBusinessMonth(clock, now)), ...NO_RETRY } : RETRY_SOON,
        });
      }
      const scopes = checkWindows({ account, model, day, now, counters: deps.counters, quotas, clock, system: deps.modelLimits(), tenantRoot: deps.tenantRoot, requestsOnly: counting });
      countRequest(scopes, day, now);
      credit.reserve(account.id, reserve);
      // Spend limits count reservations too, so concurrent calls cannot overshoot them.
      spend.costToday.add(day, reserve);
      spend.costThisMonth.add(month, reserve);
      return { account, accountId: account.id, rates: account.rates, plan, reserved: reserve, scopes };
    },

    release(admission) {
      const now = clock.now();
      const day = clock.businessDate(now);
      const spend = spendOf(admission.accountId);
      credit.settle(admission.accountId, admission.reserved, 0);
      spend.costToday.add(day, -admission.reserved);
      spend.costThisMonth.add(day.slice(0, 7), -admission.reserved);
    },

    record(event: UsageEvent) {
      const admission = event.admission as Admission | undefined;
      let cost = event.costNanos ?? 0;
      if (admission) {
        cost = admission.plan.settle(event.usage, event.extra);
        const day = clock.businessDate(event.at);
        const month = day.slice(0, 7);
        const spend = spendOf(admission.accountId);
        credit.settle(admission.accountId, admission.reserved, cost);
        spend.costToday.add(day, cost - admission.reserved);
        spend.costThisMonth.add(month, cost - admission.reserved);
        spend.spentThisMonth.add(month, cost);
        if (!event.notUsage) countTokens(admission.scopes, day, clock.now(), totalTokens(event.usage));
        if (cost > 0) deps.onSpend?.(admission.account);
      }
      observe(deps.metrics, event, cost);
      if (event.notUsage) return;
      deps.recorder.record({ ...event, costNanos: cost, admission: undefined });
    },
  };
}

function totalTokens(usage: Usage): number {
  return usage.prompt + usage.completion;
}

/** Counts a finished call in the metrics: a few map lookups. */
function observe(metrics: RouterMetrics | undefined, event: UsageEvent, cost: number): void {
  if (!metrics) return;
  const family = familyOf(event.endpoint);
  const model = event.effectiveModel ?? "";
  metrics.requests.inc({ family, model, level: event.level === undefined ? "" : String(event.level), status: String(event.status) });
  metrics.duration.observe(event.latencyMs / 1000, { family });
  const { usage } = event;
  if (usage.prompt) metrics.tokens.inc({ model, kind: "prompt" }, usage.prompt);
  if (usage.completion) metrics.tokens.inc({ model, kind: "completion" }, usage.completion);
  if (usage.cacheRead) metrics.tokens.inc({ model, kind: "cache_read" }, usage.cacheRead);
  if (usage.cacheWrite) metrics.tokens.inc({ model, kind: "cache_write" }, usage.cacheWrite);
  if (usage.reasoning) metrics.tokens.inc({ model, kind: "reasoning" }, usage.reasoning);
  if (cost) metrics.credit.inc({ model }, cost / 1e9);
}

import type { Principal } from "../accounts/principal.ts";
import type { AccountRow, NewRequestLogRow } from "../store/store.ts";
import { msUntilNextBusinessDay, msUntilNextBusinessMonth, type Clock } from "../core/clock.ts";
import { HttpError, retryAfterSeconds } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { Endpoint } from "../formats/format.ts";
import { clampedUsage, credibleUsage, type Usage } from "../formats/usage.ts";
import type { Adjustment, AdmitLine, CountState, LimitStanding, PeriodCounter, ReachedLine, Refusal, Standings } from "../state/state.ts";
import { rateLimitHeaders, type RateLimits, type RateLimitStanding } from "./rate-limit-headers.ts";
import type { Family } from "../formats/family.ts";
import { limitSubjects, planWindows, settleTokens, type RefusalReason, type SystemLimits } from "./limits.ts";
import { planBilling, type BillingPlan } from "./billing.ts";
import type { PriceBook } from "./pricing/price-book.ts";
import type { PeriodCounters } from "./quotas.ts";
import type { Admission, SubtreeSpend } from "./admission.ts";
import type { UsageEvent, UsageRecorder, UsageSink } from "./usage-recorder.ts";
import type { RouterMetrics } from "../metrics/router-metrics.ts";
import { observe } from "./call-metrics.ts";

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

export type { Admission } from "./admission.ts";

const FREE_PLAN: BillingPlan = { reserve: 0, tokens: 0, settle: () => 0 };

const nanos = (credits: number | null) => (credits === null ? null : Math.round(credits * 1e9));

/** A refusal waiting cannot cure: the official SDKs read this and do not retry. */
const NO_RETRY = { "x-should-retry": "false" } as const;
/** A refusal only calls in flight cause: they end within moments, so retry soon. */
const RETRY_SOON = { "retry-after": "1" } as const;

/** Too many settled usage rows wait for the database (it is down, or far behind). */
const databaseBehind = (database: string) =>
  new HttpError("unavailable", `${database}, where this router records usage, is unavailable or behind and too many charges wait for it; try again shortly`, {
    code: "database_unavailable",
    headers: RETRY_SOON,
  });


/** Whose limit a refusal is: the caller's own, or an ancestor's that bounds its subtree. */
/** Reservations of calls in flight are what waiting can free: a refusal they alone cause is worth a retry in a moment; one the settled balance causes is not. */
const insufficientCredit = ({ used, held }: Refusal): HttpError =>
  used + held <= 0
    ? new HttpError("rate_limit", "Insufficient credit: the balance is used up", { code: "insufficient_credit", headers: NO_RETRY })
    : new HttpError("rate_limit", "Insufficient credit while other calls of this account are in flight; retry when they end", {
        code: "insufficient_credit",
        headers: RETRY_SOON,
      });

/** A refusal's wait in ms: what it names, else its Retry-After; a refusal waiting cannot cure outweighs any. */
const waitOf = (error: HttpError) => (error.headers?.["x-should-retry"] === "false" ? Infinity : (error.retryAfterMs ?? Number(error.headers?.["retry-after"] ?? 0) * 1000));
/** Of every line a refusal reached, the one with the longest wait: waiting less, the client would be refused again. */
function longestWait(reasons: ReadonlyArray<RefusalReason | undefined>, first: Refusal): { refusal: ReachedLine; error: HttpError } {
  let best = { refusal: first as ReachedLine, error: reasons[first.line]!(first) };
  for (const other of first.also ?? []) {
    const error = reasons[other.line]?.(other);
    if (error && waitOf(error) > waitOf(best.error)) best = { refusal: other, error };
  }
  return best;
}

const whose = (spend: SubtreeSpend, caller: Readonly<AccountRow>) =>
  spend.account.id === caller.id ? "" : ` of account ${spend.account.name} (shared by its subtree)`;

export interface Meter extends UsageSink {
  /**
   * Admission after authentication and the allowlists: price, credit, spend limits of
   * the account and its ancestors, account windows, account model limits, system model
   * limits — in that order. A refused call is not forwarded and not charged.
   */
  admit(input: AdmitInput): Promise<Admission>;
  /**
   * Ends an admission that was never used, with no usage row: a realtime session that
   * closes between responses held a reservation for a response that never came.
   */
  release(admission: Admission): Promise<void>;
  /** A call refused before it went upstream: its request-log row alone (docs/api.md, "Request log"). */
  refused(row: NewRequestLogRow): void;
  /**
   * `record`, with a promise that settles once the call's settlement is counted in the
   * State (it never rejects: a failure is logged, as `record` does). A settlement across
   * midnight adds its cost to a day that did not hold its reservation, and a shared State
   * may count it a few milliseconds later: what must see that charge waits for this (a
   * realtime session's next response).
   */
  settle(event: UsageEvent): Promise<void>;
}

const COUNTED: Promise<void> = Promise.resolve();

/**
 * Admits, prices and charges model calls. Usage events pass through here on their
 * way to the recorder: the cost is computed from the reported tokens, the
 * reservation is released, spend and token windows are updated.
 *
 * The admission rule (docs/api.md, "Reservation"): a call is admitted while something
 * is left once the reservations of calls in flight are set aside (credit, and each
 * DailyLimit and HardLimit over its subtree), whatever the call's own worst case; then
 * its worst case is reserved. So a large worst case never locks an account out, and
 * calls admitted together overspend by at most one call.
 */
export function createMeter(deps: {
  clock: Clock;
  log: Logger;
  prices: () => PriceBook;
  modelLimits: () => SystemLimits;
  /** Where limits, spend and credit are counted (in process, or shared by instances). */
  counts: CountState;
  periods: PeriodCounters;
  recorder: UsageRecorder;
  metrics?: RouterMetrics;
  /** The BYOK tenant this meter prices for; undefined in a single-tenant deployment. */
  tenantRoot?: number;
  /** An account and its ancestors, nearest first (default: the account alone). */
  chainOf?: (account: Readonly<AccountRow>) => Promise<readonly Readonly<AccountRow>[]>;
  /** The database usage rows go to, as a refusal names it (default "PostgreSQL"). */
  databaseName?: string;
  /** Told after a charge, for each account whose subtree spent it, with the counter of its month's charges. */
  onSpend?: (account: Readonly<AccountRow>, spentThisMonth: PeriodCounter) => void;
}): Meter {
  const { clock, counts, periods } = deps;
  const DATABASE_BEHIND = databaseBehind(deps.databaseName ?? "PostgreSQL");
  const alone = new WeakMap<Readonly<AccountRow>, Promise<readonly Readonly<AccountRow>[]>>();
  const chainOf =
    deps.chainOf ??
    ((account: Readonly<AccountRow>) => {
      let chain = alone.get(account);
      if (!chain) alone.set(account, (chain = Promise.resolve([account])));
      return chain;
    });
  /** Subtree totals per account, resolved once; the row is refreshed when the account changes. */
  const subtrees = new Map<number, SubtreeSpend>();
  const subtreeOf = (account: Readonly<AccountRow>): SubtreeSpend => {
    let spend = subtrees.get(account.id);
    if (!spend) {
      spend = {
        account,
        costToday: periods.subtree("cost", "day", account),
        costThisMonth: periods.subtree("cost", "month", account),
        spentThisMonth: periods.subtree("spent", "month", account),
        inFlight: Object.freeze({ kind: "gauge", key: `spend:${account.id}:reserved` }),
      };
      subtrees.set(account.id, spend);
    }
    spend.account = account;
    return spend;
  };
  // The spend entries of a chain, as a settled promise made once per chain: the chain
  // source hands back the same promise while the chain holds, so a call makes none.
  const spendByChain = new WeakMap<Promise<readonly Readonly<AccountRow>[]>, Promise<readonly SubtreeSpend[]>>();
  const spendOf = (account: Readonly<AccountRow>): Promise<readonly SubtreeSpend[]> => {
    const chain = chainOf(account);
    let spend = spendByChain.get(chain);
    if (!spend) spendByChain.set(chain, (spend = chain.then((rows) => rows.map(subtreeOf))));
    return spend;
  };

  /**
   * Plans the spend limits of the call's subtrees: each DailyLimit and HardLimit is
   * checked against settled spend plus reservations, and the call's reservation is
   * counted in them and in the subtree's in-flight gauge.
   */
  const planSpend = (account: Readonly<AccountRow>, spend: readonly SubtreeSpend[], day: string, month: string, reserve: number, lines: AdmitLine[], reasons: Array<RefusalReason | undefined>) => {
    const why = spendReasons(account, spend);
    for (let i = 0; i < spend.length; i++) {
      const entry = spend[i]!;
      const limits = entry.account;
      lines.push({ counter: entry.costToday, period: day, limit: nanos(limits.dailyLimit) ?? undefined, add: reserve, held: entry.inFlight });
      lines.push({ counter: entry.costThisMonth, period: month, limit: nanos(limits.hardLimit) ?? undefined, add: reserve, held: entry.inFlight });
      reasons.push(why[i]!.daily, why[i]!.hard);
      if (reserve > 0) {
        lines.push({ counter: entry.inFlight, add: reserve });
        reasons.push(undefined);
      }
    }
  };

  /**
   * How each subtree's DailyLimit and HardLimit words a refusal, made once per chain (the
   * request path makes no closure); the limits are read when refusing, as they are then.
   */
  const reasonsByChain = new WeakMap<readonly SubtreeSpend[], ReadonlyArray<{ daily: RefusalReason; hard: RefusalReason }>>();
  const spendReasons = (account: Readonly<AccountRow>, spend: readonly SubtreeSpend[]) => {
    let why = reasonsByChain.get(spend);
    if (!why) {
      why = spend.map((entry) => ({
        daily: ({ used, held }: Refusal) => {
          const settled = used - held >= nanos(entry.account.dailyLimit)!;
          return new HttpError("rate_limit", `DailyLimit of ${entry.account.dailyLimit} credits${whose(entry, account)} reached for today${settled ? "" : " with the calls in flight"}`, {
            code: "daily_limit_reached",
            headers: settled ? { "retry-after": retryAfterSeconds(msUntilNextBusinessDay(clock, clock.now())) } : RETRY_SOON,
          });
        },
        hard: ({ used, held }: Refusal) => {
          const settled = used - held >= nanos(entry.account.hardLimit)!;
          return new HttpError("rate_limit", `HardLimit of ${entry.account.hardLimit} credits${whose(entry, account)} reached for this month${settled ? "" : " with the calls in flight"}`, {
            code: "hard_limit_reached",
            headers: settled ? { "retry-after": retryAfterSeconds(msUntilNextBusinessMonth(clock, clock.now())), ...NO_RETRY } : RETRY_SOON,
          });
        },
      }));
      reasonsByChain.set(spend, why);
    }
    return why;
  };

  /**
   * Moves a call's spend from its reservation to its cost (0 releases it). The reservation
   * was counted in the day and month of the admission; the cost belongs to those of the
   * call's row (`at`, its start: an HTTP call's first attempt, a realtime response's
   * `response.created`), the ones its rollup lands in. When midnight passed between the
   * two they are different totals, so the reservation leaves the one it was counted in and
   * the cost goes to the other: one `cost − reserved` in the row's day took a reservation
   * off a day that never held it, and that day's DailyLimit (HardLimit across a month)
   * could then be overspent by a whole worst case. A change to a day already past is
   * dropped by the State, which is right: that day is no longer checked.
   */
  const settleSpend = (admission: Admission, cost: number, at: number, out: Adjustment[]) => {
    const day = clock.businessDate(at);
    const month = day.slice(0, 7);
    const reservedMonth = admission.day.slice(0, 7);
    out.push({ counter: { kind: "credit", accountId: admission.accountId }, release: admission.reserved, charge: cost });
    for (const entry of admission.spend) {
      moveSpend(entry.costToday, admission.day, day, admission.reserved, cost, out);
      moveSpend(entry.costThisMonth, reservedMonth, month, admission.reserved, cost, out);
      out.push({ counter: entry.spentThisMonth, period: month, delta: cost });
      if (admission.reserved > 0) out.push({ counter: entry.inFlight, delta: -admission.reserved });
    }
  };

  /** Credit of an account, as the State names it: made once per account. */
  const creditCounters = new Map<number, { readonly kind: "credit"; readonly accountId: number }>();
  const creditOf = (accountId: number) => {
    let counter = creditCounters.get(accountId);
    if (!counter) creditCounters.set(accountId, (counter = Object.freeze({ kind: "credit", accountId })));
    return counter;
  };

  /** A limit's standing for the headers: a period total resets with its business day. */
  const standingOf = (lines: readonly AdmitLine[], standing: LimitStanding, now: number): RateLimitStanding => ({
    limit: lines[standing.line]!.limit!,
    remaining: standing.remaining,
    resetMs: standing.resetMs ?? msUntilNextBusinessDay(clock, now),
  });
  const rateLimitsOf = (lines: readonly AdmitLine[], standings: Standings, now: number): RateLimits => {
    const limits: RateLimits = {};
    if (standings.requests) limits.requests = standingOf(lines, standings.requests, now);
    if (standings.tokens) limits.tokens = standingOf(lines, standings.tokens, now);
    return limits;
  };
  /** A refusal, with the rate-limit headers of the window that refused (nothing left, free again when the refusal says). */
  const refusalOf = (lines: readonly AdmitLine[], reasons: ReadonlyArray<RefusalReason | undefined>, reached: Refusal, family: Family, now: number): HttpError => {
    const { refusal, error } = longestWait(reasons, reached);
    const line = lines[refusal.line]!;
    if (line.report === undefined || line.limit === undefined) return error;
    // The wait the refusal itself names (1 s when only calls in flight make the difference), so the reset equals Retry-After.
    const resetMs = error.retryAfterMs ?? (line.counter.kind === "window" ? refusal.retryAfterMs : msUntilNextBusinessDay(clock, now));
    const headers = rateLimitHeaders(family, { [line.report]: { limit: line.limit, remaining: 0, resetMs } }, now);
    if (!headers) return error;
    return new HttpError(error.kind, error.message, { code: error.code, param: error.param, status: error.status, headers: { ...error.headers, ...headers }, retryAfterMs: error.retryAfterMs });
  };

  const incredible = (event: UsageEvent): UsageEvent => {
    deps.log.warn("an upstream reported usage that cannot be true; charged within the call's reservation", { req: event.requestId, key: event.keyId });
    return { ...event, usage: clampedUsage(event.usage), source: "estimated" };
  };

  /** Charges a finished call: settles its admission and hands its row to the recorder (see `Meter.settle`). */
  const settle = (incoming: UsageEvent): Promise<void> => {
    const admission = incoming.admission;
    let counted = COUNTED;
    // Counts an upstream reports that cannot be true (1e308, past 2^53, fractions) are
    // charged as an estimate would be: within the call's bound and its reservation.
    const reported = incoming.source === "upstream" && !credibleUsage(incoming.usage) ? incredible(incoming) : incoming;
    const event = admission && reported.source === "estimated" ? capEstimate(reported, admission) : reported;
    let cost = event.costNanos ?? 0;
    if (admission) {
      cost = admission.plan.settle(event.usage, event.extra);
      // An estimate never exceeds what could have happened: the call's reservation.
      if (event.source === "estimated") cost = Math.min(cost, admission.reserved);
      const changes: Adjustment[] = [];
      settleSpend(admission, cost, event.at, changes);
      settleTokens(admission.subjects, admission.day, admission.admittedAt, admission.plan.tokens, event.notUsage ? 0 : totalTokens(event.usage), changes);
      const onSpend = cost > 0 ? deps.onSpend : undefined;
      // A settlement Redis did not answer is sent again once it does (state/redis/repairs.ts); the charge itself is in the usage row below.
      counted = counts.adjust(changes).then(
        onSpend &&
          (() => {
            for (const entry of admission.spend) onSpend(entry.account, entry.spentThisMonth);
          }),
        (error: unknown) => deps.log.error("a call's settlement could not be counted", { account: admission.accountId, error: (error as Error).message }),
      );
    }
    observe(deps.metrics, event, cost);
    // A call without a usage row (a token count) still has its keys' figures, and its log row when it failed.
    deps.recorder.record({ ...event, costNanos: cost, admission: undefined });
    return counted;
  };

  return {
    async admit(input) {
      // Charges must reach the database some day: past the bound of rows waiting for it, no more are made.
      if (deps.recorder.full()) throw DATABASE_BEHIND;
      const account = input.principal.account;
      const model = input.effectiveModel;
      // A token count spends nothing: only access rules (checked before) and request windows apply.
      const counting = input.endpoint.counting === true;
      const plan =
        model === undefined || counting
          ? FREE_PLAN
          : planBilling({ endpoint: input.endpoint, model, prices: deps.prices(), json: input.json, fields: input.fields, bodyBytes: input.bodyBytes, rates: account.rates });
      const reserve = plan.reserve;
      const now = clock.now();
      const day = clock.businessDate(now);
      const month = clock.businessMonth(now);
      // In order: credit, the spend limits of the subtrees, then the windows. The State
      // checks them all and counts the call in them in one step, or refuses at the first reached.
      const lines: AdmitLine[] = [];
      const reasons: Array<RefusalReason | undefined> = [];
      lines.push({ counter: creditOf(account.id), limit: !account.isOwner && reserve > 0 ? 0 : undefined, add: reserve });
      // Reservations of calls in flight are what waiting can free: a refusal they alone
      // cause is worth a retry in a moment; one the settled balance causes is not.
      reasons.push(insufficientCredit);
      const spend = counting ? [] : await spendOf(account);
      // Spend limits count reservations too, so concurrent calls cannot overshoot them.
      planSpend(account, spend, day, month, reserve, lines, reasons);
      const subjects = limitSubjects(account, model, periods, deps.modelLimits(), deps.tenantRoot);
      planWindows({ subjects, day, now, tokens: plan.tokens, clock, requestsOnly: counting }, lines, reasons);
      const verdict = await counts.admit(lines, now);
      if (!verdict.admitted) throw refusalOf(lines, reasons, verdict.refusal, input.endpoint.family, now);
      // One shape for every admission, limits or not.
      const rateLimits = verdict.standings ? rateLimitsOf(lines, verdict.standings, now) : undefined;
      return { account, accountId: account.id, rates: account.rates, plan, reserved: reserve, subjects, spend, admittedAt: now, day, rateLimits };
    },

    async release(admission) {
      const changes: Adjustment[] = [];
      // No row and no cost: only the reservation leaves the day and month it was counted in.
      settleSpend(admission, 0, admission.admittedAt, changes);
      settleTokens(admission.subjects, admission.day, admission.admittedAt, admission.plan.tokens, 0, changes);
      await counts.adjust(changes);
    },

    refused(row) {
      deps.recorder.refused(row);
    },

    record(incoming: UsageEvent) {
      void settle(incoming);
    },

    settle,
  };
}

/**
 * A spend total's settlement: the reservation out of the period it was counted in, the
 * cost into the period of the call's row. One change when they are the same period (the
 * common case), two when midnight (or a month's end) passed between them.
 */
function moveSpend(counter: PeriodCounter, reservedIn: string, chargedIn: string, reserved: number, cost: number, out: Adjustment[]): void {
  if (reservedIn === chargedIn) {
    out.push({ counter, period: chargedIn, delta: cost - reserved });
    return;
  }
  if (reserved !== 0) out.push({ counter, period: reservedIn, delta: -reserved });
  // A release (no cost) leaves the row's period alone: no change, nothing to seed.
  if (cost !== 0) out.push({ counter, period: chargedIn, delta: cost });
}

/**
 * An estimated usage within what the call could have used: input within its input
 * bound (the body, or the context window), output within max_tokens (or the model's
 * maximum output) times the answers asked for.
 */
function capEstimate(event: UsageEvent, admission: Admission): UsageEvent {
  const bound = admission.plan.bound;
  if (!bound) return event;
  const { usage } = event;
  if (usage.prompt <= bound.input && usage.completion <= bound.output) return event;
  const completion = Math.min(usage.completion, bound.output);
  return { ...event, usage: { ...usage, prompt: Math.min(usage.prompt, bound.input), completion, reasoning: Math.min(usage.reasoning, completion) } };
}

function totalTokens(usage: Usage): number {
  return usage.prompt + usage.completion;
}

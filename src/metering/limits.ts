import { msUntilNextBusinessDay, type Clock } from "../core/clock.ts";
import { rateLimited, type HttpError } from "../core/errors.ts";
import { bestMatch, compilePattern, type CompiledPattern } from "../routing/patterns.ts";
import type { AccountRow } from "../store/store.ts";
import type { Adjustment, AdmitLine, GaugeCounter, PeriodCounter, Refusal, WindowCounter } from "../state/state.ts";
import type { PeriodCounters } from "./quotas.ts";

/** rpm, rph, rpd, tpm, tph, tpd; absent or null means no limit. */
export type WindowLimits = Partial<Record<"rpm" | "rph" | "rpd" | "tpm" | "tph" | "tpd", number | null>>;

/** MODEL_LIMITS compiled: model pattern → limits. */
export type SystemLimits = ReadonlyArray<{ pattern: CompiledPattern; limits: WindowLimits }>;

/** One set of limits and the counters it is checked against. */
export interface LimitSubject {
  /** Names the limit in refusals: "account", "account model gpt-4o", "model gpt-4o". */
  label: string;
  limits: WindowLimits;
  /** The subject's counters, made when the subject is made. */
  requestsPerMinute: WindowCounter;
  requestsPerHour: WindowCounter;
  tokensPerMinute: WindowCounter;
  tokensPerHour: WindowCounter;
  requestsPerDay: PeriodCounter;
  tokensPerDay: PeriodCounter;
  /** Tokens reserved by the subject's calls in flight. */
  tokensInFlight: GaugeCounter;
  /** How each of its limits words a refusal: made on the subject's first call, then reused. */
  reasons?: SubjectReasons;
}

/** A subject's refusals, by window, in the order its lines are planned. */
interface SubjectReasons {
  rpm: RefusalReason;
  rph: RefusalReason;
  rpd: RefusalReason;
  tpm: RefusalReason;
  tph: RefusalReason;
  tpd: RefusalReason;
}

const MINUTE = 60_000;
const HOUR = 3_600_000;

const modelLimitCache = new WeakMap<AccountRow, SystemLimits>();

/** An account's ModelLimits compiled once per account snapshot. */
export function accountModelLimits(account: AccountRow): SystemLimits {
  let compiled = modelLimitCache.get(account);
  if (!compiled) {
    const raw = account.modelLimits ? (JSON.parse(account.modelLimits) as Record<string, WindowLimits>) : {};
    compiled = Object.entries(raw).map(([source, limits]) => ({ pattern: compilePattern(source), limits }));
    modelLimitCache.set(account, compiled);
  }
  return compiled;
}

const hasAny = (limits: WindowLimits) => Object.values(limits).some((v) => v !== null && v !== undefined);

/** A subject's request and token windows of one length are a pair (`WindowLane`): admissions count both. */
const windowCounter = (key: string, windowMs: number, pair: string, index: 0 | 1): WindowCounter =>
  Object.freeze({ kind: "window", key, windowMs, lane: Object.freeze({ key: pair, index }) });

function makeSubject(
  fields: { label: string; key: string; accountId: number | undefined; model: string | undefined; tenantRoot?: number; limits: WindowLimits },
  periods: PeriodCounters,
): LimitSubject {
  const { key, accountId, model, tenantRoot } = fields;
  return {
    label: fields.label,
    limits: fields.limits,
    requestsPerMinute: windowCounter(`${key}:r:m`, MINUTE, `${key}:m`, 0),
    requestsPerHour: windowCounter(`${key}:r:h`, HOUR, `${key}:h`, 0),
    tokensPerMinute: windowCounter(`${key}:t:m`, MINUTE, `${key}:m`, 1),
    tokensPerHour: windowCounter(`${key}:t:h`, HOUR, `${key}:h`, 1),
    requestsPerDay: periods.of("requests", "day", accountId, model, tenantRoot),
    tokensPerDay: periods.of("tokens", "day", accountId, model, tenantRoot),
    tokensInFlight: Object.freeze({ kind: "gauge", key: `${key}:t:reserved` }),
  };
}

/** The subjects of one account snapshot and model, made under one set of system limits. */
interface CachedSubjects {
  system: SystemLimits;
  tenantRoot: number | undefined;
  subjects: LimitSubject[];
}

/** Models remembered per account snapshot; past this the account's entries start afresh. */
const MODELS_PER_ACCOUNT = 256;
const subjectCache = new WeakMap<PeriodCounters, WeakMap<AccountRow, Map<string | undefined, CachedSubjects>>>();

/**
 * The subjects whose limits apply to an account's call of a model: the account's own
 * limits, its ModelLimits entry for the model, the system MODEL_LIMITS entry. Made once
 * per account snapshot, model and MODEL_LIMITS (an edit of either replaces the object),
 * so the request path matches no patterns and builds no keys.
 */
export function limitSubjects(account: AccountRow, model: string | undefined, periods: PeriodCounters, system: SystemLimits, tenantRoot?: number): LimitSubject[] {
  let byAccount = subjectCache.get(periods);
  if (!byAccount) subjectCache.set(periods, (byAccount = new WeakMap()));
  let byModel = byAccount.get(account);
  if (!byModel) byAccount.set(account, (byModel = new Map()));
  const cached = byModel.get(model);
  if (cached && cached.system === system && cached.tenantRoot === tenantRoot) return cached.subjects;

  const subjects: LimitSubject[] = [];
  const accountLimits: WindowLimits = { rpm: account.rpm, rph: account.rph, rpd: account.rpd, tpm: account.tpm, tph: account.tph, tpd: account.tpd };
  if (hasAny(accountLimits)) subjects.push(makeSubject({ label: "account", key: `a:${account.id}`, accountId: account.id, model: undefined, limits: accountLimits }, periods));
  if (model !== undefined) {
    const own = bestMatch(accountModelLimits(account), model);
    if (own && hasAny(own.limits)) {
      subjects.push(makeSubject({ label: `account model ${model}`, key: `am:${account.id}:${model}`, accountId: account.id, model, limits: own.limits }, periods));
    }
    const match = bestMatch(system, model);
    if (match && hasAny(match.limits)) {
      subjects.push(makeSubject({ label: `model ${model}`, key: `m:${tenantRoot ?? "*"}:${model}`, accountId: undefined, model, tenantRoot, limits: match.limits }, periods));
    }
  }
  if (byModel.size >= MODELS_PER_ACCOUNT) byModel.clear();
  byModel.set(model, { system, tenantRoot, subjects });
  return subjects;
}

/** Renders a refusal of the line it was planned with. */
export type RefusalReason = (refusal: Refusal) => HttpError;

function refuse(subject: LimitSubject, name: string, limit: number, retryMs: number, byCallsInFlight = false): HttpError {
  return rateLimited(`${name} limit of ${limit} reached (${subject.label})${byCallsInFlight ? " with the tokens reserved by calls in flight" : ""}`, `${name.toLowerCase()}_limit_reached`, retryMs);
}

/** A call in flight ends within moments, settling its reservation to what it used. */
const CALLS_IN_FLIGHT_RETRY_MS = 1000;

const limitOf = (limit: number | null | undefined) => (limit === null ? undefined : limit);

/**
 * Plans every window limit that applies to a call, account first, then the account's
 * model limit, then the system MODEL_LIMITS (model limits count on the effective
 * model, so aliases and mapped names share one counter): each subject's request windows
 * and day quota are checked and counted (1), its token windows and day quota checked
 * and charged the call's token reservation, held in the subject's in-flight gauge. Lines
 * go to `lines`, and how to word each refusal to `reasons`, in the same order.
 */
export function planWindows(
  input: { subjects: readonly LimitSubject[]; day: string; now: number; tokens: number; clock: Clock; requestsOnly?: boolean },
  lines: AdmitLine[],
  reasons: Array<RefusalReason | undefined>,
): void {
  const { day, tokens, clock } = input;
  const add = tokens > 0 ? tokens : 0;
  const requestsOnly = input.requestsOnly === true;
  for (const subject of input.subjects) {
    const { limits } = subject;
    const why = (subject.reasons ??= reasonsOf(subject, clock));
    lines.push({ counter: subject.requestsPerMinute, limit: limitOf(limits.rpm), add: 1, report: "requests" });
    lines.push({ counter: subject.requestsPerHour, limit: limitOf(limits.rph), add: 1, report: "requests" });
    lines.push({ counter: subject.requestsPerDay, period: day, limit: limitOf(limits.rpd), add: 1, report: "requests" });
    reasons.push(why.rpm, why.rph, why.rpd);
    // Token windows hold settled counts plus the reservations of calls in flight.
    const held = subject.tokensInFlight;
    lines.push({ counter: subject.tokensPerMinute, limit: requestsOnly ? undefined : limitOf(limits.tpm), add, held, report: "tokens" });
    lines.push({ counter: subject.tokensPerHour, limit: requestsOnly ? undefined : limitOf(limits.tph), add, held, report: "tokens" });
    lines.push({ counter: subject.tokensPerDay, period: day, limit: requestsOnly ? undefined : limitOf(limits.tpd), add, held, report: "tokens" });
    reasons.push(why.tpm, why.tph, why.tpd);
    if (add > 0) {
      lines.push({ counter: held, add });
      reasons.push(undefined);
    }
  }
}

/**
 * The refusals of a subject's limits, made once (the request path makes no closure):
 * a day quota's wait runs to the next business day; a token refusal that only the
 * reservations of calls in flight cause is worth a retry in a moment.
 */
function reasonsOf(subject: LimitSubject, clock: Clock): SubjectReasons {
  const { limits } = subject;
  const untilTomorrow = () => msUntilNextBusinessDay(clock, clock.now());
  const request = (name: string, limit: number | null | undefined, retry?: () => number): RefusalReason => (refusal) =>
    refuse(subject, name, limit!, retry ? retry() : refusal.retryAfterMs);
  const token = (name: string, limit: number | null | undefined, retry?: () => number): RefusalReason => (refusal) =>
    refusal.used - refusal.held < limit!
      ? refuse(subject, name, limit!, CALLS_IN_FLIGHT_RETRY_MS, true)
      : refuse(subject, name, limit!, retry ? retry() : refusal.retryAfterMs);
  return {
    rpm: request("RPM", limits.rpm),
    rph: request("RPH", limits.rph),
    rpd: request("RPD", limits.rpd, untilTomorrow),
    tpm: token("TPM", limits.tpm),
    tph: token("TPH", limits.tph),
    tpd: token("TPD", limits.tpd, untilTomorrow),
  };
}

/**
 * Replaces a call's token reservation with the tokens it used, where the reservation was
 * made (the admission's moment and day): the windows then hold what really happened.
 */
export function settleTokens(subjects: readonly LimitSubject[], day: string, admittedAt: number, reserved: number, used: number, out: Adjustment[]): void {
  const change = used - reserved;
  for (const subject of subjects) {
    if (change !== 0) {
      out.push({ counter: subject.tokensPerMinute, at: admittedAt, delta: change });
      out.push({ counter: subject.tokensPerHour, at: admittedAt, delta: change });
      out.push({ counter: subject.tokensPerDay, period: day, delta: change });
    }
    if (reserved > 0) out.push({ counter: subject.tokensInFlight, delta: -reserved });
  }
}

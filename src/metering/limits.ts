import { msUntilNextBusinessDay, type Clock } from "../core/clock.ts";
import { HttpError } from "../core/errors.ts";
import { bestMatch, compilePattern, type CompiledPattern } from "../routing/patterns.ts";
import type { AccountRow } from "../store/schema/accounts.ts";
import type { Counters, DaySlot, Window } from "./counters.ts";
import type { QuotaSlot, Quotas } from "./quotas.ts";

/** rpm, rph, rpd, tpm, tph, tpd; absent or null means no limit. */
export type WindowLimits = Partial<Record<"rpm" | "rph" | "rpd" | "tpm" | "tph" | "tpd", number | null>>;

/** MODEL_LIMITS compiled: model pattern → limits. */
export type SystemLimits = ReadonlyArray<{ pattern: CompiledPattern; limits: WindowLimits }>;

/** One set of limits and the counters it is checked against. */
export interface LimitScope {
  /** Names the limit in refusals: "account", "account model gpt-4o", "model gpt-4o". */
  label: string;
  /** Base of the counter keys. */
  key: string;
  /** Quota keys: the account (undefined for system model limits) and the model (undefined for account limits). */
  accountId: number | undefined;
  model: string | undefined;
  /** For system model limits in a BYOK tenant: the tenant whose accounts share the counter. */
  tenantRoot?: number;
  limits: WindowLimits;
  /** The scope's counters, resolved when the scope is made. */
  requestsPerMinute: Window;
  requestsPerHour: Window;
  tokensPerMinute: Window;
  tokensPerHour: Window;
  requestsPerDay: QuotaSlot;
  tokensPerDay: QuotaSlot;
  /** Tokens reserved by the scope's calls in flight (its `value`; the period is unused). */
  tokensInFlight: DaySlot;
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

function makeScope(
  fields: Pick<LimitScope, "label" | "key" | "accountId" | "model" | "tenantRoot" | "limits">,
  counters: Counters,
  quotas: Quotas,
): LimitScope {
  const { key, accountId, model, tenantRoot } = fields;
  return {
    ...fields,
    requestsPerMinute: counters.window(`${key}:r:m`, MINUTE),
    requestsPerHour: counters.window(`${key}:r:h`, HOUR),
    tokensPerMinute: counters.window(`${key}:t:m`, MINUTE),
    tokensPerHour: counters.window(`${key}:t:h`, HOUR),
    requestsPerDay: quotas.slot("requests", "day", accountId, model, tenantRoot),
    tokensPerDay: quotas.slot("tokens", "day", accountId, model, tenantRoot),
    tokensInFlight: counters.daySlot(`${key}:t:reserved`),
  };
}

/** The scopes of one account snapshot and model, made under one set of system limits. */
interface CachedScopes {
  system: SystemLimits;
  quotas: Quotas;
  tenantRoot: number | undefined;
  scopes: LimitScope[];
}

/** Models remembered per account snapshot; past this the account's entries start afresh. */
const MODELS_PER_ACCOUNT = 256;
const scopeCache = new WeakMap<Counters, WeakMap<AccountRow, Map<string | undefined, CachedScopes>>>();

/**
 * The scopes whose limits apply to an account's call of a model: the account's own
 * limits, its ModelLimits entry for the model, the system MODEL_LIMITS entry. Made once
 * per account snapshot, model and MODEL_LIMITS (an edit of either replaces the object),
 * so the request path matches no patterns and builds no keys.
 */
export function limitScopes(account: AccountRow, model: string | undefined, counters: Counters, quotas: Quotas, system: SystemLimits, tenantRoot?: number): LimitScope[] {
  let byAccount = scopeCache.get(counters);
  if (!byAccount) scopeCache.set(counters, (byAccount = new WeakMap()));
  let byModel = byAccount.get(account);
  if (!byModel) byAccount.set(account, (byModel = new Map()));
  const cached = byModel.get(model);
  if (cached && cached.system === system && cached.quotas === quotas && cached.tenantRoot === tenantRoot) return cached.scopes;

  const scopes: LimitScope[] = [];
  const accountLimits: WindowLimits = { rpm: account.rpm, rph: account.rph, rpd: account.rpd, tpm: account.tpm, tph: account.tph, tpd: account.tpd };
  if (hasAny(accountLimits)) scopes.push(makeScope({ label: "account", key: `a:${account.id}`, accountId: account.id, model: undefined, limits: accountLimits }, counters, quotas));
  if (model !== undefined) {
    const own = bestMatch(accountModelLimits(account), model);
    if (own && hasAny(own.limits)) {
      scopes.push(makeScope({ label: `account model ${model}`, key: `am:${account.id}:${model}`, accountId: account.id, model, limits: own.limits }, counters, quotas));
    }
    const match = bestMatch(system, model);
    if (match && hasAny(match.limits)) {
      scopes.push(makeScope({ label: `model ${model}`, key: `m:${tenantRoot ?? "*"}:${model}`, accountId: undefined, model, tenantRoot, limits: match.limits }, counters, quotas));
    }
  }
  if (byModel.size >= MODELS_PER_ACCOUNT) byModel.clear();
  byModel.set(model, { system, quotas, tenantRoot, scopes });
  return scopes;
}

function refuse(scope: LimitScope, name: string, limit: number, retryMs: number, byCallsInFlight = false): never {
  throw new HttpError("rate_limit", `${name} limit of ${limit} reached (${scope.label})${byCallsInFlight ? " with the tokens reserved by calls in flight" : ""}`, {
    code: `${name.toLowerCase()}_limit_reached`,
    headers: { "retry-after": String(Math.max(1, Math.ceil(retryMs / 1000))) },
  });
}

/** A call in flight ends within moments, settling its reservation to what it used. */
const CALLS_IN_FLIGHT_RETRY_MS = 1000;

/**
 * Checks every window limit that applies to a call, account first, then the
 * account's model limit, then the system MODEL_LIMITS. Model limits count on the
 * effective model, so aliases and mapped names share one counter. Returns the
 * scopes to count the call in; throws 429 with Retry-After at the first limit reached.
 */
export function checkWindows(input: {
  account: AccountRow;
  model: string | undefined;
  day: string;
  now: number;
  counters: Counters;
  quotas: Quotas;
  clock: Clock;
  system: SystemLimits;
  /** The BYOK tenant (its owner's id); undefined in a single-tenant deployment. */
  tenantRoot?: number;
  /** Check the request windows only (a token count uses no tokens). */
  requestsOnly?: boolean;
}): LimitScope[] {
  const { day, now } = input;
  const scopes = limitScopes(input.account, input.model, input.counters, input.quotas, input.system, input.tenantRoot);
  for (const scope of scopes) {
    const { limits } = scope;
    const windowed = (name: string, limit: number | null | undefined, window: Window) => {
      if (limit !== null && limit !== undefined && window.sum(now) >= limit) refuse(scope, name, limit, window.retryAfterMs(now, limit));
    };
    const daily = (name: string, limit: number | null | undefined, slot: QuotaSlot) => {
      if (limit !== null && limit !== undefined && slot.get(day) >= limit) refuse(scope, name, limit, msUntilNextBusinessDay(input.clock, now));
    };
    // Token windows hold settled counts plus the reservations of calls in flight: when
    // the reservations alone make the difference, the wait is for those calls to end.
    const tokens = (name: string, limit: number | null | undefined, used: number, retryMs: () => number) => {
      if (limit === null || limit === undefined || used < limit) return;
      if (used - scope.tokensInFlight.value < limit) refuse(scope, name, limit, CALLS_IN_FLIGHT_RETRY_MS, true);
      refuse(scope, name, limit, retryMs());
    };
    windowed("RPM", limits.rpm, scope.requestsPerMinute);
    windowed("RPH", limits.rph, scope.requestsPerHour);
    daily("RPD", limits.rpd, scope.requestsPerDay);
    if (input.requestsOnly) continue;
    tokens("TPM", limits.tpm, scope.tokensPerMinute.sum(now), () => scope.tokensPerMinute.retryAfterMs(now, limits.tpm!));
    tokens("TPH", limits.tph, scope.tokensPerHour.sum(now), () => scope.tokensPerHour.retryAfterMs(now, limits.tph!));
    tokens("TPD", limits.tpd, scope.tokensPerDay.get(day), () => msUntilNextBusinessDay(input.clock, now));
  }
  return scopes;
}

/** Counts an admitted request in every scope's request windows and day quota. */
export function countRequest(scopes: LimitScope[], day: string, now: number): void {
  for (const scope of scopes) {
    scope.requestsPerMinute.add(1, now);
    scope.requestsPerHour.add(1, now);
    scope.requestsPerDay.add(day, 1);
  }
}

/**
 * Reserves an admitted call's token bound in every scope's token windows and day quota,
 * so calls admitted together cannot together pass a token limit by more than one call.
 */
export function reserveTokens(scopes: LimitScope[], day: string, now: number, tokens: number): void {
  if (tokens <= 0) return;
  for (const scope of scopes) {
    scope.tokensPerMinute.add(tokens, now);
    scope.tokensPerHour.add(tokens, now);
    scope.tokensPerDay.add(day, tokens);
    scope.tokensInFlight.value += tokens;
  }
}

/**
 * Replaces a call's token reservation with the tokens it used, where the reservation was
 * made (the admission's moment and day): the windows then hold what really happened.
 */
export function settleTokens(scopes: LimitScope[], day: string, admittedAt: number, reserved: number, used: number): void {
  const change = used - reserved;
  for (const scope of scopes) {
    if (change !== 0) {
      scope.tokensPerMinute.add(change, admittedAt);
      scope.tokensPerHour.add(change, admittedAt);
      scope.tokensPerDay.add(day, change);
    }
    if (reserved > 0) scope.tokensInFlight.value = Math.max(0, scope.tokensInFlight.value - reserved);
  }
}

import { msUntilNextBusinessDay, type Clock } from "../core/clock.ts";
import { HttpError } from "../core/errors.ts";
import { bestMatch, compilePattern, type CompiledPattern } from "../routing/patterns.ts";
import type { AccountRow } from "../store/schema/accounts.ts";
import type { Counters } from "./counters.ts";
import type { Quotas } from "./quotas.ts";

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
}): LimitScope[] {
  const { account, model, day, now, counters, quotas } = input;
  const scopes: LimitScope[] = [];
  const accountLimits: WindowLimits = { rpm: account.rpm, rph: account.rph, rpd: account.rpd, tpm: account.tpm, tph: account.tph, tpd: account.tpd };
  if (hasAny(accountLimits)) scopes.push({ label: "account", key: `a:${account.id}`, accountId: account.id, model: undefined, limits: accountLimits });
  if (model !== undefined) {
    const own = bestMatch(accountModelLimits(account), model);
    if (own && hasAny(own.limits)) {
      scopes.push({ label: `account model ${model}`, key: `am:${account.id}:${model}`, accountId: account.id, model, limits: own.limits });
    }
    const system = bestMatch(input.system, model);
    if (system && hasAny(system.limits)) {
      const tenantRoot = input.tenantRoot;
      scopes.push({ label: `model ${model}`, key: `m:${tenantRoot ?? "*"}:${model}`, accountId: undefined, model, tenantRoot, limits: system.limits });
    }
  }
  for (const scope of scopes) {
    const { limits, key } = scope;
    const refuse = (name: string, limit: number, retryMs: number) => {
      throw new HttpError("rate_limit", `${name} limit of ${limit} reached (${scope.label})`, {
        code: `${name.toLowerCase()}_limit_reached`,
        headers: { "retry-after": String(Math.max(1, Math.ceil(retryMs / 1000))) },
      });
    };
    const windowed = (name: string, limit: number | null | undefined, series: string, windowMs: number) => {
      if (limit === null || limit === undefined) return;
      if (counters.sum(series, now, windowMs) >= limit) refuse(name, limit, counters.retryAfterMs(series, now, windowMs, limit));
    };
    const daily = (name: string, limit: number | null | undefined, measure: "requests" | "tokens") => {
      if (limit === null || limit === undefined) return;
      if (quotas.get(measure, day, scope.accountId, scope.model, scope.tenantRoot) >= limit) refuse(name, limit, msUntilNextBusinessDay(input.clock, now));
    };
    windowed("RPM", limits.rpm, `${key}:r:m`, MINUTE);
    windowed("RPH", limits.rph, `${key}:r:h`, HOUR);
    daily("RPD", limits.rpd, "requests");
    windowed("TPM", limits.tpm, `${key}:t:m`, MINUTE);
    windowed("TPH", limits.tph, `${key}:t:h`, HOUR);
    daily("TPD", limits.tpd, "tokens");
  }
  return scopes;
}

/** Counts an admitted request in every scope's request windows and day quota. */
export function countRequest(scopes: LimitScope[], counters: Counters, quotas: Quotas, day: string, now: number): void {
  for (const scope of scopes) {
    counters.add(`${scope.key}:r:m`, 1, now, MINUTE);
    counters.add(`${scope.key}:r:h`, 1, now, HOUR);
    quotas.add("requests", day, 1, scope.accountId, scope.model, scope.tenantRoot);
  }
}

/** Adds a finished call's tokens to every scope's token windows and day quota. */
export function countTokens(scopes: LimitScope[], counters: Counters, quotas: Quotas, day: string, now: number, tokens: number): void {
  if (tokens <= 0) return;
  for (const scope of scopes) {
    counters.add(`${scope.key}:t:m`, tokens, now, MINUTE);
    counters.add(`${scope.key}:t:h`, tokens, now, HOUR);
    quotas.add("tokens", day, tokens, scope.accountId, scope.model, scope.tenantRoot);
  }
}

/**
 * `GET /x-route?model=M[&account=A][&family=F]`: how a call for M by A would be served
 * now, step by step, without making it: may A call it at all (and which rule refuses
 * it), MODEL_MAPPER, LEVEL_MAPPER, the Level's switch-over state, the candidate keys
 * in the order they would be tried with why each would or would not be picked, the
 * price, and the limits that would apply. Owners see their tenant's keys; a manager
 * asking about an account of its subtree sees Levels and states, not key details.
 */
import { Elysia } from "elysia";
import { canManage } from "../accounts/access.ts";
import { principalOf, type Principal } from "../accounts/principal.ts";
import type { AccountsService } from "../accounts/service.ts";
import { badRequest, forbidden } from "../core/errors.ts";
import type { Clock } from "../core/clock.ts";
import type { Family } from "../formats/family.ts";
import { FORMATS, formatOf } from "../formats/registry.ts";
import { checkModel } from "../http/access.ts";
import { authPlugin, type AuthenticateDeps } from "../http/plugins.ts";
import { limitSubjects } from "../metering/limits.ts";
import { createPeriodCounters } from "../metering/quotas.ts";
import { availability } from "../routing/health.ts";
import { bestMatch } from "../routing/patterns.ts";
import type { PoolKey } from "../routing/pool-key.ts";
import { DEFAULT_LEVEL } from "../routing/route-model.ts";
import type { AccountRow } from "../store/store.ts";
import type { Tenant } from "../tenancy/tenants.ts";
import { adapterFor, type Adapters } from "../upstreams/index.ts";

export interface RouteExplainDeps extends AuthenticateDeps {
  readonly clock: Clock;
  readonly adapters: Adapters;
  readonly accountsService: Pick<AccountsService, "resolve">;
}

/** Why a key would or would not take the call now. */
function keyState(key: PoolKey, now: number, serves: boolean): { state: string; why: string } {
  if (!key.status) return { state: "disabled", why: "disabled (Status false)" };
  if (!serves) return { state: "unsupported", why: "its provider type has no endpoint for this call" };
  const state = availability(key, now);
  if (state === "ready") return { state, why: key.inFlight > 0 ? `ready, ${key.inFlight} calls in flight (fewest first)` : "ready" };
  if (state === "probe") return { state, why: "asleep, due for its one probe call: it goes first" };
  const until = key.sleepUntil === null ? "until woken" : `until ${new Date(key.sleepUntil).toISOString()}`;
  return { state: "asleep", why: `asleep (${key.sleepReason ?? "unknown"}) ${until}` };
}

/** The account the question is about: the caller, or one it may see. */
async function subjectOf(deps: RouteExplainDeps, caller: Principal, raw: string | null): Promise<AccountRow> {
  const self = caller.account;
  if (!raw || raw === String(self.id) || raw === self.name || raw.toLowerCase() === self.email) return self;
  // An owner reaches its whole tenant; a manager its subtree (others do not exist for it).
  return deps.accountsService.resolve(self, raw, "subtree");
}

/** The order a Level's keys are tried in: the probe first, then ready keys by fewest calls in flight. */
const RANK: Record<string, number> = { probe: 0, ready: 1 };
const byPickOrder = (a: { state: string; inFlight: number }, b: { state: string; inFlight: number }) =>
  (RANK[a.state] ?? 2) - (RANK[b.state] ?? 2) || a.inFlight - b.inFlight;

/** The path of the family's most usual call, for asking a provider type whether it serves the call. */
function representativePath(family: Family, model: string): string {
  const format = formatOf(family);
  if (format.pathModels) return `/${format.pathModels.versions[0]}/models/${model}:${format.pathModels.primary}`;
  return Object.values(format.endpoints)[0]?.path ?? "/v1/chat/completions";
}

export function explainRoute(tenant: Tenant, principal: Principal, model: string, family: Family, now: number, adapters: Adapters, withKeys: boolean) {
  let refusal: { rule: string; message: string } | null = null;
  try {
    checkModel(principal, model);
  } catch (error) {
    refusal = { rule: "AllowModels", message: (error as Error).message };
  }
  const routing = tenant.settings.routing();
  const mapped = bestMatch(routing.modelMap, model);
  const effectiveModel = mapped?.target ?? model;
  const levelRule = bestMatch(routing.levelMap, effectiveModel);
  const level = levelRule?.level ?? DEFAULT_LEVEL;
  // The Levels in the order a call tries them: the routed one, then down its SWITCH_OVER chain.
  const chain: number[] = [];
  for (let current: number | undefined = level; current !== undefined && !chain.includes(current); current = routing.switchOver.get(current)) chain.push(current);
  const call = {
    family,
    method: "POST",
    path: representativePath(family, effectiveModel),
    search: "",
    model: effectiveModel,
    stream: false,
    json: {},
    bytes: undefined,
    headers: new Headers(),
  };
  let chosen = false;
  const levels = chain.map((lvl) => {
    const ranked = tenant.pool
      .keysOf(lvl)
      .map((key) => ({ key, inFlight: key.inFlight, ...keyState(key, now, adapterFor(adapters, key).supports(call)) }))
      .sort(byPickOrder);
    const keys = ranked.map(({ key, state, why }) => {
      const picked = !chosen && (state === "ready" || state === "probe");
      if (picked) chosen = true;
      return { ...(withKeys && { ID: key.id, Name: key.name }), state, why, would_serve: picked };
    });
    return { level: lvl, switched: tenant.switchOver.isSwitched(lvl), backup: routing.switchOver.get(lvl) ?? null, keys };
  });
  const price = tenant.settings.prices().lookup("ChatPricing", effectiveModel) ?? null;
  const account = principal.account;
  const subjects = limitSubjects(account, effectiveModel, createPeriodCounters(), tenant.settings.modelLimits());
  return {
    object: "route",
    model,
    account: { ID: account.id, Name: account.name },
    allowed: refusal === null,
    refused_by: refusal,
    model_mapper: mapped ? { pattern: mapped.pattern.source, target: mapped.target } : null,
    effective_model: effectiveModel,
    level_mapper: levelRule ? { pattern: levelRule.pattern.source, level: levelRule.level } : null,
    level,
    levels,
    served: chosen,
    price,
    limits: [
      ...subjects.map((subject) => ({ applies_to: subject.label, ...subject.limits })),
      ...(account.dailyLimit !== null || account.hardLimit !== null ? [{ applies_to: "account spend", DailyLimit: account.dailyLimit, HardLimit: account.hardLimit }] : []),
    ],
  };
}

export function routeExplainRoutes(deps: RouteExplainDeps) {
  return new Elysia().use(authPlugin(deps)).get(
    "/x-route",
    async ({ request, principal, tenant }) => {
      if (!principal.account.isOwner && !canManage(principal.account)) throw forbidden("Only owners and account managers may explain routes", "manage_not_allowed");
      const query = new URL(request.url).searchParams;
      const model = query.get("model")?.trim();
      if (!model) throw badRequest("model is required", "model");
      const rawFamily = query.get("family") || "openai";
      if (!(rawFamily in FORMATS)) throw badRequest(`family must be one of ${Object.keys(FORMATS).join(", ")}`, "family");
      const subject = await subjectOf(deps, principal, query.get("account"));
      const asked = subject.id === principal.account.id ? principal : principalOf(subject);
      // Key ids and names are the owner's business; a manager sees Levels and states.
      return explainRoute(tenant, asked, model, rawFamily as Family, deps.clock.now(), deps.adapters, principal.account.isOwner);
    },
    { auth: true },
  );
}

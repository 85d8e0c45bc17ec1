/**
 * `GET /x-route?model=M[&account=A][&format=F]`: how a call for M by A in the client API F would be served
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
import { KEY_FORMATS, type KeyFormat } from "../wire/constants.ts";
import type { RouteExplanation } from "../wire/route.ts";
import { callFit, modelCallOf, representativeTarget, upstreamFamilyOf } from "./translation.ts";

export interface RouteExplainDeps extends AuthenticateDeps {
  readonly clock: Clock;
  readonly adapters: Adapters;
  readonly accountsService: Pick<AccountsService, "resolve">;
}

/** Why a key would or would not take the call now. */
function keyState(key: PoolKey, now: number, speaks: boolean, serves: boolean, translated: string | undefined): { state: string; why: string } {
  if (!key.status) return { state: "disabled", why: "disabled (Status false)" };
  if (!speaks) return { state: "unsupported", why: `it speaks ${[...key.formats.set].join(", ")}, and no translator carries this call to those` };
  if (!serves) return { state: "unsupported", why: "its provider type has no endpoint for this call" };
  const through = translated ? `, through a translator to ${translated} (keys speaking the call's format go first)` : "";
  const state = availability(key, now);
  if (state === "ready") return { state, why: (key.inFlight > 0 ? `ready, ${key.inFlight} calls in flight (fewest first)` : "ready") + through };
  if (state === "probe") return { state, why: `asleep, due for its one probe call: it goes first${through}` };
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
const USABLE = new Set(["probe", "ready"]);
/** The pool's own order (key-pool.ts `choose`): usable keys by format fit, then a due probe, then the fewest calls in flight. */
type Ranked = { state: string; inFlight: number; rank: number; turn: number };
const byPickOrder = (a: Ranked, b: Ranked) =>
  Number(USABLE.has(b.state)) - Number(USABLE.has(a.state)) || b.rank - a.rank || Number(b.state === "probe") - Number(a.state === "probe") || a.inFlight - b.inFlight || a.turn - b.turn;

/**
 * How a call for `model` by `principal` in the client format `format` would be served
 * now, worked out as the pipeline works it out: the same mappers, Level chain, key
 * states and format fit (a key speaking the format before one reached through a
 * translator, then a due probe, then the fewest calls in flight).
 */
export function explainRoute(tenant: Tenant, principal: Principal, model: string, format: KeyFormat, now: number, adapters: Adapters, withKeys: boolean): RouteExplanation {
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
  const modelCall = modelCallOf(format);
  const fit = callFit(modelCall, effectiveModel);
  const native = { family: modelCall.family, method: "POST", ...representativeTarget(modelCall, effectiveModel), model: effectiveModel, stream: false, json: {}, bytes: undefined, headers: new Headers() };
  /** The call a key would be sent (the client's, or its translation) and whether its provider type serves it. */
  const fitOf = (key: PoolKey) => {
    const rank = fit.rank(key);
    if (rank === 0) return { rank, serves: false, translated: undefined };
    const translator = fit.translatorFor(key.formats);
    const upstream = translator ? { ...native, family: upstreamFamilyOf(translator), ...translator.upstreamTarget(effectiveModel, false) } : native;
    return { rank, serves: adapterFor(adapters, key).supports(upstream), translated: translator?.upstream };
  };
  let chosen = false;
  const levels = chain.map((lvl) => {
    // A switched Level with a backup sends its calls there (but for the probe a quiet minute allows).
    const switched = tenant.switchOver.isSwitched(lvl);
    const passedOver = switched && routing.switchOver.has(lvl);
    const pooled = tenant.pool.keysOf(lvl);
    const start = tenant.pool.turnOf(lvl);
    const ranked = pooled
      .map((key, index) => {
        const f = fitOf(key);
        // Keys alike go in turn from where the pool's next choice starts (round-robin).
        const turn = (index - start + pooled.length) % pooled.length;
        return { key, inFlight: key.inFlight, rank: f.serves ? f.rank : 0, turn, ...keyState(key, now, f.rank > 0, f.serves, f.translated) };
      })
      .sort(byPickOrder);
    const keys = ranked.map(({ key, state, why }) => {
      const picked = !chosen && !passedOver && (state === "ready" || state === "probe");
      if (picked) chosen = true;
      return { ...(withKeys && { ID: key.id, Name: key.name }), state, why, would_serve: picked };
    });
    return { level: lvl, switched, backup: routing.switchOver.get(lvl) ?? null, keys };
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
      // `family` is the parameter's former name (openai, anthropic or gemini, which are formats too).
      const param = query.has("format") ? "format" : "family";
      const rawFormat = query.get(param) || "openai";
      if (!(KEY_FORMATS as readonly string[]).includes(rawFormat)) throw badRequest(`${param} must be one of ${KEY_FORMATS.join(", ")}`, param);
      const subject = await subjectOf(deps, principal, query.get("account"));
      const asked = subject.id === principal.account.id ? principal : principalOf(subject);
      // Key ids and names are the owner's business; a manager sees Levels and states.
      return explainRoute(tenant, asked, model, rawFormat as KeyFormat, deps.clock.now(), deps.adapters, principal.account.isOwner);
    },
    { auth: true },
  );
}

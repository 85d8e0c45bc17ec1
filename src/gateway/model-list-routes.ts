import { Elysia } from "elysia";
import type { Principal } from "../accounts/principal.ts";
import { modelFromPath, notFound } from "../core/errors.ts";
import type { ModelFacts } from "../formats/format.ts";
import { speaks } from "../routing/key-formats.ts";
import { routeModel } from "../routing/route-model.ts";
import { KEY_FORMATS } from "../wire/constants.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import type { Tenant } from "../tenancy/tenants.ts";
import type { AddressGuard } from "../upstreams/address-policy.ts";
import type { Family } from "../formats/family.ts";
import { familyOfRequest, formatOf } from "../formats/registry.ts";
import { authPlugin, type AuthenticateDeps } from "../http/plugins.ts";
import { listAllows } from "../routing/patterns.ts";
import { createModelDirectory, type ModelDirectory } from "./model-directory.ts";
import { availableModels, routesToUsableKey } from "./models.ts";

/**
 * The model lists the SDKs call (docs/api.md, "Model lists"), in each family's shape:
 * OpenAI `GET /v1/models` and `/models`, Anthropic `GET /v1/models` (told by its
 * `anthropic-version` header), Gemini `GET /v1beta/models` and `GET /v1/models` with
 * `x-goog-api-key`; and one model by id on each.
 */

export interface ModelListDeps extends AuthenticateDeps {
  readonly log: Logger;
  readonly clock: Clock;
  readonly upstreamTls: { ca: string[] } | undefined;
  readonly addressGuard: Pick<AddressGuard, "check">;
  /** Where the model directories' refresh timers are stopped at shutdown. */
  readonly beforeClose: Array<() => void | Promise<void>>;
}

export function modelListRoutes(deps: ModelListDeps) {
  const directories = new Map<number, ModelDirectory>();
  const directoryOf = (tenant: Tenant): ModelDirectory => {
    let directory = directories.get(tenant.tenantId);
    if (!directory) {
      directory = createModelDirectory({
        log: deps.log,
        fetchInit: deps.upstreamTls ? { tls: deps.upstreamTls } : {},
        checkUrl: (url) => deps.addressGuard.check(url),
        catalog: () => tenant.settings.prices().table,
      });
      directories.set(tenant.tenantId, directory);
      deps.beforeClose.push(() => directory!.stop());
    }
    return directory;
  };

  const allowedFor = (principal: Principal) => (model: string) => principal.allowModels.length === 0 || listAllows(principal.allowModels, model);

  /** The caller's models now; keys whose lists are missing or stale are fetched in the background. */
  const modelsOf = (principal: Principal, tenant: Tenant): string[] => {
    const directory = directoryOf(tenant);
    directory.refresh(tenant.pool.all());
    return availableModels(tenant.settings.routing(), tenant.pool, directory, allowedFor(principal), deps.clock.now());
  };

  /** One model: listed, or any allowed model that routes to a usable key. */
  const oneModel = (principal: Principal, tenant: Tenant, id: string): string => {
    const listed = modelsOf(principal, tenant).includes(id);
    if (listed || (allowedFor(principal)(id) && !id.includes("*") && routesToUsableKey(tenant.settings.routing(), tenant.pool, id))) return id;
    throw notFound(`The model ${id} does not exist or is not available to this key`, "model_not_found");
  };

  /**
   * What a list says of a model: its context from the tenant's price table (Gemini lists
   * show it), and the formats its Level's enabled keys speak natively for it.
   */
  const factsOf = (tenant: Tenant) => (id: string): ModelFacts => {
    const limits = tenant.settings.prices().lookup("ChatPricing", id);
    const route = routeModel(tenant.settings.routing(), id);
    const formats = new Set<string>();
    for (const key of tenant.pool.keysOf(route.level)) {
      if (!key.status) continue;
      for (const format of KEY_FORMATS) if (speaks(key.formats, format, route.effectiveModel)) formats.add(format);
    }
    return { contextWindow: limits?.ContextWindow, maxOutput: limits?.MaxOutput, formats: KEY_FORMATS.filter((format) => formats.has(format)) };
  };

  const list = (family: Family, request: Request, principal: Principal, tenant: Tenant) =>
    formatOf(family).modelList(modelsOf(principal, tenant), new URL(request.url).searchParams, factsOf(tenant));

  const one = (family: Family, principal: Principal, tenant: Tenant, raw: string) =>
    formatOf(family).model(oneModel(principal, tenant, modelFromPath(raw).replace(/^models\//, "")), factsOf(tenant));

  type Ctx = { request: Request; principal: Principal; tenant: Tenant; path: string };
  return new Elysia()
    .use(authPlugin(deps))
    .get("/v1/models", ({ request, principal, tenant, path }: Ctx) => list(familyOfRequest(request, path), request, principal, tenant), { auth: true })
    .get("/models", ({ request, principal, tenant }: Ctx) => list("openai", request, principal, tenant), { auth: true })
    .get("/v1beta/models", ({ request, principal, tenant }: Ctx) => list("gemini", request, principal, tenant), { auth: true })
    // The id is everything after `models/`: a model name may hold slashes (`vendor/model`),
    // which the Google SDKs send unencoded (the OpenAI and Anthropic SDKs encode them).
    .get("/v1/models/*", ({ request, principal, tenant, path }: Ctx) => one(familyOfRequest(request, path), principal, tenant, path.slice("/v1/models/".length)), { auth: true })
    .get("/v1beta/models/*", ({ principal, tenant, path }: Ctx) => one("gemini", principal, tenant, path.slice("/v1beta/models/".length)), { auth: true });
}

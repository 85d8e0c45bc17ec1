import { Elysia } from "elysia";
import type { Principal } from "../accounts/principal.ts";
import { badRequest, notFound } from "../core/errors.ts";
import type { Deps, TenantDeps } from "../deps.ts";
import { familyOfRequest, type Family } from "../http/family.ts";
import { authPlugin } from "../http/plugins.ts";
import { listAllows } from "../routing/patterns.ts";
import { createModelDirectory, type ModelDirectory } from "./model-directory.ts";
import { availableModels, routesToUsableKey } from "./models.ts";

/**
 * The model lists the SDKs call (docs/api.md, "Model lists"), in each family's shape:
 * OpenAI `GET /v1/models` and `/models`, Anthropic `GET /v1/models` (told by its
 * `anthropic-version` header), Gemini `GET /v1beta/models` and `GET /v1/models` with
 * `x-goog-api-key`; and one model by id on each.
 */

const EPOCH = "1970-01-01T00:00:00Z";
const EMBEDDING = /embed/i;

const openaiModel = (id: string) => ({ id, object: "model", created: 0, owned_by: "router" });
const anthropicModel = (id: string) => ({ type: "model", id, display_name: id, created_at: EPOCH });

function pageSize(value: string | null, fallback: number, max: number, param: string): number {
  if (value === null || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw badRequest(`${param} must be an integer from 1 to ${max}`, param);
  return n;
}

export function modelListRoutes(deps: Deps) {
  const directories = new Map<number, ModelDirectory>();
  const directoryOf = (tenant: TenantDeps): ModelDirectory => {
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
  const modelsOf = (principal: Principal, tenant: TenantDeps): string[] => {
    const directory = directoryOf(tenant);
    directory.refresh(tenant.pool.all());
    return availableModels(tenant.settings.routing(), tenant.pool, directory, allowedFor(principal), deps.clock.now());
  };

  /** One model: listed, or any allowed model that routes to a usable key. */
  const oneModel = (principal: Principal, tenant: TenantDeps, id: string): string => {
    const listed = modelsOf(principal, tenant).includes(id);
    if (listed || (allowedFor(principal)(id) && !id.includes("*") && routesToUsableKey(tenant.settings.routing(), tenant.pool, id))) return id;
    throw notFound(`The model ${id} does not exist or is not available to this key`, "model_not_found");
  };

  const geminiModel = (tenant: TenantDeps, id: string) => {
    const limits = tenant.settings.prices().lookup("ChatPricing", id);
    return {
      name: `models/${id}`,
      baseModelId: id,
      version: "",
      displayName: id,
      description: "",
      ...(limits?.ContextWindow !== undefined && { inputTokenLimit: limits.ContextWindow }),
      ...(limits?.MaxOutput !== undefined && { outputTokenLimit: limits.MaxOutput }),
      supportedGenerationMethods: EMBEDDING.test(id) ? ["embedContent", "batchEmbedContents"] : ["generateContent", "streamGenerateContent", "countTokens"],
    };
  };

  const list = (family: Family, request: Request, principal: Principal, tenant: TenantDeps) => {
    const ids = modelsOf(principal, tenant);
    const query = new URL(request.url).searchParams;
    if (family === "anthropic") {
      const limit = pageSize(query.get("limit"), 20, 1000, "limit");
      const after = query.get("after_id");
      const before = query.get("before_id");
      let from = 0;
      let to = ids.length;
      if (after) from = ids.indexOf(after) + 1;
      if (before) to = Math.max(0, ids.indexOf(before));
      const page = before && !after ? ids.slice(Math.max(from, to - limit), to) : ids.slice(from, Math.min(to, from + limit));
      const more = before && !after ? to - page.length > from : from + page.length < to;
      return { data: page.map(anthropicModel), has_more: more, first_id: page[0] ?? null, last_id: page.at(-1) ?? null };
    }
    if (family === "gemini") {
      const size = pageSize(query.get("pageSize"), 50, 1000, "pageSize");
      const token = query.get("pageToken");
      const from = token ? Number.parseInt(Buffer.from(token, "base64url").toString("utf8"), 10) : 0;
      if (!Number.isInteger(from) || from < 0) throw badRequest("pageToken is not one this router issued", "pageToken");
      const page = ids.slice(from, from + size);
      const next = from + size < ids.length ? Buffer.from(String(from + size)).toString("base64url") : undefined;
      return { models: page.map((id) => geminiModel(tenant, id)), ...(next && { nextPageToken: next }) };
    }
    return { object: "list", data: ids.map(openaiModel) };
  };

  const one = (family: Family, principal: Principal, tenant: TenantDeps, raw: string) => {
    const id = oneModel(principal, tenant, decodeURIComponent(raw).replace(/^models\//, ""));
    if (family === "anthropic") return anthropicModel(id);
    if (family === "gemini") return geminiModel(tenant, id);
    return openaiModel(id);
  };

  type Ctx = { request: Request; principal: Principal; tenant: TenantDeps; path: string };
  return new Elysia()
    .use(authPlugin(deps))
    .get("/v1/models", ({ request, principal, tenant, path }: Ctx) => list(familyOfRequest(request.headers, path), request, principal, tenant), { auth: true })
    .get("/models", ({ request, principal, tenant }: Ctx) => list("openai", request, principal, tenant), { auth: true })
    .get("/v1beta/models", ({ request, principal, tenant }: Ctx) => list("gemini", request, principal, tenant), { auth: true })
    .get(
      "/v1/models/:id",
      ({ request, principal, tenant, path, params }: Ctx & { params: { id: string } }) => one(familyOfRequest(request.headers, path), principal, tenant, params.id),
      { auth: true },
    )
    .get("/v1beta/models/:id", ({ principal, tenant, params }: Ctx & { params: { id: string } }) => one("gemini", principal, tenant, params.id), { auth: true });
}

import { Elysia } from "elysia";
import type { Principal } from "../accounts/principal.ts";
import { notFound } from "../core/errors.ts";
import type { Deps } from "../deps.ts";
import { readBodyBytes } from "../http/body.ts";
import { metaOf } from "../http/context.ts";
import { authPlugin } from "../http/plugins.ts";
import { checkModel } from "../http/access.ts";
import { listAllows } from "../routing/patterns.ts";
import { bodyCall, geminiCall, type ClientCall } from "./call.ts";
import { ANTHROPIC_ENDPOINTS, GEMINI_METHODS, geminiEndpoint, OPENAI_ALIASES, OPENAI_ENDPOINTS, type Endpoint } from "./endpoints.ts";
import { listModels } from "./models.ts";
import { routeModel } from "../routing/route-model.ts";
import { createRelay } from "./relay.ts";

/** The model endpoints of the three families (spec 4.5, 9). */
export function gatewayRoutes(deps: Deps) {
  const relay = createRelay(deps);

  const allowedModels = (principal: Principal) => (model: string) =>
    principal.allowModels.length === 0 || listAllows(principal.allowModels, model);

  const serve = async (request: Request, principal: Principal, read: (bytes: Uint8Array) => ClientCall) => {
    const meta = metaOf(request);
    // Reasoning models may think for minutes before the first byte: the relay's own
    // timers guard upstream silence, so Bun's connection idle limit must not.
    meta?.server?.timeout(request, 0);
    const call = read(await readBodyBytes(request, deps.config.maxBody));
    checkModel(principal, call.requestedModel);
    const route = routeModel(deps.settings.routing(), call.requestedModel);
    const admission = deps.meter.admit({
      principal,
      endpoint: call.endpoint,
      effectiveModel: route.effectiveModel,
      json: call.json,
      bodyBytes: call.bytes.byteLength,
    });
    return relay({ call, route, admission, principal, requestId: meta?.id ?? "", clientSignal: request.signal });
  };

  const base = new Elysia().use(authPlugin(deps));
  type Base = typeof base;
  // Route types accumulate per call; the table-driven routes are all alike, so keep the base type.
  const post = (app: Base, path: string, endpoint: Endpoint): Base =>
    app.post(path, ({ request, principal }) => serve(request, principal, (bytes) => bodyCall(endpoint, request, bytes)), {
      auth: true,
    }) as unknown as Base;

  const gemini = (version: "v1" | "v1beta") => {
    return ({ request, principal, params }: { request: Request; principal: Principal; params: { spec: string } }) => {
      const method = params.spec.slice(params.spec.lastIndexOf(":") + 1);
      if (!params.spec.includes(":") || !GEMINI_METHODS.has(method)) {
        throw notFound(`No route for POST ${new URL(request.url).pathname}`);
      }
      return serve(request, principal, (bytes) => geminiCall(geminiEndpoint(version, method), request, bytes, params.spec));
    };
  };

  const models = ({ principal }: { principal: Principal }) => ({
    object: "list",
    data: listModels(deps.settings.routing(), deps.pool, allowedModels(principal)),
  });

  let app = base;
  for (const [path, endpoint] of Object.entries(OPENAI_ENDPOINTS)) app = post(app, path, endpoint);
  for (const [alias, path] of Object.entries(OPENAI_ALIASES)) app = post(app, alias, OPENAI_ENDPOINTS[path]!);
  for (const [path, endpoint] of Object.entries(ANTHROPIC_ENDPOINTS)) app = post(app, path, endpoint);
  return app
    .post("/v1beta/models/:spec", gemini("v1beta"), { auth: true })
    .post("/v1/models/:spec", gemini("v1"), { auth: true })
    .get("/v1/models", models, { auth: true })
    .get("/models", models, { auth: true })
    .get(
      "/v1/models/:id",
      ({ principal, params }) => {
        const entry = listModels(deps.settings.routing(), deps.pool, allowedModels(principal)).find((m) => m.id === params.id);
        if (!entry) throw notFound(`The model ${params.id} does not exist or is not available to this key`, "model_not_found");
        return entry;
      },
      { auth: true },
    );
}

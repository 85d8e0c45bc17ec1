import { Elysia } from "elysia";
import { notFound } from "../core/errors.ts";
import type { Deps } from "../deps.ts";
import { readBodyBytes } from "../http/body.ts";
import { authPlugin, type Caller } from "../http/plugins.ts";
import { geminiCall } from "./call.ts";
import { createPipeline } from "./pipeline.ts";
import { objectRoutes } from "./object-routes.ts";
import { ANTHROPIC_ENDPOINTS, GEMINI_METHODS, geminiEndpoint, OPENAI_ALIASES, OPENAI_ENDPOINTS, type Endpoint } from "./endpoints.ts";
import { modelListRoutes } from "./model-list-routes.ts";


/**
 * POST model endpoints by exact path, for the server to call ahead of Elysia's
 * router: the same handlers, without the framework's per-request context (about
 * 3 µs of a call's CPU). Errors thrown here still need their envelope.
 */
export type HotRoutes = Map<string, (request: Request, path: string) => Promise<Response>>;

/** The model endpoints of the three families (spec 4.5, 9). */
export function gatewayRoutes(deps: Deps, hot: HotRoutes = new Map()) {
  const pipeline = createPipeline(deps);

  const base = new Elysia().use(authPlugin(deps));
  type Base = typeof base;
  // Route types accumulate per call; the table-driven routes are all alike, so keep the base type.
  const post = (app: Base, path: string, endpoint: Endpoint): Base => {
    const read = endpoint.multipart ? pipeline.multipart(endpoint) : pipeline.json(endpoint);
    hot.set(path, (request, path) => pipeline.handle(request, path, read));
    return app.post(path, ({ request, principal, tenant }) => pipeline.run(request, { principal, tenant }, read), { auth: true }) as unknown as Base;
  };

  const gemini = (version: "v1" | "v1beta") => {
    return ({ request, principal, tenant, params }: Caller & { request: Request; params: { spec: string } }) => {
      const method = params.spec.slice(params.spec.lastIndexOf(":") + 1);
      if (!params.spec.includes(":") || !GEMINI_METHODS.has(method)) {
        throw notFound(`No route for POST ${new URL(request.url).pathname}`);
      }
      return pipeline.run(request, { principal, tenant }, async () =>
        geminiCall(geminiEndpoint(version, method), request, await readBodyBytes(request, deps.config.maxBody), params.spec),
      );
    };
  };

  let app = base;
  for (const [path, endpoint] of Object.entries(OPENAI_ENDPOINTS)) app = post(app, path, endpoint);
  for (const [alias, path] of Object.entries(OPENAI_ALIASES)) app = post(app, alias, OPENAI_ENDPOINTS[path]!);
  for (const [path, endpoint] of Object.entries(ANTHROPIC_ENDPOINTS)) app = post(app, path, endpoint);
  return app
    .use(objectRoutes(deps, pipeline))
    .post("/v1beta/models/:spec", gemini("v1beta"), { auth: true })
    .post("/v1/models/:spec", gemini("v1"), { auth: true })
    .use(modelListRoutes(deps));
}

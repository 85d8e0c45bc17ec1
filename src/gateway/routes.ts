import { Elysia } from "elysia";
import { notFound } from "../core/errors.ts";
import { readBodyBytes } from "../http/body.ts";
import { authPlugin } from "../http/plugins.ts";
import { createPipeline, sourceOf, type PipelineDeps } from "./pipeline.ts";
import { objectRoutes, type ObjectRouteDeps } from "./object-routes.ts";
import type { Endpoint, PathModelCalls } from "../formats/format.ts";
import { FORMATS } from "../formats/registry.ts";
import { modelListRoutes, type ModelListDeps } from "./model-list-routes.ts";


/**
 * POST model endpoints by exact path, for the server to call ahead of Elysia's
 * router: the same handlers, without the framework's per-request context (about
 * 3 µs of a call's CPU). Errors thrown here still need their envelope.
 */
export type HotRoutes = Map<string, (request: Request, path: string) => Promise<Response>>;

/** The model endpoints of the three families (spec 4.5, 9). */
export type GatewayDeps = PipelineDeps & ObjectRouteDeps & ModelListDeps;

export function gatewayRoutes(deps: GatewayDeps, hot: HotRoutes = new Map()) {
  const pipeline = createPipeline(deps);

  const base = new Elysia().use(authPlugin(deps));
  type Base = typeof base;
  // Route types accumulate per call; the table-driven routes are all alike, so keep the base type.
  const post = (app: Base, path: string, endpoint: Endpoint): Base => {
    const read = endpoint.multipart ? pipeline.multipart(endpoint) : pipeline.json(endpoint);
    hot.set(path, (request, path) => pipeline.handle(request, path, read));
    return app.post(path, ({ request, path }) => pipeline.handle(request, path, read)) as unknown as Base;
  };

  /** `/{version}/models/{model}:{method}` (Gemini): the method in the path picks the endpoint. */
  const pathModel = (calls: PathModelCalls, version: string) => {
    return async ({ request, path }: { request: Request; path: string }) => {
      // Authenticated here rather than by the macro, so a 403 reaches the request log as the other model calls' do.
      const caller = await pipeline.authenticate(request, path);
      // Everything after `models/`, as sent: a model name may hold slashes (`vendor/model`),
      // which the Google SDKs put in the path unencoded.
      const spec = path.slice(`/${version}/models/`.length);
      const method = spec.slice(spec.lastIndexOf(":") + 1);
      const endpoint = spec.includes(":") ? calls.endpoint(version, method) : undefined;
      if (!endpoint) throw notFound(`No route for POST ${new URL(request.url).pathname}`);
      return pipeline.run(request, caller, async () => calls.read(endpoint, await readBodyBytes(request, deps.config.maxBody), spec, sourceOf(request)));
    };
  };

  let app = base;
  for (const format of Object.values(FORMATS)) {
    for (const [path, endpoint] of Object.entries(format.endpoints)) app = post(app, path, endpoint);
  }
  app = app.use(objectRoutes(deps, pipeline)) as unknown as Base;
  for (const format of Object.values(FORMATS)) {
    const calls = format.pathModels;
    if (!calls) continue;
    for (const version of calls.versions) app = app.post(`/${version}/models/*`, pathModel(calls, version)) as unknown as Base;
  }
  return app.use(modelListRoutes(deps));
}

import { Elysia } from "elysia";
import { routeExplainRoutes } from "./gateway/route-explain.ts";
import { requestLogRoutes } from "./gateway/request-log-routes.ts";
import { VERSION } from "./version.ts";
import { openApiDocument } from "./wire/openapi.ts";
import { dashboardAccountRoutes } from "./accounts/dashboard-routes.ts";
import { accountRoutes } from "./accounts/routes.ts";
import { configRoutes } from "./admin/config/routes.ts";
import { noticeRoutes } from "./admin/notices/routes.ts";
import { operationLogRoutes } from "./admin/oplog/routes.ts";
import { providerKeyRoutes } from "./admin/provider-keys/routes.ts";
import { gatewayRoutes, type HotRoutes } from "./gateway/routes.ts";
import { healthRoutes } from "./health/routes.ts";
import { metricsRoutes } from "./metrics/routes.ts";
import { signupRoutes } from "./tenancy/signup-routes.ts";
import { realtimeClientSecretRoutes } from "./gateway/realtime/client-secrets.ts";
import { pricingRoutes } from "./metering/pricing-routes.ts";
import { reportRoutes } from "./metering/report-routes.ts";
import { HttpError, notFound, badRequest } from "./core/errors.ts";
import type { Deps } from "./deps.ts";
import { errorResponse } from "./http/envelopes.ts";
import { familyOfRequest } from "./formats/registry.ts";
import { thrownResponse } from "./http/error-response.ts";

/**
 * Composes every route plugin into one Elysia app. No side effects: the server
 * (or a test) decides when and where it listens.
 */
export function createApp(deps: Deps, hot?: HotRoutes) {
  // Built on its first request, for this app's configuration (the sign-up paths are
  // served, and so described, only with --signup): the same for the life of the app.
  let openApi: Record<string, unknown> | undefined;
  return new Elysia()
    .onError({ as: "global" }, ({ error, code, request, path }) => {
      const family = familyOfRequest(request, path);
      if (error instanceof HttpError) return thrownResponse(deps, error, request, path);
      if (code === "NOT_FOUND") return errorResponse(family, notFound(`No route for ${request.method} ${path}`));
      // Framework parse/validation dumps (expected/found) never reach clients.
      if (code === "PARSE") return errorResponse(family, badRequest("Request body could not be parsed"));
      if (code === "VALIDATION") return errorResponse(family, badRequest("Request does not match the expected shape"));
      return thrownResponse(deps, error, request, path);
    })
    .use(healthRoutes(deps))
    // The management API, described from the models that check its bodies (no key: it holds no secret).
    .get("/openapi.json", () => (openApi ??= openApiDocument(VERSION, deps.config)))
    .use(metricsRoutes(deps))
    .use(deps.config.signup ? signupRoutes(deps) : new Elysia())
    .use(dashboardAccountRoutes(deps))
    .use(accountRoutes(deps, deps.accountsService))
    .use(configRoutes(deps))
    .use(providerKeyRoutes(deps))
    .use(pricingRoutes(deps))
    .use(reportRoutes(deps))
    .use(noticeRoutes(deps))
    .use(operationLogRoutes(deps))
    .use(routeExplainRoutes(deps))
    .use(requestLogRoutes(deps))
    .use(gatewayRoutes(deps, hot))
    .use(realtimeClientSecretRoutes(deps));
}

export type App = ReturnType<typeof createApp>;

import { Elysia } from "elysia";
import { timingSafeEqual } from "node:crypto";
import { forbidden } from "../core/errors.ts";
import type { ServeConfig } from "../config.ts";
import { extractApiKey, type Authenticator } from "../http/auth.ts";
import type { Tenants } from "../tenancy/tenants.ts";
import type { RouterMetrics } from "./router-metrics.ts";

/** What `/metrics` uses: the scrape token or an owner's key (never in the BYOK style), and the registry it renders. */
export interface MetricsRouteDeps {
  config: Pick<ServeConfig, "metricsToken">;
  tenants: Pick<Tenants, "byok">;
  auth: Pick<Authenticator, "require">;
  metrics: Pick<RouterMetrics, "registry">;
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * `GET /metrics` in the Prometheus text format, for an owner key or the separate
 * `--metrics-token` a scraper can hold without being an administrator.
 */
export function metricsRoutes(deps: MetricsRouteDeps) {
  return new Elysia().get("/metrics", async ({ request }) => {
    const presented = extractApiKey(request, "openai");
    const token = deps.config.metricsToken;
    if (!(token && presented && sameSecret(presented, token))) {
      // Metrics cover every tenant: in the BYOK style no owner may read them, only the token.
      if (deps.tenants.byok) throw forbidden("In the BYOK style /metrics is readable with the metrics token only", "metrics_token_only");
      const principal = await deps.auth.require(request, "openai");
      if (!principal.account.isOwner) throw forbidden("Only owner accounts or the metrics token may read /metrics", "owner_only");
    }
    return new Response(deps.metrics.registry.render(), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
  });
}

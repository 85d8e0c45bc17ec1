import { Elysia } from "elysia";
import type { DependencyMonitor } from "./dependencies.ts";
import type { Health, Readiness } from "../wire/health.ts";

/** Whether this instance is on its way out: set when a graceful stop begins. */
export interface Lifecycle {
  stopping: boolean;
}

export interface HealthDeps {
  dependencies: Pick<DependencyMonitor, "status" | "allUp">;
  lifecycle: Lifecycle;
}

/**
 * /healthz is liveness: the process answers, so 200 always, with each dependency's
 * status for whoever looks. /readyz is readiness for a load balancer: 503 while a
 * dependency is down (calls would fail here anyway) and from the moment a graceful
 * stop begins, so traffic drains to other instances before this one goes.
 */
export function healthRoutes(deps: HealthDeps) {
  return new Elysia()
    .get("/healthz", (): Health => ({ status: "ok", ...deps.dependencies.status() }))
    .get("/readyz", ({ set }): Readiness => {
      const dependencies = deps.dependencies.status();
      const status = deps.lifecycle.stopping ? "stopping" : deps.dependencies.allUp() ? "ready" : "unavailable";
      if (status !== "ready") set.status = 503;
      return { status, ...dependencies };
    });
}

import type { Tenants } from "../tenancy/tenants.ts";
import type { RouterMetrics } from "./router-metrics.ts";

/**
 * Series read at scrape time: every tenant's provider keys and switch-over state, streams
 * relayed now, and with the Redis State its allowances (totals since the start).
 */
export function registerStateGauges(metrics: RouterMetrics, tenants: Tenants, allowances?: { readonly granted: number; readonly drawn: number }): void {
  metrics.registry.gauge("router_provider_keys", "Provider keys by state (enabled, sleeping with its reason, disabled)", ["state"], () => {
    const counts = new Map<string, number>();
    for (const tenant of tenants.all()) {
      for (const key of tenant.pool.all()) {
        const state = !key.status ? "disabled" : key.sleeping ? `sleeping_${key.sleepReason ?? "manual"}` : "enabled";
        counts.set(state, (counts.get(state) ?? 0) + 1);
      }
    }
    return [...counts].map(([state, value]) => ({ labels: { state }, value }));
  });
  metrics.registry.gauge("router_level_switched", "1 while a Level's traffic goes to its SWITCH_OVER backup", ["level"], () =>
    tenants.all().flatMap((tenant) =>
      [...tenant.settings.routing().switchOver.keys()].map((level) => ({ labels: { level: String(level) }, value: tenant.switchOver.isSwitched(level) ? 1 : 0 })),
    ),
  );
  metrics.registry.gauge("router_streams_active", "Streams being relayed now", [], () => [{ labels: {}, value: metrics.activeStreams() }]);
  if (allowances) {
    metrics.registry.collectedCounter(
      "router_state_allowances_total",
      "With --redis: blocks of the limits granted to this instance in advance (granted), and calls it admitted against them without a round trip to Redis (admitted)",
      ["event"],
      () => [
        { labels: { event: "granted" }, value: allowances.granted },
        { labels: { event: "admitted" }, value: allowances.drawn },
      ],
    );
  }
}

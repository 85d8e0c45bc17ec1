import { Registry } from "./registry.ts";

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * The router's own metrics. Label values are families, effective model names,
 * Levels, statuses, refusal codes and provider key ids: never a key's secret or name,
 * nor an account email.
 */
export function createRouterMetrics() {
  const registry = new Registry();
  let activeStreams = 0;
  return {
    registry,
    requests: registry.counter("router_requests_total", "Model calls by API family, effective model, Level and status", ["family", "model", "level", "status"]),
    duration: registry.histogram("router_request_duration_seconds", "Model call duration, to the end of the answer", SECONDS, ["family"]),
    ttfb: registry.histogram("router_upstream_first_byte_seconds", "Time until the upstream's response headers", SECONDS, ["family"]),
    tokens: registry.counter("router_tokens_total", "Tokens by effective model and kind", ["model", "kind"]),
    credit: registry.counter("router_credit_used_total", "Credits charged by effective model", ["model"]),
    refusals: registry.counter("router_refusals_total", "Requests refused by access, limits or credit, by reason code", ["code"]),
    // Upstream attempts per provider key (its id, never its name or secret) and per Level.
    keyRequests: registry.counter("router_key_requests_total", "Upstream attempts by provider key id and Level", ["key", "level"]),
    keyErrors: registry.counter("router_key_errors_total", "Failed upstream attempts by provider key id, Level and error kind", ["key", "level", "error"]),
    keyLatency: registry.histogram("router_key_latency_seconds", "Upstream attempt duration (to the answer, a stream's first event, or the failure) by provider key id and Level", SECONDS, ["key", "level"]),
    levelRequests: registry.counter("router_level_requests_total", "Upstream attempts by Level", ["level"]),
    levelErrors: registry.counter("router_level_errors_total", "Failed upstream attempts by Level and error kind", ["level", "error"]),
    levelLatency: registry.histogram("router_level_latency_seconds", "Upstream attempt duration by Level", SECONDS, ["level"]),
    streamStarted() {
      activeStreams++;
    },
    streamEnded() {
      activeStreams = Math.max(0, activeStreams - 1);
    },
    activeStreams: () => activeStreams,
  };
}

export type RouterMetrics = ReturnType<typeof createRouterMetrics>;

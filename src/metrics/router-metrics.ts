import { Registry } from "./registry.ts";

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * The router's own metrics. Label values are families, effective model names,
 * Levels, statuses and refusal codes: never a key, a secret or an account email.
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

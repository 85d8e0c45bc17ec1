/**
 * A settled call in the router's metrics (`/metrics`): its request, duration, tokens and
 * credit, and each upstream attempt in the per-key and per-Level series. Called once
 * per settled call, so it builds no label strings after a key's first call.
 */
import type { RouterMetrics } from "../metrics/router-metrics.ts";
import { familyOf } from "../formats/registry.ts";
import type { AttemptFact } from "./request-log.ts";
import type { UsageEvent } from "./usage-recorder.ts";

/** Counts a finished call in the metrics: a few map lookups. */
export function observe(metrics: RouterMetrics | undefined, event: UsageEvent, cost: number): void {
  if (!metrics) return;
  const family = familyOf(event.endpoint);
  const model = event.effectiveModel ?? "";
  metrics.requests.inc({ family, model, level: event.level === undefined ? "" : String(event.level), status: String(event.status) });
  metrics.duration.observe(event.latencyMs / 1000, { family });
  const { usage } = event;
  if (usage.prompt) metrics.tokens.inc({ model, kind: "prompt" }, usage.prompt);
  if (usage.completion) metrics.tokens.inc({ model, kind: "completion" }, usage.completion);
  if (usage.cacheRead) metrics.tokens.inc({ model, kind: "cache_read" }, usage.cacheRead);
  if (usage.cacheWrite) metrics.tokens.inc({ model, kind: "cache_write" }, usage.cacheWrite);
  if (usage.reasoning) metrics.tokens.inc({ model, kind: "reasoning" }, usage.reasoning);
  if (cost) metrics.credit.inc({ model }, cost / 1e9);
  const attempts = event.logged?.trace.attempts;
  if (attempts) for (const attempt of attempts) observeAttempt(metrics, attempt);
}

/** The label sets of a key on a Level, made once (the settle path builds no strings for them). */
const attemptLabels = new Map<number, { level: number; key: { key: string; level: string }; levelOnly: { level: string } }>();
function labelsOf(keyId: number, levelNumber: number) {
  let labels = attemptLabels.get(keyId);
  if (!labels || labels.level !== levelNumber) {
    const level = String(levelNumber);
    labels = { level: levelNumber, key: { key: String(keyId), level }, levelOnly: { level } };
    if (attemptLabels.size >= 10_000) attemptLabels.clear();
    attemptLabels.set(keyId, labels);
  }
  return labels;
}

/** One upstream attempt in the per-key and per-Level series; a client that left is nobody's attempt. */
function observeAttempt(metrics: RouterMetrics, attempt: AttemptFact): void {
  if (attempt.error === "client_closed") return;
  const { key, levelOnly: level } = labelsOf(attempt.keyId, attempt.level);
  const seconds = attempt.durationMs / 1000;
  metrics.keyRequests.inc(key);
  metrics.keyLatency.observe(seconds, key);
  metrics.levelRequests.inc(level);
  metrics.levelLatency.observe(seconds, level);
  if (attempt.error !== undefined) {
    metrics.keyErrors.inc({ ...key, error: attempt.error });
    metrics.levelErrors.inc({ level: key.level, error: attempt.error });
  }
}

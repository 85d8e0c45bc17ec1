import type { RoutingConfig } from "../admin/config/items.ts";
import type { KeyPool } from "../routing/key-pool.ts";
import { availability } from "../routing/health.ts";
import { routeModel } from "../routing/route-model.ts";
import type { ModelDirectory } from "./model-directory.ts";

/** The Levels a model's calls may use: its own, then down its SWITCH_OVER chain. */
function levelsFor(routing: RoutingConfig, level: number): number[] {
  const levels = [level];
  for (let next = routing.switchOver.get(level); next !== undefined && !levels.includes(next); next = routing.switchOver.get(next)) levels.push(next);
  return levels;
}

/** Whether a call of `model` routes to a Level (or its switch-over) with a usable key. */
export function routesToUsableKey(routing: RoutingConfig, pool: KeyPool, model: string): boolean {
  return levelsFor(routing, routeModel(routing, model).level).some((level) => pool.hasUsable(level));
}

const isPattern = (name: string) => name.includes("*") || name.includes("?");

/**
 * The models a caller can use, sorted (docs/api.md, "Model lists"): every exact
 * MODEL_MAPPER source and LEVEL_MAPPER name that routes to a usable key, plus the
 * models each usable key serves that route to that key's own Level; minus what the
 * caller's AllowModels forbids, and never a pattern.
 */
export function availableModels(
  routing: RoutingConfig,
  pool: KeyPool,
  directory: ModelDirectory,
  allowed: (model: string) => boolean,
  now: number,
): string[] {
  const names = new Set<string>();
  for (const rule of routing.modelMap) if (rule.pattern.exact && routesToUsableKey(routing, pool, rule.pattern.source)) names.add(rule.pattern.source);
  for (const rule of routing.levelMap) if (rule.pattern.exact && routesToUsableKey(routing, pool, rule.pattern.source)) names.add(rule.pattern.source);
  for (const key of pool.all()) {
    if (availability(key, now) === "unavailable") continue;
    for (const name of directory.served(key)) {
      if (!names.has(name) && routeModel(routing, name).level === key.level) names.add(name);
    }
  }
  return [...names].filter((name) => !isPattern(name) && allowed(name)).sort();
}

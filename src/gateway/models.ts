import type { RoutingConfig } from "../admin/config/items.ts";
import type { KeyPool } from "../routing/key-pool.ts";
import { routeModel } from "../routing/route-model.ts";

/** An entry of OpenAI's model list shape. */
export interface ModelEntry {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
}

/**
 * Models a caller can use: named models (exact mapper sources and exact LEVEL_MAPPER
 * names, plus `extra` such as the pricing catalog) whose Level has an enabled key,
 * filtered by the caller's own model allowlist.
 */
export function listModels(
  routing: RoutingConfig,
  pool: KeyPool,
  allowed: (model: string) => boolean,
  extra: Iterable<string> = [],
): ModelEntry[] {
  const names = new Set<string>(extra);
  for (const rule of routing.modelMap) if (rule.pattern.exact) names.add(rule.pattern.source);
  for (const rule of routing.levelMap) if (rule.pattern.exact) names.add(rule.pattern.source);
  const served = (model: string) => {
    const level = routeModel(routing, model).level;
    const backups = new Set<number>([level]);
    for (let next = routing.switchOver.get(level); next !== undefined && !backups.has(next); next = routing.switchOver.get(next)) {
      backups.add(next);
    }
    return [...backups].some((l) => pool.keysOf(l).some((key) => key.status));
  };
  return [...names]
    .filter((name) => allowed(name) && served(name))
    .sort()
    .map((id) => ({ id, object: "model", created: 0, owned_by: "router" }));
}

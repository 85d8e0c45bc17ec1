import type { RoutingConfig } from "../admin/config/items.ts";
import { bestMatch } from "./patterns.ts";

/** A model no LEVEL_MAPPER entry matches (and a call without a model) goes to Level 1. */
export const DEFAULT_LEVEL = 1;

export interface ModelRoute {
  /** The model sent upstream, after MODEL_MAPPER. */
  effectiveModel: string | undefined;
  level: number;
}

/** requested model → MODEL_MAPPER → effective model → LEVEL_MAPPER → Level. */
export function routeModel(config: RoutingConfig, requested: string | undefined): ModelRoute {
  if (requested === undefined) return { effectiveModel: undefined, level: DEFAULT_LEVEL };
  const effectiveModel = bestMatch(config.modelMap, requested)?.target ?? requested;
  const level = bestMatch(config.levelMap, effectiveModel)?.level ?? DEFAULT_LEVEL;
  return { effectiveModel, level };
}

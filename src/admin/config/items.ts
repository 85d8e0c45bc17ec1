import { badRequest } from "../../core/errors.ts";
import {
  parseLevelMapper,
  parseModelMapper,
  parseSwitchOver,
  writeMapperEntries,
  type LevelMapping,
  type ModelMapping,
} from "./mappers.ts";

/**
 * One system configuration item (spec 2.4): how a value written through
 * `PUT /x-config` is checked and stored, and how `GET /x-config` shows it.
 */
export interface ConfigItemDef {
  /** Checks a written value (string, object or number as the item allows) and returns the text to store. */
  normalise(value: unknown): string;
  /** The stored text in the form GET /x-config exports (which PUT accepts back). */
  exported(text: string): unknown;
}

function mapperExport(entries: Array<{ left: string; right: string }>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of entries) out[e.left] = e.right;
  return out;
}

/** Items this build knows; a name outside this table is refused. */
export const CONFIG_ITEMS: Record<string, ConfigItemDef> = {
  MODEL_MAPPER: {
    normalise: (value) => writeMapperEntries(parseModelMapper(value).entries),
    exported: (text) => mapperExport(parseModelMapper(text).entries),
  },
  LEVEL_MAPPER: {
    normalise: (value) => writeMapperEntries(parseLevelMapper(value).entries),
    exported: (text) => mapperExport(parseLevelMapper(text).entries),
  },
  SWITCH_OVER: {
    normalise: (value) => writeMapperEntries(parseSwitchOver(value).entries),
    exported: (text) => mapperExport(parseSwitchOver(text).entries),
  },
};

export function itemDef(name: string): ConfigItemDef {
  const def = CONFIG_ITEMS[name];
  if (!def) {
    throw badRequest(`Unknown configuration item "${name}"; known items: ${Object.keys(CONFIG_ITEMS).join(", ")}`, name);
  }
  return def;
}

/** The routing items compiled for the request path. */
export interface RoutingConfig {
  modelMap: ModelMapping[];
  levelMap: LevelMapping[];
  /** primary Level → backup Level */
  switchOver: Map<number, number>;
}

export function compileRouting(raw: ReadonlyMap<string, string>): RoutingConfig {
  return {
    modelMap: parseModelMapper(raw.get("MODEL_MAPPER") ?? "").rules,
    levelMap: parseLevelMapper(raw.get("LEVEL_MAPPER") ?? "").rules,
    switchOver: parseSwitchOver(raw.get("SWITCH_OVER") ?? "").backups,
  };
}

import { badRequest } from "../../core/errors.ts";
import { isValidEmail } from "../../accounts/validation.ts";
import { parsePricingTable } from "../../metering/pricing/schema.ts";
import { parseModelLimits } from "../../accounts/input.ts";
import type { SystemLimits } from "../../metering/limits.ts";
import { compilePattern, splitList, type CompiledPattern } from "../../routing/patterns.ts";
import {
  parseLevelMapper,
  parseModelMapper,
  parseSwitchOver,
  writeMapperEntries,
  type LevelMapping,
  type MapperEntry,
  type ModelMapping,
} from "./mappers.ts";
import { CONFIG_ITEM_NAMES, type ConfigItemName } from "../../wire/config.ts";
import { SECRET_ITEMS } from "./secret-items.ts";

/**
 * One system configuration item (spec 2.4): how a value written through
 * `PUT /x-config` is checked and stored, and how `GET /x-config` shows it.
 */
export interface ConfigItemDef {
  /** Checks a written value (string, object or number as the item allows) and returns the text to store. */
  normalise(value: unknown): string;
  /** The stored text in the form GET /x-config exports (which PUT accepts back). */
  exported(text: string): unknown;
  /** Sealed at rest and masked on export (EMAIL_PASS). */
  secret?: boolean;
  /**
   * Whether two stored texts mean the same (a mapper whose exact names come in another
   * order, as an object written with integer-like names puts them first). Without it,
   * equal text.
   */
  sameValue?(a: string, b: string): boolean;
}

/** What GET /x-config shows for a secret item; writing it back leaves the stored secret unchanged. */
export const SECRET_MASK = "********";

function plainString(item: string, max: number, check?: (value: string) => boolean, what?: string) {
  return (value: unknown): string => {
    if (typeof value !== "string") throw badRequest(`${item} must be a string`, item);
    const text = value.trim();
    if (text.length > max) throw badRequest(`${item} must be at most ${max} characters`, item);
    if (text && check && !check(text)) throw badRequest(`${item}: "${text}" is not ${what}`, item);
    return text;
  };
}

/**
 * The entries routing uses: the first of a repeated source (a value stored before
 * repeats were refused); bestMatch never reaches a later one.
 */
function routed(entries: readonly MapperEntry[]): MapperEntry[] {
  const seen = new Set<string>();
  return entries.filter((e) => {
    if (seen.has(e.left)) return false;
    seen.add(e.left);
    return true;
  });
}

/** A mapper as GET /x-config shows it: the spec's `a=b,c=d`, in the order routing reads it. */
function mapperExport(entries: readonly MapperEntry[]): string {
  return writeMapperEntries(routed(entries));
}

/**
 * A source named twice is refused when written: routing takes the first and ignores
 * the other, so the second can only be a mistake (and an export, which shows what
 * routing uses, would drop it).
 */
function onceEach(item: string, entries: readonly MapperEntry[]): readonly MapperEntry[] {
  const seen = new Set<string>();
  for (const e of entries) {
    if (seen.has(e.left)) throw badRequest(`${item}: "${e.left}" is mapped more than once`, item);
    seen.add(e.left);
  }
  return entries;
}

/**
 * Whether two mappers route alike: their patterns in the same order (a tie goes to the
 * earlier one), and the same exact names to the same targets in any order (an exact
 * name wins at once). `unordered`: the order means nothing at all (SWITCH_OVER).
 */
function sameMapping(a: readonly MapperEntry[], b: readonly MapperEntry[], unordered = false): boolean {
  const keyed = (entries: readonly MapperEntry[]) => {
    const patterns: string[] = [];
    const exact = new Map<string, string>();
    for (const e of routed(entries)) {
      if (!unordered && e.left.includes("*")) patterns.push(`${e.left}=${e.right}`);
      else exact.set(e.left, e.right);
    }
    return { patterns, exact };
  };
  const x = keyed(a);
  const y = keyed(b);
  return x.patterns.join(",") === y.patterns.join(",") && x.exact.size === y.exact.size && [...x.exact].every(([left, right]) => y.exact.get(left) === right);
}

/** Items this build knows; a name outside this table is refused. */
export const CONFIG_ITEMS: Record<ConfigItemName, ConfigItemDef> = {
  MODEL_MAPPER: {
    normalise: (value) => writeMapperEntries(onceEach("MODEL_MAPPER", parseModelMapper(value).entries)),
    exported: (text) => mapperExport(parseModelMapper(text).entries),
    sameValue: (a, b) => sameMapping(parseModelMapper(a).entries, parseModelMapper(b).entries),
  },
  LEVEL_MAPPER: {
    normalise: (value) => writeMapperEntries(onceEach("LEVEL_MAPPER", parseLevelMapper(value).entries)),
    exported: (text) => mapperExport(parseLevelMapper(text).entries),
    sameValue: (a, b) => sameMapping(parseLevelMapper(a).entries, parseLevelMapper(b).entries),
  },
  SWITCH_OVER: {
    normalise: (value) => writeMapperEntries(parseSwitchOver(value).entries),
    exported: (text) => mapperExport(parseSwitchOver(text).entries),
    // One backup per Level: the order of the pairs means nothing.
    sameValue: (a, b) => sameMapping(parseSwitchOver(a).entries, parseSwitchOver(b).entries, true),
  },
  PRICING: {
    normalise: (value) => JSON.stringify(parsePricingTable(value)),
    exported: (text) => JSON.parse(text) as unknown,
  },
  XAI_MAIL: {
    normalise: plainString("XAI_MAIL", 254, (v) => isValidEmail(v), "an email address"),
    exported: (text) => text,
  },
  EMAIL_SMTP: {
    normalise: plainString("EMAIL_SMTP", 253, (v) => /^[A-Za-z0-9.-]+$|^\[?[0-9a-fA-F:.]+\]?$/.test(v), "a host name or address"),
    exported: (text) => text,
  },
  EMAIL_PORT: {
    normalise(value) {
      const port = typeof value === "string" && /^\d+$/.test(value.trim()) ? Number(value) : value;
      if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535) {
        throw badRequest("EMAIL_PORT must be a port number from 1 to 65535", "EMAIL_PORT");
      }
      return String(port);
    },
    exported: (text) => Number(text),
  },
  EMAIL_AUTH: { normalise: plainString("EMAIL_AUTH", 254), exported: (text) => text },
  EMAIL_PASS: {
    normalise(value) {
      if (typeof value !== "string") throw badRequest("EMAIL_PASS must be a string", "EMAIL_PASS");
      if (value.length > 1024) throw badRequest("EMAIL_PASS must be at most 1024 characters", "EMAIL_PASS");
      return value;
    },
    exported: () => SECRET_MASK,
    secret: true,
  },
  RESOURCES: {
    normalise: normaliseResources,
    exported: (text) => text,
  },
  MODEL_LIMITS: {
    normalise: (value) => JSON.stringify(parseModelLimits(readJson("MODEL_LIMITS", value), "MODEL_LIMITS") ?? {}),
    exported: (text) => JSON.parse(text) as unknown,
  },
};

/** JSON-valued items arrive as objects or as strings holding JSON. */
function readJson(item: string, value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    throw badRequest(`${item} is not valid JSON`, item);
  }
}

/** A RESOURCES entry: an API path pattern starting with `/`, or `*`; no spaces. */
const PATH_PATTERN = /^(\*|\/[^\s,]*)$/;
const MAX_RESOURCES_LENGTH = 8192;

/**
 * RESOURCES: comma-separated API path patterns (string, or an array of strings),
 * stored trimmed and without duplicates. An empty value means no system restriction.
 */
function normaliseResources(value: unknown): string {
  const items: unknown[] = Array.isArray(value) ? (value as unknown[]) : [value];
  const entries = items.filter((item): item is string => typeof item === "string");
  if (entries.length !== items.length) {
    throw badRequest("RESOURCES must be a comma-separated string of API path patterns", "RESOURCES");
  }
  const patterns: string[] = [];
  for (const entry of entries.flatMap((e) => splitList(e))) {
    if (!PATH_PATTERN.test(entry)) throw badRequest(`RESOURCES: "${entry}" is not an API path pattern (starting with /)`, "RESOURCES");
    if (!patterns.includes(entry)) patterns.push(entry);
  }
  const text = patterns.join(",");
  if (text.length > MAX_RESOURCES_LENGTH) throw badRequest(`RESOURCES must be at most ${MAX_RESOURCES_LENGTH} characters`, "RESOURCES");
  return text;
}

/** RESOURCES compiled for the access check; null when unset or empty (no system restriction). */
export function compileResources(text: string | undefined): readonly CompiledPattern[] | null {
  const patterns = splitList(text).map(compilePattern);
  return patterns.length > 0 ? patterns : null;
}

/** MODEL_LIMITS compiled for admission. */
export function compileModelLimits(text: string | undefined): SystemLimits {
  if (!text) return [];
  return Object.entries(JSON.parse(text) as Record<string, Record<string, number>>).map(([source, limits]) => ({
    pattern: compilePattern(source),
    limits,
  }));
}

export function itemDef(name: string): ConfigItemDef {
  // An own property only: "toString", "constructor" or "__proto__" must not find Object.prototype's.
  const def = Object.hasOwn(CONFIG_ITEMS, name) ? CONFIG_ITEMS[name as ConfigItemName] : undefined;
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

/** Items sealed at rest (the start-up check of the sealing key opens them; `router rekey` re-seals them). */
export { SECRET_ITEMS };
// The light list must say what the items do: a secret item missing from it would stay sealed with an old key after a rotation.
if (CONFIG_ITEM_NAMES.filter((name) => CONFIG_ITEMS[name].secret === true).join() !== SECRET_ITEMS.join()) {
  throw new Error("admin/config/secret-items.ts does not list the items marked secret in admin/config/items.ts");
}

import { badRequest } from "../../core/errors.ts";
import { compilePattern, type CompiledPattern } from "../../routing/patterns.ts";
import { mapperText, type MapperEntry } from "../../wire/mapper-text.ts";

export type { MapperEntry };

/**
 * Reads a mapper item given as its comma-separated string (`a=b,c=d`) or as an
 * object (`{"a":"b"}`); order is kept, since ties between equally specific
 * patterns go to the earlier entry. Neither side can hold "," or "=" (the string
 * form cannot say it, the object form refuses it), so every stored value reads
 * back unchanged from the text it is stored and exported as.
 */
export function readMapperEntries(item: string, value: unknown): MapperEntry[] {
  if (typeof value === "string") {
    return value
      .split(",")
      .map((raw) => raw.trim())
      .filter(Boolean)
      .map((raw) => {
        const at = raw.indexOf("=");
        if (at <= 0 || at === raw.length - 1 || raw.indexOf("=", at + 1) >= 0) {
          throw badRequest(`${item}: entry "${raw}" must have the form <left>=<right>`, item);
        }
        return { left: raw.slice(0, at).trim(), right: raw.slice(at + 1).trim() };
      });
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    return Object.entries(value as Record<string, unknown>).map(([left, right]) => {
      if (typeof right !== "string" && typeof right !== "number") {
        throw badRequest(`${item}: entry "${left}" must map to a string or number`, item);
      }
      if (!left.trim() || String(right).trim() === "") throw badRequest(`${item}: entry "${left}" is empty`, item);
      if (/[,=]/.test(left) || /[,=]/.test(String(right))) {
        throw badRequest(`${item}: entry "${left}" must not contain "," or "="`, item);
      }
      return { left: left.trim(), right: String(right).trim() };
    });
  }
  throw badRequest(`${item} must be a comma-separated string of <left>=<right> entries or an object`, item);
}

/** The stored (and exported) text: the one writer, shared with the clients that edit an export. */
export const writeMapperEntries = mapperText;

function positiveLevel(item: string, entry: string, text: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text))) {
    throw badRequest(`${item}: entry "${entry}" needs a positive integer Level, got "${text}"`, item);
  }
  return Number(text);
}

export interface ModelMapping {
  pattern: CompiledPattern;
  target: string;
}

/** MODEL_MAPPER: `<source_pattern>=<target_model>`; the target is a concrete model name. */
export function parseModelMapper(value: unknown): { entries: MapperEntry[]; rules: ModelMapping[] } {
  const entries = readMapperEntries("MODEL_MAPPER", value);
  const rules = entries.map((e) => {
    if (e.right.includes("*")) {
      throw badRequest(`MODEL_MAPPER: entry "${e.left}=${e.right}" must map to a model name, not a pattern`, "MODEL_MAPPER");
    }
    return { pattern: compilePattern(e.left), target: e.right };
  });
  return { entries, rules };
}

export interface LevelMapping {
  pattern: CompiledPattern;
  level: number;
}

/** LEVEL_MAPPER: `<model_pattern>=<level>`. */
export function parseLevelMapper(value: unknown): { entries: MapperEntry[]; rules: LevelMapping[] } {
  const entries = readMapperEntries("LEVEL_MAPPER", value);
  const rules = entries.map((e) => ({
    pattern: compilePattern(e.left),
    level: positiveLevel("LEVEL_MAPPER", `${e.left}=${e.right}`, e.right),
  }));
  return { entries, rules };
}

/**
 * SWITCH_OVER: `<primary_level>=<backup_level>`. One backup per primary; chains
 * (`1=2,2=3`) are allowed, cycles (`1=2,2=1`) are refused because traffic would
 * have nowhere to settle.
 */
export function parseSwitchOver(value: unknown): { entries: MapperEntry[]; backups: Map<number, number> } {
  const entries = readMapperEntries("SWITCH_OVER", value);
  const backups = new Map<number, number>();
  for (const e of entries) {
    const label = `${e.left}=${e.right}`;
    const primary = positiveLevel("SWITCH_OVER", label, e.left);
    const backup = positiveLevel("SWITCH_OVER", label, e.right);
    if (primary === backup) throw badRequest(`SWITCH_OVER: entry "${label}" switches a Level to itself`, "SWITCH_OVER");
    if (backups.has(primary)) throw badRequest(`SWITCH_OVER: Level ${primary} has more than one backup`, "SWITCH_OVER");
    backups.set(primary, backup);
  }
  for (const start of backups.keys()) {
    const seen = new Set<number>([start]);
    for (let next = backups.get(start); next !== undefined; next = backups.get(next)) {
      if (seen.has(next)) {
        throw badRequest(`SWITCH_OVER: the chain from Level ${start} loops back to Level ${next}`, "SWITCH_OVER");
      }
      seen.add(next);
    }
  }
  return { entries, backups };
}

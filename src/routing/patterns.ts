/**
 * The one wildcard matcher of the product: model mappers, Level mapper, AllowModels,
 * ModelLimits, MODEL_LIMITS and Resources all use it, so a pattern means the same
 * thing everywhere. `*` matches any run of characters (including none); everything
 * else is literal and case-sensitive.
 */
export interface CompiledPattern {
  readonly source: string;
  /** Characters other than `*`: more literal characters means more specific. */
  readonly literals: number;
  readonly exact: boolean;
  test(value: string): boolean;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

export function compilePattern(source: string): CompiledPattern {
  const exact = !source.includes("*");
  const literals = source.replace(/\*/g, "").length;
  if (exact) return { source, literals, exact, test: (value) => value === source };
  const regex = new RegExp(`^${source.split("*").map(escapeRegExp).join(".*")}$`, "s");
  return { source, literals, exact, test: (value) => regex.test(value) };
}

export function matchesPattern(pattern: string, value: string): boolean {
  return compilePattern(pattern).test(value);
}

/**
 * Picks the entry whose pattern best matches `value`: an exact name beats any
 * pattern; among patterns, more literal characters win; ties go to the earlier
 * entry. Returns undefined when nothing matches.
 */
export function bestMatch<T extends { pattern: CompiledPattern }>(entries: readonly T[], value: string): T | undefined {
  let best: T | undefined;
  for (const entry of entries) {
    if (!entry.pattern.test(value)) continue;
    if (entry.pattern.exact) return entry;
    if (!best || entry.pattern.literals > best.pattern.literals) best = entry;
  }
  return best;
}

/** True when any pattern of a comma-separated list matches (empty entries ignored). */
export function listAllows(patterns: readonly CompiledPattern[], value: string): boolean {
  return patterns.some((p) => p.test(value));
}

/** Splits a comma-separated setting into trimmed, non-empty entries. */
export function splitList(value: string | null | undefined): string[] {
  if (!value) return [];
  return value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

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

/**
 * Whether some value matches both patterns: a walk over the pairs of positions in the
 * two (a `*` may match nothing, or one more character and stay), trying each literal
 * character of either and one character neither names.
 */
export function patternsOverlap(a: string, b: string): boolean {
  const OTHER = "\u0000";
  const alphabet = new Set([...a.replaceAll("*", ""), ...b.replaceAll("*", ""), OTHER]);
  /** The positions reachable from `i` without a character: past each `*`. */
  const closure = (pattern: string, i: number): number[] => {
    const out = [i];
    while (i < pattern.length && pattern[i] === "*") out.push(++i);
    return out;
  };
  /** Where a position goes on `c`: a `*` stays, a literal equal to `c` moves past it. */
  const step = (pattern: string, i: number, c: string): number | undefined => (pattern[i] === "*" ? i : i < pattern.length && pattern[i] === c ? i + 1 : undefined);
  const seen = new Set<string>();
  const queue: Array<[number, number]> = [];
  const add = (i: number, j: number) => {
    for (const x of closure(a, i)) {
      for (const y of closure(b, j)) {
        const key = `${x},${y}`;
        if (seen.has(key)) continue;
        seen.add(key);
        queue.push([x, y]);
      }
    }
  };
  add(0, 0);
  for (let next = 0; next < queue.length; next++) {
    const [i, j] = queue[next]!;
    if (i === a.length && j === b.length) return true;
    for (const c of alphabet) {
      const x = step(a, i, c);
      const y = step(b, j, c);
      if (x !== undefined && y !== undefined) add(x, y);
    }
  }
  return false;
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

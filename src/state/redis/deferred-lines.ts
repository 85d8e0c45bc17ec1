import type { Adjustment, AdmitLine, Counter } from "../state.ts";

/**
 * The counters some admission checked, by their key in Redis (two counter objects of one
 * key are one counter, and so are the two windows of a pair: once one is checked, the
 * other is counted in the admission too, in the string the script reads anyway).
 * Bounded: forgetting them only costs the next first check a flush.
 */
export interface CheckedCounters {
  keys: Set<string>;
  keyOf: (counter: Counter) => string;
}

const MAX_CHECKED = 100_000;

/** An admission as the Redis State runs it: what the script must see now, what may follow. */
export interface SplitAdmission {
  /** The lines the admission script checks and counts. */
  now: readonly AdmitLine[];
  /** The index in the admission of each line in `now`; undefined when `now` is the admission's own lines. */
  indexes: number[] | undefined;
  /** What the other lines add, as changes gathered with the settlements once the call is admitted. */
  later: Adjustment[];
  /** A counter is checked here for the first time: what was gathered before must reach Redis first. */
  flushFirst: boolean;
}

/**
 * Splits an admission into the lines Redis must check in its script and the lines that
 * only count (no limit, and no checked line reads them as its `held` gauge).
 *
 * The admission script's time grows with its lines, and most of an account's windows and
 * totals have no limit: they are counted so that a limit set later sees the usage before
 * it. Their amounts go with the settlements a few milliseconds later (one merged run for
 * every call of that moment) instead of inside the admission every call waits for.
 *
 * What stays exact: a counter some admission checks is counted at once from then on
 * (`checked`), and the first admission that checks a counter waits until what was
 * gathered before it reached Redis, so no check misses an amount this process counted.
 * Credit is always reserved in the admission. Another instance may see an unchecked
 * amount up to the gathering's delay later, which only matters in the moment a limit on
 * that counter is being set.
 */
export function splitAdmission(lines: readonly AdmitLine[], at: number, checked: CheckedCounters): SplitAdmission {
  let flushFirst = false;
  // Forgotten between admissions, never inside one: a held gauge marked here must still be marked below.
  if (checked.keys.size >= MAX_CHECKED) checked.keys.clear();
  const check = (counter: Counter) => {
    const key = checked.keyOf(counter);
    if (checked.keys.has(key)) return;
    checked.keys.add(key);
    flushFirst = true;
  };
  for (const line of lines) {
    if (line.limit === undefined) continue;
    check(line.counter);
    if (line.held) check(line.held);
  }
  let now: AdmitLine[] | undefined;
  let indexes: number[] | undefined;
  const later: Adjustment[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const { counter } = line;
    const deferred = counter.kind !== "credit" && line.limit === undefined && !checked.keys.has(checked.keyOf(counter));
    if (deferred) {
      if (line.add !== 0) later.push(adjustmentOf(line, at));
      // The first line that waits: the lines before it go to the script as they are.
      if (!now) {
        now = lines.slice(0, i);
        indexes = now.map((_, index) => index);
      }
    } else if (now) {
      now.push(line);
      indexes!.push(i);
    }
  }
  return { now: now ?? lines, indexes, later, flushFirst };
}

/** What a line adds, as a change gathered with the settlements (credit is always reserved in the admission itself). */
export function adjustmentOf(line: AdmitLine, at: number): Adjustment {
  const { counter, add } = line;
  switch (counter.kind) {
    case "window":
      return { counter, at, delta: add };
    case "period":
      return { counter, period: line.period!, delta: add };
    case "gauge":
      return { counter, delta: add };
    case "credit":
      throw new Error("credit is reserved in the admission itself");
  }
}

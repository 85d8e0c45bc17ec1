import { bucketWidth } from "../memory-windows.ts";
import type { Adjustment, AdmitLine, LimitStanding, Standings } from "../state.ts";
import type { Allowance, Entry, Held } from "./allowance-model.ts";

/* An allowance's lines as the admission script would read them (allowances.ts). */

/** Whether an allowance holds a block of the line: every checked line, and credit (always reserved in the admission). */
export const held = (line: AdmitLine) => line.limit !== undefined || line.counter.kind === "credit";

/** Whether the admission's lines have the entry's shape. */
export function fits(entry: Entry, lines: readonly AdmitLine[]): boolean {
  if (lines.length !== entry.length) return false;
  let j = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!held(line)) continue;
    const h = entry.shape[j++];
    if (h === undefined || h.index !== i || h.counter !== line.counter || h.limit !== line.limit || h.period !== line.period) return false;
  }
  return j === entry.shape.length;
}

/** A held line's value now, as the admission script would read it (credit: what is available). */
export const valueOf = (h: Held) => (h.counter.kind === "credit" ? h.before - h.drawn - h.moved : h.before + h.drawn + h.moved);
/** Whether the script would refuse at the line's limit. */
export const reachedAt = (h: Held) => h.limit !== undefined && (h.counter.kind === "credit" ? valueOf(h) <= h.limit : valueOf(h) >= h.limit);

/** The rate-limit standings of an allowance at `at`, as the admission script would answer them. */
export function standingsOf(a: Allowance, at: number): Standings | undefined {
  let requests: LimitStanding | undefined;
  let tokens: LimitStanding | undefined;
  for (const h of a.lines) {
    if (h.report === undefined || h.limit === undefined) continue;
    const left = Math.max(0, h.limit - valueOf(h));
    const best = h.report === "requests" ? requests : tokens;
    if (best !== undefined && left >= best.remaining) continue;
    const standing: LimitStanding = { line: h.index, remaining: left };
    if (h.windowMs !== undefined) {
      // The oldest amount that counts is this bucket's when the grant said so; its newest is then the latest call's.
      const newest = h.oldestNewest! >= h.bucketStart! ? Math.max(h.oldestNewest!, a.newest) : h.oldestNewest!;
      standing.resetMs = Math.max(0, newest + h.windowMs - at);
    }
    if (h.report === "requests") requests = standing;
    else tokens = standing;
  }
  if (!requests && !tokens) return undefined;
  const standings: Standings = {};
  if (requests) standings.requests = requests;
  if (tokens) standings.tokens = tokens;
  return standings;
}

/** What a change of this process does to an allowance's held line of its counter. */
export function move(allowance: Allowance, h: Held, change: Adjustment): void {
  if (change.counter.kind === "window") {
    const { at, delta } = change as { at: number; delta: number };
    // Outside the allowance's bucket a change may count or not as the window slides: it reads Redis again.
    if (at < h.bucketStart! || at >= h.bucketStart! + bucketWidth(h.windowMs!)) allowance.stale = true;
    else {
      h.moved += delta;
      if (delta > 0 && at > allowance.newest) allowance.newest = at;
    }
  } else if (change.counter.kind === "period") {
    const { period, delta } = change as { period: string; delta: number };
    if (period === h.period) h.moved += delta;
  } else if (change.counter.kind === "credit") {
    const { release, charge } = change as { release: number; charge: number };
    h.moved += charge - release;
  }
}

/** What an ending allowance gives back: its unused part where it was counted, a window's calls counted at the newest of them. */
export function givingBack(allowance: Allowance): Adjustment[] {
  const changes: Adjustment[] = [];
  for (const h of allowance.lines) {
    const unused = h.block - h.drawn;
    const { counter } = h;
    if (counter.kind === "window") {
      // The block was counted at the grant; its calls were made up to `newest` (the same
      // bucket), and a bucket counts until its newest amount is a window old.
      if (h.drawn > 0 && allowance.newest > allowance.grantAt) {
        changes.push({ counter, at: allowance.grantAt, delta: -h.block });
        changes.push({ counter, at: allowance.newest, delta: h.drawn });
      } else if (unused > 0) changes.push({ counter, at: allowance.grantAt, delta: -unused });
    } else if (unused > 0) {
      if (counter.kind === "period") changes.push({ counter, period: h.period!, delta: -unused });
      else if (counter.kind === "credit") changes.push({ counter, release: unused, charge: 0 });
    }
  }
  return changes;
}

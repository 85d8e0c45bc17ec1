import { settle } from "./settled.ts";
import { createMemoryKeys } from "./memory-keys.ts";
import { createMemoryLevels } from "./memory-levels.ts";
import { createMemoryClaims, createMemoryPending } from "./memory-pending.ts";
import { createMemoryCounters, type DaySlot, type Window } from "./memory-windows.ts";
import type {
  Adjustment,
  AdmitLine,
  Counter,
  CountState,
  CreditState,
  GaugeCounter,
  LimitStanding,
  LoadedBalance,
  PeriodSeed,
  Refusal,
  Standings,
  State,
  StateLoaders,
  Verdict,
  WindowCounter,
} from "./state.ts";
import { drawFrom, expireBy, type Expiring } from "./expiring-credit.ts";

/** An admission with nothing to report: one object for all of them. */
const ADMITTED_NOW: Verdict = Object.freeze({ admitted: true as const });

interface CreditCell {
  /** Balance in the ledger when last read, less charges flushed since. */
  stored: number;
  /** Charges settled and not yet written to the ledger. */
  unflushed: number;
  /** Worst-case costs of calls in flight. */
  reserved: number;
  /** The cached balance is stale from then on. */
  staleAt: number;
  /** The ledger's version the balance was read at (undefined: unknown). */
  version?: number;
  /** Its grants that expire, as the ledger holds them now (undefined: unknown, so the balance is only ever read again). */
  expiring?: Expiring;
}

interface PeriodCell extends DaySlot {
  seed: PeriodSeed;
  /**
   * The period the cell held before it last moved, with its total: yesterday after
   * midnight, or today after the clock stepped back to yesterday (an NTP step). Moving
   * back to it takes it up again as it was instead of reading it from the rollups, which
   * lack the reservations of calls in flight and the rows not written yet: read again,
   * the day lost them, and a call in flight then settled below what the day holds
   * (a DailyLimit passed, a total below zero).
   */
  other?: { day: string; value: number };
}

/**
 * The State of one process (the embedded default): everything in memory, exact and
 * atomic because one thread runs each operation to its end. A cell missing its data
 * (a period total of a new day, an account's balance) is loaded first, and only then
 * is an admission checked and counted, in one synchronous step.
 */
export function createMemoryState(loaders: StateLoaders, now: () => number): State {
  const cells = createMemoryCounters();
  const gauges = new Map<string, { value: number }>();
  const credits = new Map<number, CreditCell>();
  /** Counters seen before, by identity: the request path reuses its counter objects. */
  const windowsOf = new WeakMap<WindowCounter, Window>();
  const periodsOf = new WeakMap<object, PeriodCell>();
  const gaugesOf = new WeakMap<GaugeCounter, { value: number }>();

  const windowOf = (counter: WindowCounter): Window => {
    let cell = windowsOf.get(counter);
    if (!cell) windowsOf.set(counter, (cell = cells.window(counter.key, counter.windowMs)));
    return cell;
  };
  const periodOf = (counter: Extract<Counter, { kind: "period" }>): PeriodCell => {
    let cell = periodsOf.get(counter);
    if (!cell) {
      const slot = cells.daySlot(counter.key) as PeriodCell;
      slot.seed = counter.seed;
      periodsOf.set(counter, (cell = slot));
    }
    return cell;
  };
  const gaugeOf = (counter: GaugeCounter) => {
    let cell = gaugesOf.get(counter);
    if (!cell) {
      cell = gauges.get(counter.key);
      if (!cell) gauges.set(counter.key, (cell = { value: 0 }));
      gaugesOf.set(counter, cell);
    }
    return cell;
  };

  /**
   * Charges announced (`credit.flushed`) while an account's balance is being read, by
   * account; `versionless`: one was announced without a version, so a read under way may
   * or may not hold it, and is not kept (read again at the next use).
   */
  const flushedDuringLoad = new Map<number, { loads: number; charges: Array<{ version: number; amount: number; at: number }>; versionless: boolean }>();
  /** Credit cells whose balance must be (re)read before use. */
  const creditStale = (accountId: number, now: number) => {
    const cell = credits.get(accountId);
    return !cell || now >= cell.staleAt;
  };
  /**
   * Reads the balance. With `expired` (it only went stale: grants expired) and a ledger
   * that cannot be read, the expired grants are taken off here instead (expiring-credit.ts).
   */
  const loadCredit = async (accountId: number, now: number, expired = false): Promise<void> => {
    // Charges announced while the read is under way: one committed after the read is not in it.
    let late = flushedDuringLoad.get(accountId);
    if (!late) flushedDuringLoad.set(accountId, (late = { loads: 0, charges: [], versionless: false }));
    late.loads++;
    let loaded: LoadedBalance;
    try {
      loaded = await loaders.balance(accountId, now);
    } catch (error) {
      const cell = credits.get(accountId);
      if (!expired || cell?.expiring === undefined) throw error;
      Object.assign(cell, expireBy(cell.stored, cell.expiring, now));
      return;
    } finally {
      if (--late.loads === 0) flushedDuringLoad.delete(accountId);
    }
    const { balance, version } = loaded;
    const staleAt = late.versionless ? -Infinity : loaded.staleAt;
    let stored = balance;
    // A read that may miss a versionless charge knows neither the balance nor what is left of the grants.
    let expiring: Expiring | undefined = late.versionless ? undefined : loaded.expiring;
    for (const charge of late.charges) {
      if (version !== undefined && charge.version <= version) continue;
      stored -= charge.amount;
      if (expiring) expiring = drawFrom(expiring, charge.amount, charge.at);
    }
    const previous = credits.get(accountId);
    credits.set(accountId, { stored, unflushed: previous?.unflushed ?? 0, reserved: previous?.reserved ?? 0, staleAt, version, expiring });
  };
  const creditOf = (accountId: number): CreditCell => {
    let cell = credits.get(accountId);
    // Only reached after a load; a cell dropped meanwhile (retired) starts empty.
    if (!cell) credits.set(accountId, (cell = { stored: 0, unflushed: 0, reserved: 0, staleAt: Infinity }));
    return cell;
  };

  /** Moves a period cell to `period` with `value`, keeping the period it leaves as `other`. */
  const movePeriod = (cell: PeriodCell, period: string, value: number): void => {
    if (cell.day !== undefined) cell.other = { day: cell.day, value: cell.value };
    cell.day = period;
    cell.value = value;
  };
  /** Seeds a period cell that moves to `period` (a new day or month, or its first use); the period it held before is taken up again as it was. */
  const seedPeriod = async (cell: PeriodCell, period: string): Promise<void> => {
    if (cell.other?.day === period) return movePeriod(cell, period, cell.other.value);
    const value = await loaders.seed(cell.seed, period);
    if (cell.day === period) return;
    if (cell.other?.day === period) return movePeriod(cell, period, cell.other.value);
    movePeriod(cell, period, value);
  };

  /** Loads what the lines need before the synchronous check; resolves at once when nothing is missing. */
  const prepare = (lines: readonly { counter: Counter; period?: string }[], now: number): Promise<unknown> | undefined => {
    let pending: Promise<unknown>[] | undefined;
    for (const line of lines) {
      const { counter } = line;
      if (counter.kind === "period") {
        const cell = periodOf(counter);
        // Reading a period always moves to it; counting into an older one is dropped.
        if (cell.day !== line.period) (pending ??= []).push(seedPeriod(cell, line.period!));
      } else if (counter.kind === "credit" && creditStale(counter.accountId, now)) {
        (pending ??= []).push(loadCredit(counter.accountId, now, true));
      }
    }
    return pending && Promise.all(pending);
  };

  /**
   * Loads what changes need: a period total a change moves to (a newer period than the
   * cell holds; an older one is dropped), an account's credit not read yet or stale.
   */
  const prepareAdjust = (changes: readonly Adjustment[]): Promise<unknown> | undefined => {
    let pending: Promise<unknown>[] | undefined;
    for (const change of changes) {
      const { counter } = change;
      if (counter.kind === "period") {
        const { period, delta } = change as { period: string; delta: number };
        const cell = periodOf(counter);
        // The period held before (applyChanges counts there) needs no move either.
        if (delta !== 0 && cell.day !== period && cell.other?.day !== period && !(cell.day !== undefined && cell.day > period)) (pending ??= []).push(seedPeriod(cell, period));
      } else if (counter.kind === "credit" && creditStale(counter.accountId, now())) {
        (pending ??= []).push(loadCredit(counter.accountId, now(), true));
      }
    }
    return pending && Promise.all(pending);
  };

  /** `admitting`: a window also counts what was counted after `now` (see Window.sum). */
  const valueOf = (counter: Counter, now: number, period: string | undefined, admitting = false): number => {
    switch (counter.kind) {
      case "window":
        return windowOf(counter).sum(now, admitting);
      case "period": {
        const cell = periodOf(counter);
        return cell.day === period ? cell.value : 0;
      }
      case "gauge":
        return gaugeOf(counter).value;
      case "credit": {
        const cell = creditOf(counter.accountId);
        return cell.stored - cell.unflushed - cell.reserved;
      }
    }
  };

  const heldBy = (line: AdmitLine): number => {
    if (line.counter.kind === "credit") return creditOf(line.counter.accountId).reserved;
    return line.held ? gaugeOf(line.held).value : 0;
  };

  /** The check and the counting of an admission, in one synchronous step. */
  const admitNow = (lines: readonly AdmitLine[], now: number): Verdict => {
    // The reported line with the least remaining, per kind (-1: none yet): kept in locals, so a call without limits allocates nothing.
    let requestsLine = -1;
    let requestsLeft = 0;
    let tokensLine = -1;
    let tokensLeft = 0;
    let refusal: Refusal | undefined;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (line.limit === undefined) continue;
      // Concurrent admissions may carry clock readings out of order: one counted at a
      // later moment still counts against this one, or together they would pass the limit.
      const used = valueOf(line.counter, now, line.period, true);
      const reached = line.counter.kind === "credit" ? used <= line.limit : used >= line.limit;
      if (!reached) {
        if (line.report !== undefined) {
          const left = Math.max(0, line.limit - used - line.add);
          if (line.report === "requests") {
            if (requestsLine < 0 || left < requestsLeft) {
              requestsLine = i;
              requestsLeft = left;
            }
          } else if (tokensLine < 0 || left < tokensLeft) {
            tokensLine = i;
            tokensLeft = left;
          }
        }
        continue;
      }
      const retryAfterMs = line.counter.kind === "window" ? windowOf(line.counter).retryAfterMs(now, line.limit, true) : 0;
      const reachedLine = { line: i, used, held: heldBy(line), retryAfterMs };
      if (!refusal) refusal = reachedLine;
      else (refusal.also ??= []).push(reachedLine);
    }
    if (refusal) return { admitted: false, refusal };
    for (const line of lines) {
      if (line.add === 0) continue;
      const { counter } = line;
      switch (counter.kind) {
        case "window":
          windowOf(counter).add(line.add, now);
          break;
        case "period": {
          const cell = periodOf(counter);
          if (cell.day === line.period) cell.value += line.add;
          break;
        }
        case "gauge":
          gaugeOf(counter).value += line.add;
          break;
        case "credit":
          creditOf(counter.accountId).reserved += line.add;
          break;
      }
    }
    if (requestsLine < 0 && tokensLine < 0) return ADMITTED_NOW;
    const standings: Standings = {};
    if (requestsLine >= 0) standings.requests = standingOf(lines, requestsLine, requestsLeft, now);
    if (tokensLine >= 0) standings.tokens = standingOf(lines, tokensLine, tokensLeft, now);
    return { admitted: true, standings };
  };
  const standingOf = (lines: readonly AdmitLine[], line: number, remaining: number, now: number): LimitStanding => {
    const { counter } = lines[line]!;
    return counter.kind === "window" ? { line, remaining, resetMs: windowOf(counter).resetMs(now, true) } : { line, remaining };
  };

  /** Applies settled changes to the cells (once what they move to is loaded). */
  const applyChanges = (changes: readonly Adjustment[]): void => {
    for (const change of changes) {
      switch (change.counter.kind) {
        case "window": {
          const { at, delta } = change as { at: number; delta: number };
          if (delta !== 0) windowOf(change.counter).add(delta, at);
          break;
        }
        case "period": {
          const { period, delta } = change as { period: string; delta: number };
          // A call that began before midnight (or the month's end) and settles after it:
          // moving the cell back to the past period would drop the current period's total,
          // so the change goes to the period the cell held before (kept for a clock that
          // steps back), or, older still, is dropped. Its row still reaches that day's rollup.
          const cell = periodOf(change.counter);
          if (delta === 0) break;
          if (cell.day === period) cell.value += delta;
          else if (cell.other?.day === period) cell.other.value += delta;
          break;
        }
        case "gauge": {
          const cell = gaugeOf(change.counter);
          cell.value = Math.max(0, cell.value + (change as { delta: number }).delta);
          break;
        }
        case "credit": {
          const { release, charge } = change as { release: number; charge: number };
          const cell = creditOf(change.counter.accountId);
          cell.reserved = Math.max(0, cell.reserved - release);
          cell.unflushed += charge;
          if (retired.size > 0) settleRetired(change.counter.accountId);
          break;
        }
      }
    }
  };

  const ADMITTED: Promise<Verdict> = Promise.resolve(ADMITTED_NOW);
  const counts: CountState = {
    admit(lines, now) {
      const loading = prepare(lines, now);
      if (loading) return loading.then(() => admitNow(lines, now));
      const verdict = admitNow(lines, now);
      return verdict === ADMITTED_NOW ? ADMITTED : Promise.resolve(verdict);
    },
    adjust(changes) {
      const loading = prepareAdjust(changes);
      if (loading) return loading.then(() => applyChanges(changes));
      return settle(() => applyChanges(changes));
    },
    async read(counter, now, period) {
      const loading = prepare([{ counter, period }], now);
      if (loading) await loading;
      return valueOf(counter, now, period);
    },
    async clear(counter) {
      if (counter.kind === "window") cells.clear(counter.key);
      else gaugeOf(counter).value = 0;
    },
  };

  /** Deleted accounts whose calls still hold credit, and what to do when they no longer do. */
  const retired = new Map<number, () => void>();
  const held = (accountId: number) => {
    const cell = credits.get(accountId);
    return cell ? cell.reserved + cell.unflushed : 0;
  };
  const settleRetired = (accountId: number) => {
    const settled = retired.get(accountId);
    if (!settled || held(accountId) > 0) return;
    retired.delete(accountId);
    credits.delete(accountId);
    settled();
  };
  const credit: CreditState = {
    async invalidate(accountId) {
      // Only a cell in use is re-read; an unknown account is read on its next call.
      if (credits.has(accountId)) await loadCredit(accountId, now());
    },
    async flushed(charged, version) {
      for (const [accountId, amount] of charged) {
        const loading = flushedDuringLoad.get(accountId);
        if (loading && version !== undefined) loading.charges.push({ version, amount, at: now() });
        else if (loading) loading.versionless = true;
        const cell = credits.get(accountId);
        if (!cell) continue;
        // Read again at its next use; else taken off unless the balance was read at or after the charges' version.
        if (version === undefined) {
          cell.staleAt = -Infinity;
          cell.expiring = undefined;
        } else if (cell.version === undefined || version > cell.version) {
          cell.stored -= amount;
          if (cell.expiring) cell.expiring = drawFrom(cell.expiring, amount, now());
        }
        cell.unflushed = Math.max(0, cell.unflushed - amount);
        if (retired.size > 0) settleRetired(accountId);
      }
    },
    async held(accountId) {
      return held(accountId);
    },
    async retire(accountId, settled) {
      retired.set(accountId, settled);
      settleRetired(accountId);
    },
  };

  return { counts, credit, levels: createMemoryLevels(cells), keys: createMemoryKeys(), signups: createMemoryPending(), claims: createMemoryClaims() };
}

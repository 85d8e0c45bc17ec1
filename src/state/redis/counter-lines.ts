import type { Counter, LimitKind, StateLoaders, WindowCounter } from "../state.ts";
import type { Script } from "./connection.ts";
import type { Line } from "./batching.ts";
import { laneOf } from "./lua-windows.ts";

/**
 * Counters as the Redis State's scripts take them: a counter's key, an admission's or a
 * settlement's line, and the period seeds and balances a script asks for (its
 * {'load', i…} answer), loaded between its runs.
 */
export type Run = (s: Script, payload: unknown, ...extra: string[]) => Promise<unknown>;

/** Period totals outlive their month; a total Redis lost is seeded again from the rollups. */
export const PERIOD_TTL_MS = 35 * 86_400_000;

/** Calls of a script that asks for loads; each run fills what the one before named. */
const LOAD_ROUNDS = 3;

export type CounterLines = ReturnType<typeof createCounterLines>;

export function createCounterLines(prefix: string, loaders: StateLoaders, run: Run, onUnseeded?: (error: unknown) => void) {
  /**
   * A window's string: a pair's under `wp:`, a window alone under `ws:` (lua-windows.ts;
   * earlier layouts were under `win:`, one window a string, and `w:`, hashes: another
   * layout, so another name, and instances of two versions never read each other's).
   */
  const windowKey = (counter: WindowCounter) => (counter.lane ? `${prefix}wp:${counter.lane.key}` : `${prefix}ws:${counter.key}`);
  /** Redis keys of counters, made once per counter object (the request path reuses them). */
  const keysOf = new WeakMap<object, string>();
  const keyOf = (counter: Counter): string => {
    let key = keysOf.get(counter);
    if (key === undefined) {
      key = counter.kind === "credit" ? `${prefix}c:${counter.accountId}` : counter.kind === "window" ? windowKey(counter) : `${prefix}${counter.kind[0]}:${counter.key}`;
      keysOf.set(counter, key);
    }
    return key;
  };

  const lineOf = (line: { counter: Counter; period?: string; limit?: number; add?: number; held?: Counter; report?: LimitKind }): Line => {
    const { counter } = line;
    return {
      k: counter.kind[0],
      key: keyOf(counter),
      w: counter.kind === "window" ? counter.windowMs : undefined,
      n: counter.kind === "window" ? laneOf(counter) : undefined,
      p: line.period,
      l: line.limit,
      a: line.add ?? 0,
      h: line.held ? keyOf(line.held) : undefined,
      r: line.report === undefined || line.limit === undefined ? undefined : line.report === "requests" ? 1 : 2,
    };
  };

  /** Balance reads that failed, by line: asked again, the line fails with the read's error. */
  const loadFailures = new WeakMap<Line, { error: unknown }>();
  /**
   * Fills the lines the script named with the seed or balance it lacks. With
   * `skipUnseeded` (a settlement), a period change whose seed cannot be read is dropped
   * (its `d` made 0) instead of failing the run: the total is seeded from the rollups
   * when it is next needed, and the rest of the settlement (releases, calls in flight)
   * must not wait for the database.
   */
  const load = async (answer: unknown[], lines: Line[], counters: readonly { counter: Counter; period?: string }[], at: number, skipUnseeded = false) => {
    await Promise.all(
      answer.slice(1).map(async (entry) => {
        // A credit line comes as "i:fl": the count of charges written off without a version, which the balance stored must still find.
        const [index, fl] = String(entry).split(":");
        const i = Number(index);
        const { counter, period } = counters[i]!;
        if (counter.kind === "period") {
          try {
            lines[i]!.s = await loaders.seed(counter.seed, period!);
          } catch (error) {
            if (!skipUnseeded) throw error;
            lines[i]!.d = 0;
            onUnseeded?.(error);
          }
        } else if (counter.kind === "credit") {
          const line = lines[i]!;
          const failed = loadFailures.get(line);
          if (failed !== undefined) throw failed.error;
          line.fl = fl;
          try {
            const { balance, staleAt, version, expiring } = await loaders.balance(counter.accountId, at);
            line.b = balance;
            line.v = version;
            line.st = Number.isFinite(staleAt) ? staleAt : undefined;
            line.e = expiring ? JSON.stringify(expiring.map((grant) => [grant.at, grant.remaining])) : undefined;
          } catch (error) {
            // The ledger cannot be read: the script takes a stale balance's expired grants
            // off by itself (f); a balance it cannot bring forward fails with this error.
            loadFailures.set(line, { error });
            line.f = 1;
          }
        }
      }),
    );
  };

  /** Runs a script that may first ask for seeds or balances, loading them between runs (`beforeEachRun` right before each). */
  const withLoads = async (
    s: Script,
    lines: Line[],
    counters: readonly { counter: Counter; period?: string }[],
    at: number,
    extra: string[],
    options: { beforeEachRun?: () => void; skipUnseeded?: boolean } = {},
  ): Promise<unknown[]> => {
    for (let round = 0; round < LOAD_ROUNDS; round++) {
      options.beforeEachRun?.();
      const answer = (await run(s, lines, ...extra)) as unknown[];
      if (answer[0] !== "load") return answer;
      await load(answer, lines, counters, at, options.skipUnseeded);
    }
    throw new Error("Redis kept asking for period totals and balances it was given");
  };

  return { keyOf, lineOf, load, withLoads };
}

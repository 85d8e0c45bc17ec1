import type { Adjustment, AdmitLine, LimitStanding, Standings, Verdict } from "../state.ts";
import { MergedChanges, mergeAdjustments, oneRunAtATime, type Line, type MergedChange } from "./batching.ts";
import { PERIOD_TTL_MS, type CounterLines, type Run } from "./counter-lines.ts";
import { adjustmentOf } from "./deferred-lines.ts";
import { ADMIT } from "./lua.ts";
import { ConnectionMadeAgain, type OpId, type Repairs } from "./repairs.ts";

/** The answer of an admission that did not go: the connection was made again while it waited for the run before. */
const NOT_SENT: unknown[] = ["not sent"];

/**
 * The Redis State's admission runs (state.ts): the ADMIT script for the lines Redis must
 * check, one run at a time with those that came meanwhile, each under an operation id
 * that a lost answer undoes (repairs.ts), and its answer read as a verdict.
 */

export const ADMITTED_NOW: Verdict = Object.freeze({ admitted: true as const });

/** A line's index in the admission, from its index in what the script was sent. */
export const indexOf = (sent: number, indexes: readonly number[] | undefined): number => (indexes ? indexes[sent]! : sent);

/** The standings in an admission's answer: {'ok', line, remaining, reset} for requests, then for tokens ('' where none). */
function standingsOf(answer: unknown[], indexes: readonly number[] | undefined): Standings {
  const standings: Standings = {};
  const at = (offset: number): LimitStanding | undefined => {
    if (answer[offset] === "" || answer[offset] === undefined) return undefined;
    const reset = String(answer[offset + 2]);
    const line = indexOf(Number(answer[offset]), indexes);
    return reset === "" ? { line, remaining: Number(answer[offset + 1]) } : { line, remaining: Number(answer[offset + 1]), resetMs: Number(reset) };
  };
  const requests = at(1);
  const tokens = at(4);
  if (requests) standings.requests = requests;
  if (tokens) standings.tokens = tokens;
  return standings;
}

export function createAdmissionRuns(deps: {
  run: Run;
  lines: CounterLines;
  repairs: Repairs;
  /** How many settlement batches were sent so far (gatherWithin's sentCount). */
  settlementsSent: () => number;
  /** Sends an undo of a lost admission (ADJUST under its id). */
  undo: (reversed: MergedChange[], op: OpId) => Promise<unknown>;
}) {
  const { run } = deps;
  const { keyOf, lineOf, load, withLoads } = deps.lines;
  /**
   * Admissions one run at a time, those that came meanwhile together in the next
   * (batching.ts, oneRunAtATime): each is admitted in turn as by a run of its own, and
   * the windows and totals the calls of one account share are read and written once per run.
   */
  /** What a grant learns of its counting run: the settlement batches sent before it, and the dataset's generation it went over. */
  type Sent = { batches: number; generation?: number };
  type Admitting = { payload: Line[]; at: number; op: OpId; sent?: Sent };
  /** Notes, as a run goes, how many settlement batches went to Redis before it (they are in what it reads). */
  const noteSent = (admitting: Admitting) => {
    if (!admitting.sent) return;
    admitting.sent.batches = deps.settlementsSent();
    admitting.sent.generation = admitting.op.generation;
  };
  /** Whether the connection in use is of the admission's generation (repairs.ts: `guard`); an admission waiting for the run before may find it made again. */
  const goes = (admitting: Admitting) => {
    try {
      deps.repairs.guard(admitting.op);
      return true;
    } catch {
      return false;
    }
  };
  const admissions = oneRunAtATime<Admitting, unknown[]>(
    (admitting) => {
      const { payload, at, op } = admitting;
      if (!goes(admitting)) return Promise.resolve(NOT_SENT);
      noteSent(admitting);
      return run(ADMIT, payload, "admit", String(at), String(PERIOD_TTL_MS), op.key, String(op.bit)) as Promise<unknown[]>;
    },
    async (waiting) => {
      const going = waiting.filter(goes);
      for (const admitting of going) noteSent(admitting);
      const answers = going.length === 0 ? [] : ((await run(ADMIT, going.map(({ payload, at, op }) => ({ l: payload, n: at, o: op.key, b: op.bit })), "many", "0", String(PERIOD_TTL_MS))) as unknown[][]);
      let next = 0;
      return waiting.map((admitting) => (going.includes(admitting) ? answers[next++]! : NOT_SENT));
    },
  );
  /**
   * An admission whose answer was lost may have counted: what it would have counted is
   * taken off once Redis answers again, if it did (repairs.ts).
   */
  const reversal = (checking: readonly AdmitLine[], at: number): MergedChange[] => {
    const reverse: Adjustment[] = [];
    for (const line of checking) {
      if (line.add === 0) continue;
      const { counter } = line;
      if (counter.kind === "credit") reverse.push({ counter, release: line.add, charge: 0 });
      else {
        const forward = adjustmentOf(line, at) as { delta: number };
        reverse.push({ ...forward, delta: -forward.delta } as Adjustment);
      }
    }
    const merged = new MergedChanges();
    mergeAdjustments(reverse, keyOf, merged);
    return merged.values();
  };

  /** The ADMIT run of the lines Redis must check (with an allowance's margins, by the admission's line index), its raw answer. */
  const runAdmission = async (
    checking: readonly AdmitLine[],
    indexes: readonly number[] | undefined,
    at: number,
    margins?: ReadonlyMap<number, number>,
    /** Filled with how many settlement batches were sent before the run that counted (allowances' grants). */
    sent?: Sent,
  ): Promise<unknown[]> => {
    const payload = checking.map(lineOf);
    if (margins) for (let sent = 0; sent < payload.length; sent++) payload[sent]!.m = margins.get(indexOf(sent, indexes));
    // An admission that did not go because the connection was made again goes once more, as a new operation.
    for (let tries = 1; ; tries++) {
      try {
        return await undoable(payload, checking, at, sent);
      } catch (error) {
        if (!(error instanceof ConnectionMadeAgain) || tries >= 3) throw error;
      }
    }
  };
  const undoable = (payload: Line[], checking: readonly AdmitLine[], at: number, sent: Sent | undefined) =>
    deps.repairs.undoable(
      async (op) => {
        const answer = await admissions({ payload, at, op, sent });
        if (answer === NOT_SENT) throw new ConnectionMadeAgain();
        // A period total or balance Redis does not hold: loaded, then this admission runs on its own.
        if (answer[0] !== "load") return answer;
        await load(answer, payload, checking, at);
        const extra = ["admit", String(at), String(PERIOD_TTL_MS), op.key, String(op.bit)];
        return withLoads(ADMIT, payload, checking, at, extra, {
          beforeEachRun: () => {
            deps.repairs.guard(op);
            noteSent({ payload, at, op, sent });
          },
        });
      },
      // Its answer lost, it may have counted: what it would have counted is taken off once Redis answers, if it did.
      (op) => deps.undo(reversal(checking, at), op),
    );

  /** The ADMIT run of the lines Redis must check, its answer in the admission's own line indexes. */
  const admitChecked = async (checking: readonly AdmitLine[], indexes: readonly number[] | undefined, at: number): Promise<Verdict> => {
    const answer = await runAdmission(checking, indexes, at);
    if (answer[0] === "ok") return answer[1] === "" && answer[4] === "" ? ADMITTED_NOW : { admitted: true, standings: standingsOf(answer, indexes) };
    // {'no', then per line reached: line, used, held, retryAfterMs} (the first is the refusal's own).
    const reached = [];
    for (let i = 1; i + 3 < answer.length; i += 4) {
      reached.push({ line: indexOf(Number(answer[i]), indexes), used: Number(answer[i + 1]), held: Number(answer[i + 2]), retryAfterMs: Number(answer[i + 3]) });
    }
    const [first, ...also] = reached;
    return { admitted: false, refusal: also.length > 0 ? { ...first!, also } : first! };
  };

  return { runAdmission, admitChecked };
}

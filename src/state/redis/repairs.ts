import type { DatasetWatch } from "./dataset.ts";

/**
 * Counts whose answer was lost, made good exactly once.
 *
 * A script sent to Redis whose answer never came (the connection dropped, or went
 * unanswered past the watchdog) may have run or not. Before this, what it counted was
 * left as it fell: a settlement lost with its batch left the calls' credit reservations
 * and calls in flight held for as long as the process lived (its lease is renewed), and an
 * admission whose answer was lost (the call answered 503) left what it counted, an
 * allowance's whole block among them. An account was then refused for credit or
 * concurrency it had.
 *
 * Each counting script of this process (an admission, a settlement batch) carries an
 * operation id: two bits of a bitmap (`op:<owner>:<n>`, a key per 2^19 operations,
 * expiring an hour after its last use). The script sets the first when it counts, and
 * counts nothing when it finds it set. A lost settlement is sent again with its id (it
 * counts once, whether the first one ran or not); a lost admission is undone: the undo
 * takes its amounts off when the first bit says it ran (and sets the second, so it is
 * undone once), and otherwise sets the first, so the admission, arriving late over a
 * connection that was dropped with it still in the network, counts nothing.
 *
 * Repairs run in order, once Redis answers again and its dataset is checked
 * (dataset.ts): when Redis lost its data meanwhile (a restart), what they would repair is
 * gone with it and they are dropped; so are repairs older than `REPAIR_MAX_AGE_MS` (the
 * bitmap may be gone).
 */
export interface OpId {
  /** The bitmap key and the operation's first bit in it. */
  readonly key: string;
  readonly bit: number;
  /** The dataset's generation as last checked when it was sent (dataset.ts). */
  readonly generation: number;
}

export interface Repairs {
  /** The id of an operation about to be sent. */
  next(): OpId;
  /**
   * An operation whose answer did not come, and how to make it good: a settlement sent
   * again with its id, or an admission undone (its amounts taken off under its id).
   */
  add(op: OpId, repair: () => Promise<unknown>): void;
  /** Runs the waiting repairs in order; settles when none waits or Redis failed again. */
  run(): Promise<void>;
  readonly size: number;
}

/** How long a lost operation is repaired for: its bitmap key lives an hour past its last use. */
export const REPAIR_MAX_AGE_MS = 30 * 60_000;
/** Operations per bitmap key (two bits each: 128 KiB a key). */
const OPS_PER_KEY = 1 << 19;

interface Repair {
  op: OpId;
  repair: () => Promise<unknown>;
  since: number;
}

export function createRepairs(options: {
  /** `<prefix>op:<owner>:` */
  keyPrefix: string;
  dataset: DatasetWatch;
  now: () => number;
  log?: { error(message: string, fields?: Record<string, unknown>): void };
}): Repairs {
  let sequence = 0;
  /** The bitmap key of the current block of ids (made once per block, not per operation). */
  let block = -1;
  let blockKey = "";
  const waiting: Repair[] = [];
  let running: Promise<void> | undefined;

  const runOnce = async () => {
    // Over a connection whose dataset is checked: the generation then says whether Redis kept what the operations may have counted.
    await options.dataset.check();
    let lost = 0;
    let old = 0;
    while (waiting.length > 0) {
      const repair = waiting[0]!;
      if (repair.op.generation !== options.dataset.latest()) lost++;
      else if (options.now() - repair.since > REPAIR_MAX_AGE_MS) old++;
      else await repair.repair();
      waiting.shift();
    }
    if (lost > 0) options.log?.error("Redis lost its data while counts of this process were unanswered: they are not repaired", { operations: lost });
    if (old > 0) options.log?.error("counts of this process left unanswered for too long are not repaired", { operations: old });
  };

  return {
    next() {
      const n = ++sequence;
      const of = Math.floor(n / OPS_PER_KEY);
      if (of !== block) {
        block = of;
        blockKey = `${options.keyPrefix}${of}`;
      }
      return { key: blockKey, bit: (n % OPS_PER_KEY) * 2, generation: options.dataset.latest() };
    },
    add(op, repair) {
      waiting.push({ op, repair, since: options.now() });
    },
    run() {
      if (waiting.length === 0) return Promise.resolve();
      running ??= runOnce()
        .catch(() => {})
        .finally(() => {
          running = undefined;
        });
      return running;
    },
    get size() {
      return waiting.length;
    },
  };
}

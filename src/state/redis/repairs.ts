import { answeredWithError, answerLost, RedisUnavailable } from "./connection.ts";
import type { DatasetWatch } from "./dataset.ts";

/**
 * Counts whose answer was lost, made good exactly once, and in order.
 *
 * A script sent to Redis whose answer never came (the connection dropped, or went
 * unanswered past the watchdog) may have run or not. Left as it fell, a lost settlement
 * batch kept its calls' credit reservations and calls in flight held for as long as the
 * process lived (its lease is renewed), and a lost admission (the call answered 503)
 * kept what it counted, an allowance's whole block among it.
 *
 * Each counting script of this process carries an operation id: two bits of a bitmap
 * (`op:<owner>:<n>`, a key per 2^19 operations, expiring an hour after its last use).
 * The script sets the first when it counts, and counts nothing when it finds it set.
 *
 * - A settlement-like operation (`resent`: settlements, keys' calls in flight) is sent
 *   again under its id until it counted: once, whether the first one ran or not. It
 *   never overtakes one that waits: counts are clamped at zero, so a release that landed
 *   before its call's count would leave the count for good. While something waits and
 *   Redis does not take it, later ones wait behind it, unsent.
 * - An admission-like operation (`undoable`: admissions, probe claims) whose answer was
 *   lost is undone: the undo takes its amounts off when the first bit says it ran (and
 *   sets the second, so once), and otherwise sets the first, so the admission, arriving
 *   late over a connection dropped with it still in the network, counts nothing. One that
 *   was never sent, or that Redis answered with an error, is not undone.
 *
 * Every run of an operation's script goes over a connection whose dataset was checked
 * (dataset.ts), of the generation the operation was numbered in (`guard`): when Redis
 * lost its data meanwhile (a restart), what waits is dropped with what it would repair.
 * Repairs also end after `REPAIR_MAX_AGE_MS` (the bitmap may be gone). They run before
 * this process's next admission (as far as Redis takes them), before a usage row or a
 * written charge goes to Redis (a charge must be counted as unwritten before any instance
 * can write it off: `drained`), and every second while any waits.
 */
export interface OpId {
  /** The bitmap key and the operation's first bit in it. */
  readonly key: string;
  readonly bit: number;
  /** The dataset's generation over the connection it goes on (dataset.ts). */
  readonly generation: number;
}

export interface Repairs {
  /** Sends a settlement-like operation after what waits; sent again under its id until it counted (unless Redis answers it with an error). */
  resent(send: (op: OpId) => Promise<unknown>): Promise<void>;
  /** Queues a settlement-like operation without sending it now (it goes with the next run). */
  queue(send: (op: OpId) => Promise<unknown>): void;
  /** Sends an admission-like operation; when its answer is lost, `undo` runs under its id once Redis answers. */
  undoable<T>(send: (op: OpId) => Promise<T>, undo: (op: OpId) => Promise<unknown>): Promise<T>;
  /** Right before each script run of the operation: refuses (not sent) unless the connection in use is checked and of its generation. */
  guard(op: OpId): void;
  /** Runs what waits, in order, as far as Redis takes it. */
  run(): Promise<void>;
  /** Settles once nothing waits; rejects (not sent) while something does that Redis does not take. */
  drained(): Promise<void>;
  readonly size: number;
}

/** How long a lost operation is repaired for: its bitmap key lives an hour past its last use. */
export const REPAIR_MAX_AGE_MS = 30 * 60_000;
/** Operations per bitmap key (two bits each: 128 KiB a key). */
const OPS_PER_KEY = 1 << 19;
/** A run that failed is not tried again for this long but by the timer (an admission does not wait for a Redis or a database away). */
const RETRY_MS = 1000;

interface Waiting {
  /** Its id once sent (a repair keeps it); an operation that waits unsent is numbered when it goes. */
  op?: OpId;
  send: (op: OpId) => Promise<unknown>;
  since: number;
}

const notSent = (why: string) => new RedisUnavailable("operation not sent", new Error(why), "not sent");

/** An operation not sent because the connection was made again since its dataset was checked: sent again as a new one, it may go. */
export class ConnectionMadeAgain extends RedisUnavailable {
  constructor() {
    super("operation not sent", new Error("the connection was made again, or Redis lost its data"), "not sent");
  }
}

export function createRepairs(options: {
  /** `<prefix>op:<owner>:` */
  keyPrefix: string;
  dataset: DatasetWatch;
  now: () => number;
  log?: { error(message: string, fields?: Record<string, unknown>): void };
}): Repairs {
  const { dataset } = options;
  let sequence = 0;
  /** The bitmap key of the current block of ids (made once per block, not per operation). */
  let block = -1;
  let blockKey = "";
  const waiting: Waiting[] = [];
  let running: Promise<void> | undefined;
  let failedAt = -Infinity;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const next = (generation: number): OpId => {
    const n = ++sequence;
    const of = Math.floor(n / OPS_PER_KEY);
    if (of !== block) {
      block = of;
      blockKey = `${options.keyPrefix}${of}`;
    }
    return { key: blockKey, bit: (n % OPS_PER_KEY) * 2, generation };
  };

  /** An id over the connection in use, checked first when it was made again. */
  const ready = async (): Promise<OpId> => {
    let generation = dataset.generation();
    if (generation === undefined) {
      await dataset.check().catch((error: unknown) => {
        throw new RedisUnavailable("connection", error, "not sent");
      });
      generation = dataset.generation();
      if (generation === undefined) throw new ConnectionMadeAgain();
    }
    return next(generation);
  };

  const later = () => {
    timer ??= setTimeout(() => {
      timer = undefined;
      void attempt(true);
    }, RETRY_MS);
    timer.unref?.();
  };

  const runOnce = async () => {
    await dataset.check();
    let lost = 0;
    let old = 0;
    while (waiting.length > 0) {
      const item = waiting[0]!;
      const generation = dataset.generation();
      if (generation === undefined) throw new ConnectionMadeAgain();
      if (item.op && item.op.generation !== generation) lost++;
      else if (options.now() - item.since > REPAIR_MAX_AGE_MS) old++;
      else {
        item.op ??= next(generation);
        try {
          await item.send(item.op);
        } catch (error) {
          if (!answeredWithError(error)) throw error;
          // Redis refuses it (a script's error): sent again it would fail again.
          options.log?.error("a count of this process that Redis refuses is dropped", { error: (error as Error).message });
        }
      }
      waiting.shift();
    }
    if (lost > 0) options.log?.error("Redis lost its data while counts of this process waited: they are not repaired", { operations: lost });
    if (old > 0) options.log?.error("counts of this process that waited too long for Redis are not repaired", { operations: old });
  };

  /** One run at a time; a run that failed is tried again by the timer, or at once when `force`d. */
  const attempt = (force = false): Promise<void> => {
    if (waiting.length === 0) return Promise.resolve();
    if (!force && options.now() - failedAt < RETRY_MS) return Promise.resolve();
    running ??= runOnce()
      .then(
        () => {
          failedAt = -Infinity;
        },
        () => {
          failedAt = options.now();
          later();
        },
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  };

  return {
    async resent(send) {
      if (waiting.length > 0) await attempt();
      if (waiting.length > 0) {
        waiting.push({ send, since: options.now() });
        later();
        throw notSent("earlier counts of this process wait for Redis");
      }
      let op: OpId;
      try {
        op = await ready();
      } catch (error) {
        waiting.push({ send, since: options.now() });
        later();
        throw error;
      }
      try {
        await send(op);
      } catch (error) {
        if (!answeredWithError(error)) {
          waiting.push({ op, send, since: options.now() });
          later();
        }
        throw error;
      }
    },
    queue(send) {
      waiting.push({ send, since: options.now() });
      later();
    },
    async undoable(send, undo) {
      if (waiting.length > 0) await attempt();
      const op = await ready();
      try {
        return await send(op);
      } catch (error) {
        if (answerLost(error)) {
          waiting.push({ op, send: undo, since: options.now() });
          later();
        }
        throw error;
      }
    },
    guard(op) {
      if (dataset.generation() !== op.generation) throw new ConnectionMadeAgain();
    },
    run: () => attempt(),
    async drained() {
      if (waiting.length === 0) return;
      await attempt(true);
      if (waiting.length > 0) throw notSent("earlier counts of this process wait for Redis");
    },
    get size() {
      return waiting.length;
    },
  };
}

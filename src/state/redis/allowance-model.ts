import type { Adjustment, AdmitLine, Counter, LimitKind, Verdict } from "../state.ts";

/**
 * What allowances (allowances.ts) are made of: a shape of admission's entry, an
 * allowance and its held lines, and a grant as asked of Redis and as answered.
 */

/** A line an allowance holds a block of. */
export interface Held {
  /** The line's index in the admission. */
  readonly index: number;
  readonly counter: Counter;
  readonly key: string;
  readonly period: string | undefined;
  readonly limit: number | undefined;
  readonly report: LimitKind | undefined;
  /** What the grant counted (credit: reserved). */
  readonly block: number;
  /** The counter's value before the block, as the grant read it (credit: what was available); NaN when unchecked. */
  readonly before: number;
  /** Window: its bucket, and the newest amount of its oldest bucket that counts (from the grant's reset). */
  readonly windowMs?: number;
  readonly bucketStart?: number;
  readonly oldestNewest?: number;
  /** What calls admitted here took of the block. */
  drawn: number;
  /** This process's own changes to the counter since the grant (settlements), which Redis holds. */
  moved: number;
}

export interface Allowance {
  /** The entry (shape) it was granted to. */
  readonly entry: Entry;
  readonly lines: Held[];
  readonly grantAt: number;
  readonly end: number;
  /** The dataset's generation when it was asked for (dataset.ts). */
  readonly epoch: number;
  /** Calls its block was sized for. */
  readonly size: number;
  /** The newest moment a call was admitted or a settlement counted in the narrowest window's bucket. */
  newest: number;
  calls: number;
  /** Something it read changed (a settlement outside its bucket): it admits nothing more. */
  stale: boolean;
  closed: boolean;
  /** Granted while something it read was being ended (`end`): it admits the call it was asked for, then ends. */
  once?: boolean;
}

/** A held line as an admission's shape names it: the same counter object, limit and period. */
export interface ShapeLine {
  readonly index: number;
  readonly counter: Counter;
  readonly limit: number | undefined;
  readonly period: string | undefined;
}

/**
 * Per shape of admission (its held lines; found through its first held counter's key,
 * usually the account's credit): an account's calls to two models, or a chat and a token
 * count, have shapes of their own and keep an allowance each.
 */
export interface Entry {
  readonly shape: readonly ShapeLine[];
  /** How many lines the admission has (held or not). */
  readonly length: number;
  allowance?: Allowance;
  /** Calls the next block is sized for. */
  calls: number;
  /** Admissions that waited for the grant under way: the next block holds at least as many. */
  waiting: number;
  /** `calls` was sized by a refusal: the next grant asks for exactly that. */
  sized: boolean;
  backoffUntil: number;
  granting?: Promise<void>;
  /** This process's changes to its counters while a grant is under way, with the batch each went in (`track`). */
  grantMoves?: { change: Adjustment; batch: number }[];
  /** How many times `end` picked one of its counters (a grant under way then ends at once). */
  ends: number;
  usedAt: number;
}

/** What a grant asks the admission script for: the admission's lines with blocks, and each block's margin by line index. */
export interface GrantRequest {
  readonly lines: AdmitLine[];
  /** Each held line's margin by its index, in line order (an allowance's lines keep that order). */
  readonly margins: ReadonlyMap<number, number>;
  readonly at: number;
  readonly entry: Entry;
  readonly calls: number;
  /** The entry's `ends` when it was asked. */
  readonly ends: number;
  /** The dataset's generation when it was asked (dataset.ts; a grant answered over a newer connection is still of that generation). */
  readonly epoch: number;
}

/** The grant's answer past the standings: credit's stale-at, then per line with a margin (in line order) its value before and its reset. */
export interface GrantAnswer {
  staleAt: number | undefined;
  values: ReadonlyMap<number, { before: number; reset: number | undefined }>;
  /** How many settlement batches had been sent when the counting run was (those after it are not in what it read). */
  admitSent: number;
  /** The dataset's generation over the connection that answered. */
  epoch: number;
}

/** A refused grant: the line (index in the admission) whose limit left too little, and its value then. */
export interface GrantRefusal {
  refusedBy: number;
  used: number;
}

export interface Allowances {
  /** Admits here when an allowance of these lines has room and no limit is reached: the verdict, and what the lines it holds no block of add. */
  draw(lines: readonly AdmitLine[], at: number): { verdict: Verdict; later: Adjustment[] } | undefined;
  /** Ends the allowance of these lines (giving back its unused part), and says whether to ask for a new one and what. */
  request(lines: readonly AdmitLine[], at: number): GrantRequest | undefined;
  /**
   * Ends every allowance holding a block of a counter these lines count (other shapes'
   * too: an account's calls to another model share its credit and account limits), so
   * that Redis, admitting the call itself, reads no unused block of this process.
   */
  release(lines: readonly AdmitLine[]): void;
  /** A grant is under way for these lines: settles when it is answered (the next block is sized for those who wait). */
  granting(lines: readonly AdmitLine[]): Promise<void> | undefined;
  /** Marks the grant under way (until `done`). */
  start(request: GrantRequest, done: Promise<unknown>): void;
  granted(request: GrantRequest, answer: GrantAnswer): void;
  /** A grant was refused (a limit too near for its block): sizes the next to fit, and says whether one is worth asking for now. */
  refused(request: GrantRequest, refusal: GrantRefusal): boolean;
  /** Settlements and counts this process sent (in settlement batch number `batch`): what they change in the counters allowances read. */
  track(changes: readonly Adjustment[], batch: number): void;
  /**
   * What this process's allowances counted in the counter and did not use (credit:
   * reserved and not drawn), as a read at `at` sees it (a window's block counts from its grant).
   */
  unused(counter: Counter, at: number, period?: string): number;
  /** Ends the allowances past their end at `at`; says whether any gave something back. */
  expire(at: number): boolean;
  /** Ends the allowances holding a block of a counter the predicate picks. */
  end(which: (counter: Counter) => boolean): void;
  endAll(): void;
  /** Asks for no more grants; settles once those under way were answered. */
  stopGranting(): Promise<void>;
  stop(): void;
  /** Allowances granted and calls admitted against them since the start (for tests and the benchmark's census). */
  readonly counted: { granted: number; drawn: number };
}

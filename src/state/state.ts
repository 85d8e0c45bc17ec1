import type { Expiring } from "./expiring-credit.ts";

/**
 * The state every call counts against, behind one interface: rate windows, business-day
 * and month totals, reservations of calls in flight, credit, switch-over, pending
 * sign-ups and one-time claims. Values go in and come out (no live objects to mutate),
 * every operation may fail and may be asynchronous, so the same domain code runs on
 * the in-process implementation (`memory.ts`, the embedded default) and on a shared one
 * (Redis, for several instances). `test/unit/state-contract.test.ts` states the
 * semantics every implementation must have.
 */

/** What a period total counts: see `metering/quotas` in docs/architecture.md. */
export type Measure = "requests" | "tokens" | "cost" | "spent";

/**
 * Where a period total starts when the state holds none for its period (a new day, a
 * restart, an evicted key): the daily rollups, summed for an account (and model), for a
 * model across the accounts of a tenant, or over a subtree.
 */
export type PeriodSeed =
  | { measure: Measure; accountId: number; model?: string }
  | { measure: Measure; model: string; tenantRoot?: number }
  | { measure: Measure; subtreePath: string };

/**
 * A counter, named by a key that is the same in every process. Counter objects are
 * values: made once and reused, they let an implementation find its cell without
 * building strings on the request path (`memory.ts` remembers them by identity).
 */
export type Counter =
  /** A sliding window: the sum of what was added over the last `windowMs`. */
  | { readonly kind: "window"; readonly key: string; readonly windowMs: number; readonly lane?: WindowLane }
  /** A total per period (`YYYY-MM-DD` or `YYYY-MM`), seeded from the rollups when new. */
  | { readonly kind: "period"; readonly key: string; readonly seed: PeriodSeed }
  /** A level that goes up and down and never below 0: what calls in flight hold. */
  | { readonly kind: "gauge"; readonly key: string }
  /** An account's spendable credit: its balance less unwritten charges and reservations. */
  | { readonly kind: "credit"; readonly accountId: number };

/**
 * Two windows of the same length that are always counted together (a subject's calls and
 * its tokens) may share where a State stores them: `key` names the pair (a key of the
 * window namespace, so no window of its own may use it) and `index` the window's place in
 * it. Each window of a pair still counts on its own; the Redis State then reads and
 * writes one string for both in a script instead of two.
 */
export interface WindowLane {
  readonly key: string;
  readonly index: 0 | 1;
}

export type WindowCounter = Extract<Counter, { kind: "window" }>;
export type PeriodCounter = Extract<Counter, { kind: "period" }>;
export type GaugeCounter = Extract<Counter, { kind: "gauge" }>;
export type CreditCounter = Extract<Counter, { kind: "credit" }>;

/** One counter an admission checks and counts in. */
export interface AdmitLine {
  counter: Counter;
  /** The period a `period` counter is read and counted in. */
  period?: string;
  /**
   * Refuse when the counter already reaches this: the window's sum, the period's
   * total, the gauge's value ≥ limit; for credit, when no more than `limit` is
   * available (0: refused once nothing is left). Absent: counted, not checked.
   */
  limit?: number;
  /** Added when the call is admitted (credit: reserved). */
  add: number;
  /** A gauge whose value is part of this counter's (reservations in flight), reported on a refusal. */
  held?: GaugeCounter;
  /**
   * A limited window or period total the caller wants to hear about once admitted (the
   * rate-limit headers): the admission reports, per kind, the line with the least remaining.
   */
  report?: LimitKind;
}

/** What a reported limit counts: calls, or tokens. */
export type LimitKind = "requests" | "tokens";

/** A reported limit as the admission left it, this call counted. */
export interface LimitStanding {
  /** Index of the line in the admission's lines. */
  line: number;
  /** The line's limit less its counter's value once this call was added (never below 0). */
  remaining: number;
  /**
   * Windows: milliseconds until the oldest amount counted in the window slides out of it
   * (remaining grows again then). Undefined for period totals: their period's end is the caller's to know.
   */
  resetMs?: number;
}

/** Per kind, the reported line with the least remaining (the first of equals); absent when no line is reported. */
export interface Standings {
  requests?: LimitStanding;
  tokens?: LimitStanding;
}

/** A line whose limit was reached: its index, value, held gauge and wait. */
export interface ReachedLine {
  /** Index of the line in the admission's lines. */
  line: number;
  used: number;
  held: number;
  retryAfterMs: number;
}

/** Why an admission was refused: the first line whose limit was reached. */
export interface Refusal {
  /** Index of the line in the admission's lines. */
  line: number;
  /** The counter's value (credit: what is available). */
  used: number;
  /** The `held` gauge's value (credit: what reservations hold). */
  held: number;
  /** Windows: milliseconds until the sum drops below the limit as old events slide out. */
  retryAfterMs: number;
  /**
   * The other lines reached too, in line order (absent when none): a refusal names the
   * longest wait of them all, or a client waiting the first line's would be refused again.
   */
  also?: ReachedLine[];
}

export type Verdict = { admitted: true; standings?: Standings } | { admitted: false; refusal: Refusal };

/** One change made when a call settles or a count is corrected. */
export type Adjustment =
  /** Added to a window at `at` (a reservation is corrected where it was made). */
  | { counter: WindowCounter; at: number; delta: number }
  /** Added to a period's total; a period older than the one the counter holds is ignored. */
  | { counter: PeriodCounter; period: string; delta: number }
  /** Added to a gauge, never taking it below 0. */
  | { counter: GaugeCounter; delta: number }
  /** Ends a credit reservation and charges the actual cost in its place. */
  | { counter: CreditCounter; release: number; charge: number };

export interface CountState {
  /**
   * Atomically: when no line's limit is reached, adds every line's amount and admits
   * (with the standings of the lines marked `report` that have a limit, read in the same
   * step); else changes nothing and says which line refused (the first, in order).
   * A shared State may count the amounts of lines that check nothing a moment after it
   * admits (with the settlements it gathers): its own reads and the first check of such a
   * counter include them, other instances see them a few milliseconds later.
   */
  admit(lines: readonly AdmitLine[], now: number): Promise<Verdict>;
  /** Applies changes (settlement, corrections, events counted without a check). */
  adjust(changes: readonly Adjustment[]): Promise<void>;
  /** A counter's value now (`period` for period counters). */
  read(counter: Counter, now: number, period?: string): Promise<number>;
  /** Empties a window or gauge. */
  clear(counter: WindowCounter | GaugeCounter): Promise<void>;
}

/** Credit outside admission: the ledger changed, charges were written, an account was deleted. */
export interface CreditState {
  /** Re-reads the account's balance from the ledger (credit granted, deducted or returned). */
  invalidate(accountId: number): Promise<void>;
  /**
   * Charges reached the ledger (nano-credits per account) at ledger `version`: they stop
   * counting as unwritten, and a balance read before that version loses them; one read at
   * that version or later holds them already and keeps its value. Without a version (the
   * writer cannot say: rows found stored already, rows written one at a time, charges
   * that never reach the ledger) the balances are read again on their next use.
   */
  flushed(charged: ReadonlyMap<number, number>, version?: number): Promise<void>;
  /** What the account's calls hold back from its ledger balance: reservations in flight and unwritten charges. */
  held(accountId: number): Promise<number>;
  /**
   * The account was deleted: `settled` runs once nothing is held any more (at once when
   * nothing is), so what is left can go to its parent after its last call's charge is written.
   */
  retire(accountId: number, settled: () => void): Promise<void>;
}

/** A Level's switch-over state (spec 3, 8). */
export interface LevelStatus {
  /** When traffic went to the backup; null while the Level serves its own calls. */
  switchedAt: number | null;
  lastErrorAt: number | null;
  /** A probe call is testing the switched Level now. */
  probing: boolean;
}

/** Switch-over state per tenant and Level; the rules live in `routing/switch-over.ts`. */
export interface LevelState {
  status(tenantId: number, level: number): Promise<LevelStatus>;
  /** Counts an error; switches when the window's errors pass `threshold`. Returns the status after. */
  recordError(tenantId: number, level: number, now: number, threshold: number, windowMs: number): Promise<LevelStatus>;
  /** Claims the Level's single probe when it is switched, not probing and quiet since `quietSince`. */
  claimProbe(tenantId: number, level: number, quietSince: number): Promise<boolean>;
  /** Back to the Level's own keys (a probe succeeded, or a success while not switched); a probe's success also forgets its errors. */
  recover(tenantId: number, level: number, probe: boolean): Promise<void>;
  /** Ends a probe that got no verdict. */
  abandonProbe(tenantId: number, level: number): Promise<void>;
}

/**
 * Why a key sleeps. `manual` and `auth` last until woken; `errors` ends after its
 * cool-down; `address` (its URL reaches an address the upstream policy refuses) lasts
 * until woken or until its URL is changed.
 */
export type SleepReason = "manual" | "auth" | "errors" | "address";

/** A provider key's sleep: stored with the key, so a restart keeps it. */
export interface KeySleep {
  sleeping: boolean;
  reason: SleepReason | null;
  /** End of an automatic sleep (ms); null when the sleep lasts until woken. */
  until: number | null;
  /** Consecutive automatic sleeps: the cool-down doubles with each. */
  count: number;
}

/** A provider key's health now, as every instance sees it. */
export interface KeyHealth extends KeySleep {
  /** Calls using the key now. */
  inFlight: number;
  /** Consecutive retryable failures since the last success. */
  failures: number;
  /** The single probe after a cool-down is under way. */
  probing: boolean;
}

/** A key as the State is told of it: its id and its sleep as stored (where the State starts when it holds none). */
export interface KeyRef {
  readonly id: number;
  readonly stored: KeySleep;
}

/** What one upstream attempt said about the key that served it. */
export type KeyVerdict =
  | { kind: "success" }
  /** 401/403 from the upstream: the credential itself is bad. */
  | { kind: "credential" }
  /** 429, 5xx, network error or timeout: maybe temporary. */
  | { kind: "retryable"; retryAfterMs?: number };

/** Provider keys' health, sleep and calls in flight, per tenant; the rules live in `state/key-health.ts`. */
export interface KeyState {
  /** The keys' health, in the order asked. */
  health(tenantId: number, keys: readonly KeyRef[]): Promise<KeyHealth[]>;
  /**
   * Counts a call on the key; with `probe`, also claims the key's single probe, and
   * then answers false (counting nothing) when another call holds it.
   */
  take(tenantId: number, key: KeyRef, probe: boolean): Promise<boolean>;
  /** A call on the key ended: one fewer in flight (never below 0), and no probe out. */
  release(tenantId: number, keyId: number): Promise<void>;
  /** Applies an attempt's verdict by the health rules; returns the key's new sleep when it changed (to be stored). */
  record(tenantId: number, key: KeyRef & { readonly noSleep: boolean }, verdict: KeyVerdict, now: number): Promise<KeySleep | undefined>;
  /** Puts the key to sleep or wakes it (an owner's sleep/wake, a refused address); its failures are forgotten. */
  setSleep(tenantId: number, key: KeyRef, sleep: KeySleep): Promise<void>;
}

/** Entries that expire (pending sign-ups), by an opaque key. */
export interface PendingState<T> {
  put(key: string, value: T, ttlMs: number, now: number): Promise<void>;
  /** Removes and returns the entry when it has not expired: each entry is taken once. */
  take(key: string, now: number): Promise<T | undefined>;
}

/** One-time claims (a soft-limit mail per account and month): only the first claimant wins until released. */
export interface ClaimState {
  claim(key: string, ttlMs: number, now: number): Promise<boolean>;
  release(key: string): Promise<void>;
}

export interface State {
  readonly counts: CountState;
  readonly credit: CreditState;
  readonly levels: LevelState;
  readonly keys: KeyState;
  readonly signups: PendingState<{ email: string; name?: string }>;
  readonly claims: ClaimState;
}

/** What a State reads from the store when it holds nothing yet (both implementations take these). */
export interface StateLoaders {
  /** A period total from the daily rollups. */
  seed(seed: PeriodSeed, period: string): number | Promise<number>;
  /** An account's ledger balance now, and when it goes stale (its earliest grant expiry; Infinity when none). */
  balance(accountId: number, now: number): LoadedBalance | Promise<LoadedBalance>;
}

/** A balance as the ledger was read. */
export interface LoadedBalance {
  balance: number;
  staleAt: number;
  /** The ledger's version the read saw (see `CreditState.flushed`). */
  version?: number;
  /** The grants with an expiry and credit left, soonest first (what `staleAt` is the first of). */
  expiring?: Expiring;
}

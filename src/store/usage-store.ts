/**
 * The usage rows' side of the store seam (store.ts re-exports it): the repository of
 * usage rows and daily rollups, what tells one row from another, the notes of Redis
 * claims, and the writer of usage batches off the serving thread.
 */
import type { NewKeyHealthRow } from "./schema/key-health.ts";
import type { NewUsageEventRow, UsageEventRow } from "./schema/usage.ts";

/** Summed counters of daily rollups (tokens as in `Usage`; cost in nano-credits). */
export interface UsageSums {
  requests: number;
  prompt: number;
  completion: number;
  reasoning: number;
  cacheRead: number;
  cacheWrite: number;
  costNanos: number;
}

/** One rollup row: an account's totals for one business date and effective model. */
export type RollupRow = UsageSums & { accountId: number; day: string; model: string };

/**
 * Whose usage a report reads: one account, or the accounts under a path (the account
 * owning the path itself included or not). Deleted accounts keep their row and path.
 */
export type Audience = { accountId: number } | { path: string; includeRoot: boolean };

export interface DayRange {
  start: string;
  end: string;
}

/** What a period total sums, over whom (see metering/quotas.ts). */
export type PeriodTotalOf =
  | { measure: "requests" | "tokens" | "cost" | "spent"; subtreePath: string }
  | { measure: "requests" | "tokens" | "cost" | "spent"; accountId?: number; model?: string; tenantRoot?: number };

export interface UsageStore {
  /**
   * Writes the call rows not stored already and resolves with those it wrote. A row is
   * known by `usageRowIdentity` (a unique index), so two writers of one call store it
   * once, whatever their order; a row repeated in `rows` is written once. The rows'
   * rollups go apart (`addRollups`), summed from the rows written.
   */
  insert(rows: readonly NewUsageEventRow[]): Promise<NewUsageEventRow[]>;
  /** Adds rollups (`requests` calls per account, day and model) to the daily totals. */
  addRollups(rollups: Iterable<RollupRow>): Promise<void>;
  /** A total over a business day (`YYYY-MM-DD`) or month (`YYYY-MM`). */
  periodTotal(of: PeriodTotalOf, period: string): Promise<number>;
  /** Rollup rows of an audience over a range, unaggregated. */
  rollups(audience: Audience, range: DayRange): Promise<RollupRow[]>;
  /** Totals per effective model over the range. */
  sumsByModel(audience: Audience, range: DayRange): Promise<Array<UsageSums & { model: string }>>;
  /** Call rows in the order they were stored, after `afterId`, at most `limit`. */
  events(afterId: number, limit: number): Promise<UsageEventRow[]>;
  /** The newest usage row's id (0 when none): the ledger's version after a usage write (see `CreditStore.ledgerBalance`). */
  latestId(): Promise<number>;
  /** Notes, in a claim's write, what it released (`usage_claim_writes`), and drops the notes of `forget` (claims cleared since). */
  recordClaim(claim: string, written: ClaimWritten, now: number, forget?: readonly string[]): Promise<void>;
  /** What an earlier write of a claim released, when that write committed. */
  claimWritten(claim: string): Promise<ClaimWritten | undefined>;
  /** Drops the notes of claims cleared from Redis, and any made before `before` (ms), with the marks of copies written before it. */
  forgetClaims(claims: readonly string[], before: number): Promise<void>;
  /** Marks rows just written as copies, written by `writer` at `now` (`usage_copies`): in the transaction that wrote them. */
  markCopies(rows: readonly NewUsageEventRow[], writer: string, now: number): Promise<void>;
  /** Which of `rows` were written as copies: their identities, each with its copy's writer. */
  copyWriters(rows: readonly NewUsageEventRow[]): Promise<Map<string, string>>;
}

/** What a claim's write released: charges per account, and the ledger's version when one write made them all. */
export interface ClaimWritten {
  charged: ReadonlyMap<number, number>;
  version: number | undefined;
}

/** A claim's charges as stored (JSON pairs), and back. */
export const claimChargesText = (charged: ReadonlyMap<number, number>) => JSON.stringify([...charged]);
export const claimChargesOf = (text: string): Map<number, number> => new Map((JSON.parse(text) as Array<[number, number]>).map(([account, amount]) => [Number(account), Number(amount)]));

/** What tells one usage row from another: a request may leave several (attempts), never two alike. */
export function usageRowIdentity(row: Pick<NewUsageEventRow, "requestId" | "createdAt" | "endpoint" | "status">): string {
  return identityOf(row.requestId, row.createdAt, row.endpoint, row.status);
}

const identityOf = (requestId: unknown, createdAt: unknown, endpoint: unknown, status: unknown) => `${requestId}\u0000${Number(createdAt)}\u0000${endpoint}\u0000${Number(status)}`;

/** The columns an insert of usage rows returns for each row it wrote, in this order (see `rowsWritten`). */
export const USAGE_IDENTITY_COLUMNS = "request_id, created_at, endpoint, status";

/** Which of `rows` an insert wrote, from what it returned (`USAGE_IDENTITY_COLUMNS` of each row, as arrays); a row repeated in `rows` counts once. */
export function rowsWritten(rows: readonly NewUsageEventRow[], returned: ReadonlyArray<readonly unknown[]>): NewUsageEventRow[] {
  // As many written as given: every row was (the common case, with nothing to look up).
  if (returned.length === rows.length) return rows.slice();
  const written = new Set(returned.map(([requestId, createdAt, endpoint, status]) => identityOf(requestId, createdAt, endpoint, status)));
  return rows.filter((row) => written.delete(usageRowIdentity(row)));
}

/**
 * Writes usage batches on a connection of its own: in one transaction, the rows (each
 * once: a row whose identity is stored already is not written again), the daily rollups
 * and the credit charges of the rows it wrote, and the keys' health figures, as the
 * usage writer's own transaction does (src/metering/usage-writer.ts).
 */
export interface UsageBatchWriter {
  /**
   * Resolves with the rows written and the newest usage row's id after the commit. Rejects
   * with the database's error (its `code` kept) once rolled back, or with `outcomeUnknown`
   * set when the writer went away without answering (the batch may have committed).
   */
  write(rows: readonly NewUsageEventRow[], health: readonly NewKeyHealthRow[], now: number): Promise<{ fresh: NewUsageEventRow[]; latest: number }>;
}

import type { Clock } from "../core/clock.ts";
import { causeMessage } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { usageRowIdentity, type ClaimWritten, type NewKeyHealthRow, type NewUsageEventRow, type Store } from "../store/store.ts";
import { chargesOf, dailyRollups } from "./usage-batch.ts";

/**
 * A write that stopped part of the way through rows written one at a time (the database
 * went away): `charged` is what the rows written so far charged, `remaining` the rows
 * not written yet.
 */
export class PartlyWritten extends Error {
  constructor(
    readonly charged: Map<number, number>,
    readonly remaining: NewUsageEventRow[],
    override readonly cause: unknown,
    /** What the rows set aside so far would have charged (see `Written`). */
    readonly setAside: Map<number, number> = new Map(),
  ) {
    super((cause as Error)?.message ?? String(cause));
  }
}

/** What a write charged, and what the rows it set aside would have charged (they never will: their charges stop counting as unwritten). */
export interface Written {
  charged: Map<number, number>;
  setAside: Map<number, number>;
  /**
   * The ledger's version once the charges were made (`CreditState.flushed`), when one
   * transaction made all of them; undefined when some were made before (rows found
   * stored already) or in several transactions.
   */
  version?: number;
}

/**
 * Rows sent again after the durable buffer lost its data (a Redis restart): their charges
 * went with it, so written now they release nothing; their write still tells the State
 * the ledger changed (a zero charge for the account, announced without a version: the
 * balance is read again).
 */
const unheldRows = new WeakSet<NewUsageEventRow>();

/**
 * Copies another process may have stored itself (a commit whose answer was lost, before
 * it stopped and handed them back), with that process's id: found stored under its mark,
 * nobody released their charge, and whoever writes them now does.
 */
const storedByRows = new WeakMap<NewUsageEventRow, string>();

/**
 * A claim's rows as the writer takes them: their flags taken off, the copies among them,
 * those whose charge is not held and those another process may have stored marked, and
 * whether the batch is checked (one of its rows may be stored already).
 */
export function claimedRows(claimed: ReadonlyArray<NewUsageEventRow & { retried?: boolean; copy?: boolean; unheld?: boolean; storedBy?: string }>) {
  const copies = new Set<NewUsageEventRow>();
  const rows = claimed.map(({ retried: _retried, copy, unheld, storedBy, ...row }) => {
    if (copy) copies.add(row);
    if (unheld) unheldRows.add(row);
    if (storedBy !== undefined) storedByRows.set(row, storedBy);
    return row;
  });
  return { rows, copies, check: claimed.some((row) => row.retried) };
}

/**
 * A claim of usage rows from Redis being written: its id, whether it was made before (a
 * write of it may have committed), and, for the note of a claim written one row at a
 * time, the rows those writes released.
 */
interface ClaimOfRows {
  id: string;
  retry: boolean;
  released?: readonly NewUsageEventRow[];
}

/** Notes of claims whose clearing from Redis was never seen go after this long (a week), looked for every ten minutes. */
const CLAIM_NOTE_MS = 7 * 86_400_000;
const CLAIM_PRUNE_MS = 600_000;

/**
 * Writes batches of usage rows: each batch's rows, their daily rollups, the credit they
 * charge and the keys' health figures, in one transaction. A batch the database refuses
 * for one of its values (`store.refusedRow`: a number out of range, a character it cannot
 * hold) is written again one row at a time, and the row it refuses is set aside with an
 * error in the log: retried whole, such a batch would fail on every tick until the
 * backlog bound refused every model call (a tenant's own pricing or upstream can produce
 * such a value).
 */
export function createUsageWriter(deps: { store: Store; clock: Clock; log: Logger }) {
  /**
   * Rows a failed write of this process had inserted (a commit whose answer was lost may
   * have kept them), by identity, with when. Found stored by a later write, such a row
   * is this process's own and nobody released its charge: it is released then, a copy too.
   */
  const ownUnsure = new Map<string, number>();
  /** This process, as the writer of the copies it marks (`usage_copies`). */
  const self = crypto.randomUUID();
  /** Forgets what no retry came back for (the batch was taken over, or Redis lost it). */
  const OWN_UNSURE_MS = 600_000;

  /** Notes of claims cleared from Redis, dropped by the next write (`usage_claim_writes`). */
  let forgetting: string[] = [];
  /** When notes older than CLAIM_NOTE_MS were last dropped (0: not yet since start). */
  let prunedAt = 0;
  /** Claims a write of which failed once all its statements ran: its commit may have happened. */
  const mayHaveCommitted = new Set<string>();

  /** Whether a write at `now` also removes old claim notes (then it stays on the serving thread). */
  const pruneDue = (now: number) => now - prunedAt > CLAIM_PRUNE_MS;
  /**
   * Where a batch without a claim's note is written at `now`: off the serving thread when
   * the store writes batches there (Store.usageBatches), unless it also forgets cleared
   * claims or prunes old notes, which the store's own transaction does.
   */
  const plainBatches = (now: number) => (forgetting.length > 0 || pruneDue(now) ? undefined : deps.store.usageBatches());
  /**
   * Writes the rows in one transaction; resolves with the rows whose charge is no longer
   * held (see `settled`), or, for a claim an earlier write of which committed, with what
   * that write released (`replayed`: nothing is written again).
   */
  const transaction = (rows: NewUsageEventRow[], healthRows: readonly NewKeyHealthRow[], check: boolean, now: number, copies?: ReadonlySet<NewUsageEventRow>, claim?: ClaimOfRows) => {
    let inserted: readonly NewUsageEventRow[] = [];
    let ran = false;
    const own = new Set<string>();
    const forgotten = forgetting;
    const prune = pruneDue(now);
    /**
     * Which rows stop being held, once `fresh` of `rows` were written (and `own` names this
     * process's own unsure ones found stored); `writers` names, in a checked write, the
     * stored ones written as copies, with who wrote each.
     */
    const releasedOf = (fresh: readonly NewUsageEventRow[], writers?: ReadonlyMap<string, string>): NewUsageEventRow[] => {
      // Every row written (the common case, unchecked): each releases its own charge.
      if (fresh.length === rows.length && !check) return fresh.slice();
      const written = new Set(fresh.map(usageRowIdentity));
      const stored = new Set<string>();
      for (const row of rows) {
        const identity = usageRowIdentity(row);
        if (written.has(identity)) continue;
        stored.add(identity);
        if (ownUnsure.has(identity)) own.add(identity);
      }
      if (fresh.length < rows.length) deps.log.info("usage rows already written are not written again", { rows: rows.length - fresh.length });
      // Unchecked (a first claim of rows just settled), a row found stored was written by
      // the instance whose append lost its answer, which released its charge. Checked, it
      // may be a dead writer's, which did not: its charge is released here (`settled`).
      return check ? settled(rows, stored, { copies, writers, self }).released : fresh.concat(rows.filter((row) => own.has(usageRowIdentity(row))));
    };
    /** The rows of `rows` not among `fresh` (found stored). */
    const storedOf = (fresh: readonly NewUsageEventRow[]) => {
      const written = new Set(fresh);
      return rows.filter((row) => !written.has(row));
    };
    // A checked write reads and writes the marks of copies in its own transaction: never elsewhere.
    const elsewhere = claim || check ? undefined : plainBatches(now);
    // Tried once per period, whether or not this write commits: a prune runs on the
    // serving thread, and one retried on every tick while the database refused writes
    // (SQLite's file locked by another process) held that thread for the lock each time.
    if (prune) prunedAt = now;
    const written = elsewhere
      ? elsewhere.write(rows, healthRows, now).then(
          ({ fresh, latest }): { released: NewUsageEventRow[]; version: number | undefined; replayed?: ClaimWritten } => {
            inserted = fresh;
            const released = releasedOf(fresh);
            return { released, version: fresh.length > 0 && released.length === fresh.length ? latest : undefined };
          },
          (error: unknown) => {
            // Gone without an answer, the writer may have committed every row: a later write that finds them stored knows they are this process's.
            if ((error as { outcomeUnknown?: unknown } | null)?.outcomeUnknown === true) inserted = rows;
            throw error;
          },
        )
      : deps.store.transaction(async (tx): Promise<{ released: NewUsageEventRow[]; version: number | undefined; replayed?: ClaimWritten }> => {
          // Claims cleared since go with this write: in its claim's note's statement, or on their own.
          const replayed = claim?.retry ? await tx.usage.claimWritten(claim.id) : undefined;
          if (prune || (forgotten.length > 0 && (!claim || replayed))) await tx.usage.forgetClaims(forgotten, prune ? now - CLAIM_NOTE_MS : 0);
          if (replayed) {
            if (healthRows.length > 0) await tx.keyHealth.add(healthRows);
            return { released: [], version: replayed.version, replayed };
          }
          // The database writes each row once (its identity is a unique key), whoever else writes it, in any order.
          const fresh = await tx.usage.insert(rows);
          inserted = fresh;
          let writers: Map<string, string> | undefined;
          if (check) {
            // Copies written now are marked, and those found stored are told apart (`settled`).
            const freshCopies = copies && copies.size > 0 ? fresh.filter((row) => copies.has(row)) : [];
            if (freshCopies.length > 0) await tx.usage.markCopies(freshCopies, self, now);
            if (fresh.length < rows.length) writers = await tx.usage.copyWriters(storedOf(fresh));
          }
          const released = releasedOf(fresh, writers);
          await tx.usage.addRollups(dailyRollups(fresh).values());
          for (const [accountId, amount] of chargesOf(fresh)) await tx.credit.consume(accountId, amount, now);
          if (healthRows.length > 0) await tx.keyHealth.add(healthRows);
          // The rows' ids are given out one transaction at a time: the newest is this write's version.
          const version = fresh.length > 0 && released.length === fresh.length ? await tx.usage.latestId() : undefined;
          if (claim) await tx.usage.recordClaim(claim.id, claim.released ? { charged: chargesOf(claim.released), version: undefined } : { charged: chargesOf(released), version }, now, prune ? [] : forgotten);
          ran = true;
          return { released, version };
        });
    return written
      .then(
        (result) => {
          if (claim) mayHaveCommitted.delete(claim.id);
          if (forgotten.length > 0) forgetting = forgetting.filter((id) => !forgotten.includes(id));
          for (const identity of own) ownUnsure.delete(identity);
          // Rows written now were not stored by the failed write: nothing is left unsure of them.
          if (ownUnsure.size > 0) for (const row of inserted) ownUnsure.delete(usageRowIdentity(row));
          return result;
        },
        (error: unknown) => {
          // A claim's write that failed is retried as that claim, and finds its note if it committed.
          if (claim) {
            if (ran) mayHaveCommitted.add(claim.id);
            throw error;
          }
          const at = Date.now();
          for (const [identity, since] of ownUnsure) if (at - since > OWN_UNSURE_MS) ownUnsure.delete(identity);
          for (const row of inserted) ownUnsure.set(usageRowIdentity(row), at);
          throw error;
        },
      );
  };

  /**
   * Whether the database has taken usage rows since this process started: a row it
   * refuses is set aside only then (or when others of its batch go in), so that a fault of
   * our own statements, refusing every row, stops the writes as before instead of
   * setting every call aside.
   */
  let proven = false;

  /**
   * Rows a write one row at a time committed before it stopped: a retry of its claim
   * finds them stored, and must release them, copies too (nobody else did: the partial
   * write's charges were not announced, its claim staying to be written again).
   */
  const ownWritten = (rows: readonly NewUsageEventRow[]) => {
    const at = Date.now();
    for (const row of rows) ownUnsure.set(usageRowIdentity(row), at);
  };

  /** The rows one at a time, then the health figures. */
  const writeApart = async (rows: NewUsageEventRow[], healthRows: readonly NewKeyHealthRow[], check: boolean, now: number, copies?: ReadonlySet<NewUsageEventRow>, claim?: ClaimOfRows): Promise<Written> => {
    const written: NewUsageEventRow[] = [];
    const refused: Array<{ row: NewUsageEventRow; error: unknown }> = [];
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      try {
        written.push(...(await transaction([row], [], check, now, copies)).released);
        proven = true;
      } catch (error) {
        if (!deps.store.refusedRow(error)) {
          ownWritten(written);
          throw new PartlyWritten(chargesOf(written), [...refused.map((r) => r.row), ...rows.slice(i)], error);
        }
        refused.push({ row, error });
      }
    }
    // Nothing taken in this pass nor ever before: the fault may be ours; the rows wait.
    if (refused.length > 0 && !proven) throw refused[0]!.error;
    const setAside = refused.map(({ row, error }) => {
      deps.log.error("a usage row the database refuses is set aside: it is not billed", {
        req: row.requestId,
        account: row.accountId,
        model: row.effectiveModel ?? row.requestedModel ?? "",
        cost: row.costNanos ?? 0,
        error: causeMessage(error),
      });
      return row;
    });
    // A claim's note goes with the health figures: what its rows released, one at a time.
    if (healthRows.length > 0 || claim) {
      try {
        await transaction([], healthRows, false, now, undefined, claim && { id: claim.id, retry: false, released: written });
      } catch (error) {
        if (!deps.store.refusedRow(error)) {
          ownWritten(written);
          throw new PartlyWritten(chargesOf(written), [], error, chargesOf(setAside));
        }
        deps.log.error("keys' health figures the database refuses are set aside", { keys: healthRows.length, error: causeMessage(error) });
      }
    }
    return { charged: chargesOf(written), setAside: chargesOf(setAside) };
  };

  return {
    /**
     * Writes `rows` (with `check`, skipping those stored already and repeats within the
     * batch) and the health figures; resolves with what the rows charged, whoever wrote
     * them (a `copies` row only when it was written itself), and what the rows set aside would have.
     * Throws the database's error when nothing was written, PartlyWritten when some was.
     */
    async write(rows: NewUsageEventRow[], healthRows: readonly NewKeyHealthRow[], check: boolean, copies?: ReadonlySet<NewUsageEventRow>, claim?: { id: string; retry: boolean }): Promise<Written> {
      const now = deps.clock.now();
      try {
        const { released, version, replayed } = await transaction(rows, healthRows, check, now, copies, claim);
        if (replayed) {
          deps.log.info("a claim of usage rows written before without its answer arriving is not written again", { claim: claim?.id ?? "", rows: rows.length });
          return { charged: new Map(replayed.charged), setAside: new Map(), version: replayed.version };
        }
        if (rows.length > 0) proven = true;
        const charged = chargesOf(released);
        for (const row of rows) if (unheldRows.has(row) && !charged.has(row.accountId)) charged.set(row.accountId, 0);
        return { charged, setAside: new Map(), version };
      } catch (error) {
        if (!deps.store.refusedRow(error)) throw error;
      }
      // Written one row at a time, the rows' transactions note nothing; the last one notes the claim.
      return writeApart(rows, healthRows, check, now, copies, claim);
    },
    /**
     * Whether the next plain batch (no claim's note) is written on another thread
     * (Store.usageBatches; not the one that prunes old claim notes, every ten minutes):
     * the serving thread then only posts it, and a tick's rows need not be cut into slices.
     */
    offThread: (): boolean => plainBatches(deps.clock.now()) !== undefined,
    /** A claim cleared from Redis: its note goes with the next write. */
    forget(claim: string): void {
      mayHaveCommitted.delete(claim);
      forgetting.push(claim);
    },
    /**
     * Whether a write of the claim may have committed without its answer arriving: handed
     * back to the queue its rows would lose the claim's note, so it is left to be taken over.
     */
    mayHaveCommitted: (claim: string): boolean => mayHaveCommitted.has(claim),
    /** Whether a failed write of this process inserted the row (its commit's answer may have been lost). */
    mayHaveStored: (row: NewUsageEventRow): boolean => ownUnsure.has(usageRowIdentity(row)),
    /** This process's id as the writer of the copies it marks (`usage_copies`). */
    id: self,
  };
}

/**
 * Which rows of a checked batch to write, and whose charge stops being held. A row
 * stored already is not written again; its charge was made when it was settled and is
 * in the ledger now, whoever wrote it, so it stops being held, unless someone released
 * it already: a row stored as a copy (`writers`: sent again after Redis may have lost
 * it, or written directly after its append failed) released it when it was written, and
 * a copy found stored is the row it copies' to release, unless this process (`self`)
 * wrote it itself (a commit whose answer was lost: nobody else released it), or the
 * process that handed it back as one it may have stored (`storedBy`, `claimedRows`) did. A row
 * repeated within the batch is one row: written and released once. A row whose charge
 * is not held (unheld: Redis lost it) releases nothing.
 */
export function settled(
  rows: readonly NewUsageEventRow[],
  stored: ReadonlySet<string>,
  found: { copies?: ReadonlySet<NewUsageEventRow>; writers?: ReadonlyMap<string, string>; self?: string } = {},
) {
  const fresh: NewUsageEventRow[] = [];
  const released: NewUsageEventRow[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    const identity = usageRowIdentity(row);
    if (seen.has(identity)) continue;
    seen.add(identity);
    const held = !unheldRows.has(row);
    if (!stored.has(identity)) {
      fresh.push(row);
      if (held) released.push(row);
      continue;
    }
    const writer = found.writers?.get(identity);
    const releases = found.copies?.has(row) ? writer !== undefined && writer === (storedByRows.get(row) ?? found.self) : writer === undefined;
    if (held && releases) released.push(row);
  }
  return { fresh, released };
}

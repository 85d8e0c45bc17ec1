import type { Clock } from "../core/clock.ts";
import { runQueuedAfterAnswer } from "../core/after-answer.ts";
import { causeMessage } from "../core/errors.ts";
import { outage, type Logger } from "../core/log.ts";
import type { NewUsageEventRow, Store } from "../store/store.ts";
import type { UsageRecorder } from "./usage-event.ts";
import { createRequestLogQueue, queueLogRow } from "./request-log-queue.ts";
import { KeyHealthBatch } from "./key-health.ts";
import { claimedRows, createUsageWriter, PartlyWritten, type Written } from "./usage-writer.ts";
import { handOver, handBackBeforeStop, rowsLost, type UsageBuffer } from "./usage-buffer.ts";
import type { UsageSpool } from "./usage-spool.ts";
import { chargesOf, usageRow } from "./usage-batch.ts";
import { UnsureRows } from "./unsure-rows.ts";
import { WritesUnderWay } from "./charge-writes.ts";
import { ClaimInHand } from "./claim-in-hand.ts";

export type { UsageEvent, UsageRecorder, UsageSink } from "./usage-event.ts";

/** Rows waiting for the database before model calls are refused (docs/architecture.md, "Store on PostgreSQL"). */
export const DEFAULT_BACKLOG_LIMIT = 100_000;

/** Short ticks keep each batch small, so one write never holds the event loop for long. */
const FLUSH_INTERVAL_MS = 50;
/** A write unanswered this long: its rows and those waiting behind it are kept on disk meanwhile. */
const SLOW_WRITE_MS = 1000;
const MAX_PENDING = 500;
/** Rows per transaction when a tick writes: about 0.15 ms of work each. */
const SLICE_ROWS = 64;
/** Most rows in one batch posted to the upkeep thread (about 4 ms of serializing). */
const OFF_THREAD_SLICE_ROWS = 4096;

/** Rows one drain writes at most per transaction. */
const DRAIN_ROWS = 500;

/**
 * Buffers usage rows and writes them, their daily rollups and the credit they consumed
 * in one transaction per short tick, so the database never sits between a client and
 * its response.
 *
 * Without a durable buffer, rows wait in this process, and on disk (the spool) once a write
 * of them failed: a clean shutdown flushes, a crash loses at most the last tick (50 ms).
 * With one (Redis), every settled row is appended to it at once,
 * and each tick drains a batch from it: rows survive the database being down and this
 * process dying, and any instance writes them (a batch claimed by a writer that died is
 * checked against what the database holds first, so nothing is charged twice).
 * Past `backlogLimit` rows waiting, `full()` says so and model calls are refused.
 */
export function createUsageRecorder(deps: {
  store: Store;
  clock: Clock;
  log: Logger;
  buffer?: UsageBuffer;
  backlogLimit?: number;
  /** False when the operator turned the request log off (`--request-log-days 0`): calls leave no request-log row. */
  requestLog?: boolean;
  /** Where rows the database did not take are kept on disk (one instance on PostgreSQL without Redis). */
  spool?: UsageSpool;
  /** Where this process's writes are counted while under way, for the balance loader (charge-writes.ts). */
  writes?: WritesUnderWay;
}): UsageRecorder {
  const logging = deps.requestLog ?? true;
  const buffer = deps.buffer;
  const backlogLimit = deps.backlogLimit ?? DEFAULT_BACKLOG_LIMIT;
  const spool = deps.spool;
  let pending: NewUsageEventRow[] = spool?.recovered() ?? [];
  const recoveredCharges = chargesOf(pending);
  /** Rows that may be stored already (recovered from the spool, or their write failed): their next write is checked. */
  const unsure = new UnsureRows(pending);
  /** Request-log rows, in this process only (never in the durable buffer: bills do not depend on them), appended in batches of their own. */
  const logQueue = createRequestLogQueue({
    append: (rows) => deps.store.requests.append(rows),
    refused: (error) => deps.store.refusedRow(error),
    log: deps.log,
    now: Date.now,
    limit: backlogLimit,
  });
  /** Provider keys' health figures of the settled calls, added to the store in the usage rows' transaction (in this process only, as they are). */
  const health = new KeyHealthBatch();
  let healthWrites = 0;
  /** The buffer's length at the last claim. */
  let waiting = 0;
  /** Rows other processes' claims held at the last claim (their writes may be failing too: the bound counts every instance's rows). */
  let elsewhere = 0;
  /** Appends to the buffer not answered yet. */
  const appending = new Set<Promise<void>>();
  /**
   * Rows whose append failed, sent to the buffer again as copies (Redis may hold them, the
   * answer alone lost) before anything else: here a crash would lose them. Those it still
   * refuses are written directly, checked (a claim of the original may come first).
   */
  const unappended: NewUsageEventRow[] = [];
  let reappending: Promise<void> | undefined;
  const reappend = (): Promise<void> =>
    (reappending ??= (async () => {
      const refused = await handOver(buffer!, unappended.splice(0));
      unsure.mayBeQueued(refused);
      pending.push(...refused);
    })().finally(() => (reappending = undefined)));
  const listeners: Array<(charged: ReadonlyMap<number, number>, version: number | undefined) => void> = [];

  const writer = createUsageWriter(deps);
  const setAsideListeners: Array<(charges: ReadonlyMap<number, number>) => void> = [];
  const announceSetAside = (charges: ReadonlyMap<number, number>) => {
    if (charges.size > 0) for (const listener of setAsideListeners) listener(charges);
  };
  /** The batch's rows, their daily rollups, the charges and the keys' health figures (usage-writer.ts). */
  // `claimed`: the rows stay claimed in the durable buffer when the write fails, to be written again whole.
  const write = async (rows: NewUsageEventRow[], check = false, copies?: ReadonlySet<NewUsageEventRow>, claim?: { id: string; retry: boolean }, claimed = false): Promise<Written> => {
    const healthRows = health.take();
    try {
      const written = await writer.write(rows, healthRows, check, copies, claim);
      if (healthRows.length > 0) healthWrites++;
      announceSetAside(written.setAside);
      // Every row's charge is now in the ledger, whoever wrote it: all of them stop being held.
      return written;
    } catch (error) {
      health.putBack(healthRows);
      // Rows that stay claimed are written again, and set their refused rows aside then:
      // announced now too, a set-aside charge would be released twice.
      if (error instanceof PartlyWritten && !claimed) announceSetAside(error.setAside);
      throw error;
    }
  };

  /** The write under way: a database that stops answering without failing it must not leave its rows only in memory. */
  let writingNow: { rows: readonly NewUsageEventRow[]; since: number } | undefined;
  /** Rows that are in the database now (or set aside): the spool lets go of them. */
  const doneWith = (rows: readonly NewUsageEventRow[]) => {
    unsure.done(rows);
    spool?.written(rows);
  };

  /** Writes under way until their charges are announced: balance reads wait for them. */
  const writes = deps.writes ?? new WritesUnderWay();
  /** Failed writes: logged once per outage, not on every tick. */
  const { failed, succeeded } = outage(deps.log, "error", "usage rows are written again");
  /** Failed claims from Redis, apart: logged even while the database's outage is (one Redis outage, one line). */
  const claims = outage(deps.log, "error", "usage rows waiting in Redis are claimed again");

  /**
   * Writes `rows` in one transaction, after the writes before it (so `flush` resolves
   * once everything recorded before it is stored); on failure they go back to the
   * front of the queue. Resolves whether they were written.
   */
  let writing: Promise<unknown> = Promise.resolve();
  /** The last write failed: only the ticks retry (a full batch written at once would retry in every turn). */
  let writesFailing = false;
  const writeRows = (rows: NewUsageEventRow[]): Promise<boolean> => {
    const done = writing.then(() => writes.around(async () => {
      let written: Written;
      writingNow = { rows, since: Date.now() };
      const { check, copies } = unsure.plan(rows);
      try {
        written = await write(rows, check, copies);
      } catch (error) {
        failed("usage rows could not be written; retrying on the next tick", { rows: rows.length, error: causeMessage(error) });
        writesFailing = true;
        // Rows written one at a time before the database went away are written; the others wait.
        if (error instanceof PartlyWritten) {
          // Written one at a time: no one version holds them all.
          for (const listener of listeners) listener(error.charged, undefined);
          const waiting = new Set(error.remaining);
          doneWith(rows.filter((row) => !waiting.has(row)));
        }
        const waitAgain = error instanceof PartlyWritten ? error.remaining : rows;
        // Only rows the failed write may have stored (it inserted them, or its answer was
        // lost) are checked when written again: checked writes run on the serving thread,
        // and a write that stored nothing (SQLite's file locked by another process past
        // its busy timeout) made every retry wait there for the lock, 5 s a tick, serving
        // no call while the lock was held.
        unsure.writeFailed(waitAgain.filter(writer.mayHaveStored));
        pending = waitAgain.concat(pending);
        writingNow = undefined;
        spool?.keep(pending);
        return false;
      }
      writingNow = undefined;
      writesFailing = false;
      doneWith(rows);
      succeeded();
      for (const listener of listeners) listener(written.charged, written.version);
      return true;
    }));
    writing = done;
    return done;
  };

  /** This process's claim of rows from the buffer. */
  const inHand = new ClaimInHand();
  /**
   * Claims a batch from the durable buffer and writes it, after the writes before it.
   * A batch that fails stays claimed, and the next claim retries it (checked against the
   * database then: the commit may have happened without its answer arriving).
   */
  const drainOnce = (): Promise<"more" | "drained" | "idle" | "failed"> => {
    // A claim's write and its `done` (which announces the charges) are one write under way.
    const done = writing.then(() => writes.around(async (): Promise<"more" | "drained" | "idle" | "failed"> => {
      let batch: Awaited<ReturnType<UsageBuffer["claim"]>>;
      try {
        batch = await buffer!.claim(DRAIN_ROWS);
      } catch (error) {
        claims.failed("usage rows waiting in Redis could not be claimed; retrying shortly", { error: causeMessage(error) });
        return "failed";
      }
      claims.succeeded();
      waiting = batch.waiting;
      elsewhere = batch.elsewhere ?? 0;
      inHand.took(batch);
      if (batch.rows.length === 0) return "idle";
      const { rows, check, copies } = claimedRows(batch.rows);
      let written: Written;
      try {
        written = await write(rows, check, copies, batch.claim === undefined ? undefined : { id: batch.claim, retry: batch.retry === true }, true);
      } catch (error) {
        failed("usage rows could not be written; they wait in Redis and are retried shortly", { rows: rows.length, waiting, error: causeMessage(error) });
        return "failed";
      }
      inHand.written = true;
      try {
        await buffer!.done(written.charged, written.version);
      } catch (error) {
        failed("written usage rows could not be cleared from Redis; the next claim checks them", { rows: rows.length, error: causeMessage(error) });
        return "failed";
      }
      if (batch.claim !== undefined) writer.forget(batch.claim);
      inHand.cleared();
      succeeded();
      // A backlog (a full batch claimed, or a batch's worth still waiting): claim again at
      // once. Else the next tick claims what arrived meanwhile, in one batch: claiming
      // again after every write kept Redis and this process busy with claims of a few
      // rows each under load (the scale-out profile: 40% of the JavaScript thread).
      return rows.length >= DRAIN_ROWS || waiting >= DRAIN_ROWS ? "more" : "drained";
    }));
    writing = done;
    return done;
  };
  /** After a failed drain, ticks leave the database (or Redis) alone this long. */
  const RETRY_MS = 250;
  let retryAt = 0;
  let draining = false;
  const drain = async () => {
    draining = true;
    try {
      for (;;) {
        const outcome = await drainOnce();
        if (outcome === "failed") retryAt = Date.now() + RETRY_MS;
        if (outcome !== "more") return;
        // Let requests through between two batches of a backlog.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      draining = false;
    }
  };

  /** Everything pending, now, in one transaction (shutdown, tests); resolves once stored. */
  const flush = async (): Promise<void> => {
    // Calls answered a moment ago may not be settled yet: they are, first.
    runQueuedAfterAnswer();
    await Promise.all([...appending]);
    if (unappended.length > 0) await reappend();
    const log = logQueue.flush();
    if (pending.length === 0 && health.size === 0) await writing;
    else await writeRows(pending.splice(0));
    await log;
    // The buffer, drained until empty (or while the database refuses), whoever's rows they are.
    // A dead writer's claim is not in the queue's length: claim until nothing is left at all.
    if (buffer) for (let round = 0; round < 10_000 && ["more", "drained"].includes(await drainOnce()); round++);
  };

  /**
   * The tick's write, in slices of SLICE_ROWS rows with the event loop let through between
   * them: one transaction of a tick's rows held every request behind it (0.7 ms at 6,700
   * calls a second, in the 99th percentile). A backlog goes in bigger slices, so the queue
   * cannot grow. A tick writes the rows pending when it began (`tickRows`): slices that took
   * whatever had arrived went on without end under steady traffic (on PostgreSQL at c=1,
   * 295 transactions a second of a dozen statements each).
   */
  let slicing = false;
  let tickRows = 0;
  let sliceRows = SLICE_ROWS;
  const writeSlice = (first: boolean) => {
    const take = Math.min(tickRows, pending.length);
    if (take === 0 && !(first && health.size > 0)) {
      slicing = false;
      tickRows = 0;
      return;
    }
    const size = Math.min(sliceRows, take);
    const rows = size === pending.length ? pending : pending.slice(0, size);
    pending = size === pending.length ? [] : pending.slice(size);
    tickRows -= size;
    void writeRows(rows).then((written) => {
      if (written && tickRows > 0) setImmediate(() => writeSlice(false));
      else {
        slicing = false;
        tickRows = 0;
      }
    });
  };
  /**
   * Writes the rows pending now, in slices (`slicing` is set by the caller). A full batch
   * (MAX_PENDING rows between two ticks) starts here too: when it only set `slicing`, from
   * about 10,000 calls a second on the ticks skipped their writes until calls were refused.
   */
  const startSlices = () => {
    tickRows = pending.length;
    // Written on the upkeep thread, a batch holds no request up: one transaction (and one
    // round trip) for a tick's rows, where four slices cost 4-5 µs more a call at c=32.
    // A backlog (after an outage) still goes in slices: each is serialized here at once.
    sliceRows = writer.offThread()
      ? Math.min(Math.max(1, pending.length), OFF_THREAD_SLICE_ROWS)
      : Math.max(SLICE_ROWS, Math.ceil(pending.length / 4));
    writeSlice(true);
  };
  /** A write unanswered past SLOW_WRITE_MS: its rows and those waiting behind it go on disk meanwhile. */
  const keepIfSlow = () => {
    if (spool && writingNow && Date.now() - writingNow.since > SLOW_WRITE_MS) {
      spool.keep(writingNow.rows);
      spool.keep(pending);
    }
  };
  const tick = () => {
    logQueue.appendIfDue();
    if (unappended.length > 0) void reappend();
    keepIfSlow();
    if (!slicing && (pending.length > 0 || health.size > 0)) {
      slicing = true;
      startSlices();
    }
    if (buffer && !draining && Date.now() >= retryAt) void drain();
  };
  const timer = setInterval(tick, FLUSH_INTERVAL_MS);
  timer.unref();
  const backlog = () => pending.length + unappended.length + appending.size + waiting + elsewhere + inHand.rows;
  return {
    record(event) {
      const row = usageRow(event, deps.clock.businessDate(event.at));
      // The log gives way before bills do: past the backlog bound, a call's log row is dropped.
      // A call that leaves no usage row (a token count) is logged only when it failed.
      if (event.logged && logging && (!event.notUsage || event.status >= 400)) queueLogRow(logQueue, event, event.logged, row.costNanos ?? 0);
      if (event.logged) health.addWhenRead(event.logged.trace.reading, event.logged.tenantId, row.day, event.at, event.logged.trace.attempts, row.costNanos ?? 0);
      if (event.notUsage) return;
      if (buffer) {
        // Durable once Redis holds it; when Redis refuses, it waits here and is written directly.
        const appended: Promise<void> = buffer
          .append(row)
          .catch((error: unknown) => {
            deps.log.warn("a usage row could not be put in Redis; it is sent again, or written from this process", { error: causeMessage(error) });
            unappended.push(row);
          })
          .finally(() => appending.delete(appended));
        appending.add(appended);
        return;
      }
      pending.push(row);
      // A full batch is written right after the current request's work, not inside it.
      if (pending.length >= MAX_PENDING && !slicing && !writesFailing) {
        slicing = true;
        setImmediate(startSlices);
      }
    },
    refused(row) {
      if (logging) logQueue.push(row);
    },
    flush,
    async stop() {
      clearInterval(timer);
      // A database that hangs during the stop: the last write's rows go on disk as on any tick (else killed now, they are lost).
      const keeping = spool?.keeping ? setInterval(keepIfSlow, 250) : undefined;
      await flush().finally(() => clearInterval(keeping));
      if (buffer) {
        const leave = inHand.mustLeave(writer.mayHaveCommitted);
        await handBackBeforeStop(buffer, { claimed: inHand.rows, leave, rows: pending.splice(0) }, deps.log, (row) => (writer.mayHaveStored(row) ? writer.id : undefined));
      }
      // Rows the database still refuses stay in the spool for the next start; without one they are lost, and said so.
      if (pending.length > 0 && spool?.keeping) deps.log.error("usage rows could not be written before stopping; they are kept on disk for the next start", { rows: pending.length });
      else if (pending.length > 0) deps.log.error("usage rows could not be written before stopping: they are lost", rowsLost(pending));
      spool?.close();
    },
    onSetAside(listener) {
      setAsideListeners.push(listener);
    },
    onCharged(listener) {
      listeners.push(listener);
    },
    backlog,
    onDisk: () => spool?.size ?? 0,
    recoveredCharges: () => recoveredCharges,
    full: () => backlog() >= backlogLimit,
    unsureHere: () => pending.filter(writer.mayHaveStored).length,
    halt() {
      clearInterval(timer);
    },
    keyHealthWrites: () => healthWrites,
  };
}

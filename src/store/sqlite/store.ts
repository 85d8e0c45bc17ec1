import type { Logger } from "../../core/log.ts";
import { sqliteIdempotency } from "./idempotency.ts";
import type { Repositories, RequestLogStore, Store, Transaction, UsageBatchWriter } from "../store.ts";
import { sqliteAccounts } from "./accounts.ts";
import { startCheckpointer } from "./checkpointer.ts";
import { openConnection, type Connection, type OpenOptions } from "./connection.ts";
import { sqliteCredit } from "./credit.ts";
import { sqliteProviderKeys } from "./provider-keys.ts";
import { sqliteNotices, sqliteObjects, sqliteOperations, sqliteSettings, sqliteSoftLimitMail } from "./small-stores.ts";
import { asynchronous } from "./synchronous.ts";
import { sqliteUsage } from "./usage.ts";
import { sqliteRequestLog } from "./request-log.ts";
import { startRequestLogWriter, type RequestLogWriter } from "./request-log-writer.ts";
import { startUpkeepThread } from "./upkeep-thread.ts";
import { startUsageWriter } from "./usage-write-client.ts";
import { sqliteKeyHealth } from "./key-health.ts";

/**
 * The embedded store: bun:sqlite on one connection. SQLite answers synchronously, so
 * a call outside a transaction runs at once (a call of several statements runs them
 * in a transaction of its own, or a savepoint inside the open one). A `transaction` body awaits between its calls, and other
 * requests run meanwhile: their calls wait in line until it ends, so none of them reads
 * what it has not committed yet, or writes into it.
 */
export function openSqliteStore(path: string, options: OpenOptions = {}): Store {
  const connection = openConnection(path, options);
  const { sqlite } = connection;
  /** Calls waiting for the open transaction to end; undefined when none is open. */
  let waiting: Array<() => void> | undefined;

  const now = <R>(call: () => R): Promise<R> => {
    try {
      return Promise.resolve(call());
    } catch (error) {
      return Promise.reject(error);
    }
  };
  const outside = <R>(call: () => R): Promise<R> => {
    if (waiting === undefined) return now(call);
    return new Promise<void>((resolve) => waiting!.push(resolve)).then(() => outside(call));
  };
  /** The request log's writer thread, once upkeep started it (the server): appends and prunes go there. */
  let writer: RequestLogWriter | undefined;
  /** The usage writer on the upkeep thread, once it runs (the server): usage batches go there. */
  let usageWriter: (UsageBatchWriter & { alive(): boolean }) | undefined;
  const requestsOf = (run: <R>(call: () => R) => Promise<R>): RequestLogStore => {
    const here = asynchronous(sqliteRequestLog(connection), run);
    return {
      ...here,
      append: (rows) => (writer ? writer.append(rows) : here.append(rows)),
      prune: (before) => (writer ? writer.prune(before) : here.prune(before)),
    };
  };
  const repositories = (run: <R>(call: () => R) => Promise<R>): Repositories => ({
    accounts: asynchronous(sqliteAccounts(connection), run),
    credit: asynchronous(sqliteCredit(connection), run),
    providerKeys: asynchronous(sqliteProviderKeys(connection.db), run),
    settings: asynchronous(sqliteSettings(connection), run),
    notices: asynchronous(sqliteNotices(connection.db), run),
    operations: asynchronous(sqliteOperations(connection.db), run),
    usage: asynchronous(sqliteUsage(connection), run),
    requests: requestsOf(run),
    keyHealth: asynchronous(sqliteKeyHealth(connection), run),
    objects: asynchronous(sqliteObjects(connection.db), run),
    softLimitMail: asynchronous(sqliteSoftLimitMail(connection.db), run),
    idempotency: asynchronous(sqliteIdempotency(connection.db), run),
  });
  const own = repositories(outside);
  let savepoints = 0;
  const bound: Transaction = {
    ...repositories(now),
    async savepoint(body) {
      const name = `sp${++savepoints}`;
      sqlite.run(`SAVEPOINT ${name}`);
      try {
        const result = await body();
        sqlite.run(`RELEASE ${name}`);
        return result;
      } catch (error) {
        sqlite.run(`ROLLBACK TO ${name}`);
        sqlite.run(`RELEASE ${name}`);
        throw error;
      }
    },
  };

  const transaction = async <T>(body: (tx: Transaction) => Promise<T>): Promise<T> => {
    while (waiting !== undefined) await new Promise<void>((resolve) => waiting!.push(resolve));
    waiting = [];
    try {
      // Inside the try: a BEGIN refused (another process held the write lock past
      // busy_timeout) must end the transaction like any failure. Thrown before it, it left
      // `waiting` set, and every store call after it, reads included, waited for good.
      sqlite.run("BEGIN IMMEDIATE");
      const result = await body(bound);
      sqlite.run("COMMIT");
      return result;
    } catch (error) {
      if (sqlite.inTransaction) sqlite.run("ROLLBACK");
      throw error;
    } finally {
      const next = waiting;
      waiting = undefined;
      for (const resume of next) resume();
    }
  };

  return {
    ...own,
    transaction,
    changedElsewhere: () => connection.changedElsewhere(),
    // A failed thread answers nothing more: batches are written here again.
    usageBatches: () => (usageWriter?.alive() ? usageWriter : undefined),
    // SQLite stores any number and string; a row can still miss a required value or be too big.
    refusedRow: (error) => /^SQLITE_(CONSTRAINT_NOTNULL|CONSTRAINT_CHECK|TOOBIG|MISMATCH)/.test(String((error as { code?: unknown } | null)?.code ?? "")),
    // The file is in the process: it is never "away" (a busy or full disk is a real error).
    unavailable: () => false,
    // Another process's transaction outlasted the busy timeout (SQLITE_BUSY, or a
    // SQLITE_BUSY_* variant): that process may let go in a moment.
    busy: (error) => /^SQLITE_BUSY/.test(String((error as { code?: unknown } | null)?.code ?? "")),
    startUpkeep(log: Logger) {
      // One thread for both: WAL checkpoints of this file and the request log's writes.
      const thread = startUpkeepThread();
      if (!thread) {
        log.warn("the store's upkeep thread could not start: checkpoints and request-log rows stay on the serving thread");
        return async () => {};
      }
      const checkpointer = startCheckpointer(sqlite, connection.path, log, thread.checkpoint);
      // Until the writers are up (and if they cannot start), the log's rows and the usage batches are written here.
      const inMemory = connection.path === ":memory:" || connection.path === "";
      const starting = inMemory ? Promise.resolve(undefined) : startRequestLogWriter(connection.requestLogPath, log, thread.log);
      void starting.then((started) => {
        writer = started;
      });
      const usageStarting = inMemory ? Promise.resolve(undefined) : startUsageWriter(connection.path, log, thread.usage);
      void usageStarting.then((started) => {
        usageWriter = started;
      });
      return async () => {
        const [stopping, usageStopping] = await Promise.all([starting, usageStarting]);
        writer = undefined;
        usageWriter = undefined;
        await Promise.all([checkpointer.stop(), stopping?.stop(), usageStopping?.stop()]);
        thread.terminate();
      };
    },
    close: () => connection.close(),
  };
}

export type { Connection };

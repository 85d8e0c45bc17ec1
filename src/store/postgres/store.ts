import { SQL } from "bun";
import { postgresIdempotency } from "./idempotency.ts";
import { causesOf } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import type { Repositories, Store, Transaction } from "../store.ts";
import { postgresAccounts } from "./accounts.ts";
import { postgresCredit } from "./credit.ts";
import { drizzleOver, type Db, type Scope } from "./db.ts";
import { LOCKS } from "./locks.ts";
import { migratePostgres, type AheadOfThis } from "./migrate.ts";
import { migrations } from "./migrations/index.ts";
import { postgresProviderKeys } from "./provider-keys.ts";
import { postgresNotices, postgresObjects, postgresOperations, postgresSettings, postgresSoftLimitMail } from "./small-stores.ts";
import { describeFailure } from "./url.ts";
import { postgresUsage } from "./usage.ts";
import { postgresKeyHealth } from "./key-health.ts";
import { postgresRequestLog } from "./request-log.ts";

export interface PostgresOptions {
  /** Apply pending migrations on open (default true). */
  migrate?: boolean;
  /** Connections in the pool (default 10). */
  max?: number;
  /** Hears of migrations a newer router of this generation applied (migrate.ts): served on, said in a warning. */
  onAhead?: (ahead: AheadOfThis) => void;
}

/** The pool behind each open PostgreSQL store, for helpers of this folder (the single-instance lock) only. */
const clients = new WeakMap<Store, SQL>();

/** Whether the store is a PostgreSQL store not closed yet. */
export const isOpen = (store: Store): boolean => clients.has(store);

export function clientOf(store: Store): SQL {
  const client = clients.get(store);
  if (!client) throw new Error("not a PostgreSQL store");
  return client;
}

const REPOSITORIES: { [K in keyof Repositories]: (scope: Scope) => Repositories[K] } = {
  accounts: postgresAccounts,
  credit: postgresCredit,
  providerKeys: postgresProviderKeys,
  settings: postgresSettings,
  notices: postgresNotices,
  operations: postgresOperations,
  usage: postgresUsage,
  requests: postgresRequestLog,
  keyHealth: postgresKeyHealth,
  objects: postgresObjects,
  softLimitMail: postgresSoftLimitMail,
  idempotency: postgresIdempotency,
};

/** The repositories over a scope, each made on first use: a transaction uses two or three of the eleven. */
function repositories(scope: Scope): Repositories {
  const made = {} as Repositories;
  for (const name of Object.keys(REPOSITORIES) as Array<keyof Repositories>) {
    Object.defineProperty(made, name, {
      enumerable: true,
      configurable: true,
      get() {
        const repository = REPOSITORIES[name](scope);
        Object.defineProperty(made, name, { value: repository, enumerable: true });
        return repository;
      },
    });
  }
  return made;
}

/**
 * Connects to PostgreSQL (TLS as the URL's `sslmode` asks), migrates unless told not
 * to, and returns the store. Errors name the server without the URL's password.
 */
export async function openPostgresStore(url: string, options: PostgresOptions = {}): Promise<Store> {
  const client = new SQL(url, { max: options.max ?? 10 });
  try {
    await client`SELECT 1`;
    if (options.migrate !== false) await migratePostgres(client, migrations, Date.now, options.onAhead);
  } catch (error) {
    await client.close().catch(() => {});
    throw new Error(describeFailure(error, url));
  }
  return postgresStoreOver(client);
}

/** Applies pending migrations to the database and returns their names (`router migrate --database`). */
export async function migrateDatabase(url: string): Promise<string[]> {
  const client = new SQL(url, { max: 1 });
  try {
    return await migratePostgres(client, migrations);
  } catch (error) {
    throw new Error(describeFailure(error, url));
  } finally {
    await client.close().catch(() => {});
  }
}

/**
 * The store over a pool. A call outside a transaction runs on any pooled connection (a
 * call of several statements in a transaction of its own). A `transaction` reserves
 * one connection from BEGIN to COMMIT and first takes the writer lock, so transactions
 * run one at a time across every instance on the database, as on SQLite: a body's
 * read-modify-write never interleaves with another's. Within one instance they also
 * wait in line before reserving, so waiting transactions do not hold pooled connections.
 */
export function postgresStoreOver(client: SQL): Store {
  const db = drizzleOver(client);
  const own = repositories({
    db,
    sql: client,
    atomic: (body) => client.begin((tx) => body(drizzleOver(tx), tx)) as Promise<Awaited<ReturnType<typeof body>>>,
  });
  let queue: Promise<unknown> = Promise.resolve();

  const run = async <T>(body: (tx: Transaction) => Promise<T>): Promise<T> => {
    const connection = await client.reserve();
    try {
      await connection.unsafe("BEGIN");
      try {
        await connection.unsafe("SELECT pg_advisory_xact_lock($1, $2)", [...LOCKS.writer]);
        const txDb: Db = drizzleOver(connection);
        let savepoints = 0;
        const savepoint = async <R>(inner: () => Promise<R>): Promise<R> => {
          const name = `sp${++savepoints}`;
          await connection.unsafe(`SAVEPOINT ${name}`);
          try {
            const result = await inner();
            await connection.unsafe(`RELEASE SAVEPOINT ${name}`);
            return result;
          } catch (error) {
            await connection.unsafe(`ROLLBACK TO SAVEPOINT ${name}`);
            await connection.unsafe(`RELEASE SAVEPOINT ${name}`);
            throw error;
          }
        };
        const tx: Transaction = Object.assign(repositories({ db: txDb, sql: connection, atomic: (inner) => savepoint(() => inner(txDb, connection)) }), { savepoint });
        const result = await body(tx);
        await connection.unsafe("COMMIT");
        return result;
      } catch (error) {
        await connection.unsafe("ROLLBACK").catch(() => {});
        throw error;
      }
    } finally {
      connection.release();
    }
  };

  const store: Store = Object.assign(own, {
    transaction<T>(body: (tx: Transaction) => Promise<T>): Promise<T> {
      const result = queue.then(() => run(body));
      queue = result.catch(() => {});
      return result;
    },
    // Other instances' writes reach caches through the invalidation bus, not by polling.
    changedElsewhere: () => false,
    refusedRow: (error: unknown) => refusedByPostgres(error),
    unavailable: (error: unknown) => postgresUnavailable(error),
    busy: () => false,
    // PostgreSQL does its own upkeep (autovacuum, checkpoints).
    startUpkeep: (_log: Logger) => async () => {},
    // Usage batches go over the network: the serving thread only waits for them.
    usageBatches: () => undefined,
    close() {
      // Closed for its helpers too: the single-instance lock's check must not reconnect it.
      clients.delete(store);
      void client.close().catch(() => {});
    },
  });
  clients.set(store, client);
  return store;
}

/**
 * Bun's connection errors (`ERR_POSTGRES_CONNECTION_REFUSED`, `…_CLOSED`, `…_TIMEOUT`, an
 * idle or lifetime timeout) and the SQLSTATEs of a server that cannot serve now: class 08
 * (connection exception) and 57P01-57P03 (shutting down, starting up).
 */
function postgresUnavailable(error: unknown): boolean {
  return causesOf(error).some((e) => {
    const code = String((e as { code?: unknown } | null)?.code ?? "");
    const state = String((e as { errno?: unknown } | null)?.errno ?? "");
    return /^ERR_POSTGRES_(CONNECTION_|IDLE_TIMEOUT|LIFETIME_TIMEOUT)/.test(code) || /^08[0-9A-Z]{3}$/.test(state) || /^57P0[123]$/.test(state);
  });
}

/**
 * SQLSTATE class 22 (data exception: a number out of range, an untranslatable character,
 * invalid text for a type) and a NOT NULL or CHECK violation: what the rows themselves
 * carry. Bun's SQL reports the SQLSTATE as `errno`.
 */
function refusedByPostgres(error: unknown): boolean {
  // drizzle wraps the driver's error in its own (`cause`).
  return causesOf(error).some((e) => {
    const state = String((e as { errno?: unknown } | null)?.errno ?? "");
    return /^22[0-9A-Z]{3}$/.test(state) || state === "23502" || state === "23514";
  });
}

import type { ReservedSQL } from "bun";
import type { Logger } from "../../core/log.ts";
import { causeMessage } from "../../core/errors.ts";
import type { Store } from "../store.ts";
import { LOCKS } from "./locks.ts";
import { clientOf, isOpen } from "./store.ts";

export interface InstanceLock {
  /** Gives the lock up (and the connection that holds it). */
  release(): Promise<void>;
}

/** How often the holder checks that its lock's connection still lives (PostgreSQL may have restarted). */
const CHECK_EVERY_MS = 1000;

/** The lock on a connection reserved for it; undefined when another instance holds it. */
async function tryLock(store: Store): Promise<ReservedSQL | undefined> {
  const connection = await clientOf(store).reserve();
  try {
    const [row] = (await connection.unsafe("SELECT pg_try_advisory_lock($1, $2) AS locked", [...LOCKS.singleInstance])) as Array<{ locked: boolean }>;
    if (row?.locked) return connection;
  } catch (error) {
    connection.release();
    throw error;
  }
  connection.release();
  return undefined;
}

/**
 * Claims the database for this instance alone: `serve --database` without a shared
 * State (Redis) keeps limits and credit reservations in memory, so a second instance
 * would double every limit. A session advisory lock on a connection reserved for the
 * instance's life; PostgreSQL drops it when that connection ends, so a killed instance
 * never leaves it behind. Resolves to undefined when another instance holds it.
 *
 * A restart of PostgreSQL ends that connection too, and the lock with it: the holder
 * checks its connection every second and takes the lock again on a new one, so a second
 * instance started after the restart is still refused. If one got in meanwhile, the
 * holder says so in the log (once, and once more when it holds the lock again).
 */
export async function acquireSingleInstanceLock(store: Store, log?: Logger, checkEveryMs = CHECK_EVERY_MS): Promise<InstanceLock | undefined> {
  let connection: ReservedSQL | undefined = await tryLock(store);
  if (!connection) return undefined;
  let released = false;
  let takenByAnother = false;
  let checking: Promise<void> | undefined;

  const check = async () => {
    if (!isOpen(store)) {
      // The store was closed without giving the lock back (a process on its way out): the
      // lock's connection goes back to the closing pool, which ends it, and the lock with it.
      clearInterval(timer);
      connection?.release();
      connection = undefined;
      return;
    }
    if (connection) {
      try {
        await connection.unsafe("SELECT 1");
        return;
      } catch {
        // Its connection ended, and the lock with it.
        connection.release();
        connection = undefined;
      }
    }
    let again: ReservedSQL | undefined;
    try {
      again = await tryLock(store);
    } catch {
      // PostgreSQL is away: the dependency probe says so; the next check tries again.
      return;
    }
    if (released) {
      again?.release();
      return;
    }
    if (again) {
      connection = again;
      if (takenByAnother) log?.info("this instance holds the database alone again");
      takenByAnother = false;
    } else if (!takenByAnother) {
      takenByAnother = true;
      log?.error(
        "another instance took the database without Redis while this one's lock was lost (PostgreSQL restarted): limits and credit are counted by each instance apart until one stops",
      );
    }
  };
  const timer = setInterval(() => {
    if (!released && !checking) checking = check().finally(() => (checking = undefined));
  }, checkEveryMs);
  timer.unref?.();

  return {
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      await checking;
      const held = connection;
      connection = undefined;
      if (!held) return;
      try {
        await held.unsafe("SELECT pg_advisory_unlock($1, $2)", [...LOCKS.singleInstance]);
      } catch (error) {
        log?.debug("the single-instance lock could not be given back; it ends with its connection", { error: causeMessage(error) });
      } finally {
        held.release();
      }
    },
  };
}

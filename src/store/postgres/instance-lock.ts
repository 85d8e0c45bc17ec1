import type { Store } from "../store.ts";
import { LOCKS } from "./locks.ts";
import { clientOf } from "./store.ts";

export interface InstanceLock {
  /** Gives the lock up (and the connection that holds it). */
  release(): Promise<void>;
}

/**
 * Claims the database for this instance alone: `serve --database` without a shared
 * State (Redis) keeps limits and credit reservations in memory, so a second instance
 * would double every limit. A session advisory lock on a connection reserved for the
 * instance's life; PostgreSQL drops it when that connection ends, so a killed instance
 * never leaves it behind. Resolves to undefined when another instance holds it.
 */
export async function acquireSingleInstanceLock(store: Store): Promise<InstanceLock | undefined> {
  const connection = await clientOf(store).reserve();
  try {
    const [row] = (await connection.unsafe("SELECT pg_try_advisory_lock($1, $2) AS locked", [...LOCKS.singleInstance])) as Array<{ locked: boolean }>;
    if (!row?.locked) {
      connection.release();
      return undefined;
    }
  } catch (error) {
    connection.release();
    throw error;
  }
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      try {
        await connection.unsafe("SELECT pg_advisory_unlock($1, $2)", [...LOCKS.singleInstance]);
      } finally {
        connection.release();
      }
    },
  };
}

import type { Store } from "../store.ts";
import { LOCKS } from "./locks.ts";
import { clientOf } from "./store.ts";

/**
 * Runs `body` while no other instance on the database runs its own: the checks and
 * first writes of a start (the sealing key, the first owner) happen one instance at a
 * time, so two instances started together create one owner, not two. A session
 * advisory lock on a reserved connection, given back when the body ends or fails.
 */
export async function withStartupLock<T>(store: Store, body: () => Promise<T>): Promise<T> {
  const connection = await clientOf(store).reserve();
  try {
    await connection.unsafe("SELECT pg_advisory_lock($1, $2)", [...LOCKS.startup]);
    try {
      return await body();
    } finally {
      await connection.unsafe("SELECT pg_advisory_unlock($1, $2)", [...LOCKS.startup]);
    }
  } finally {
    connection.release();
  }
}

/**
 * One value sealed with the deployment's key, if the database holds any: a provider
 * key's secret, else a sealed setting among `sealedSettings` (their names). Start-up
 * opens it to prove this instance was given the key the others use.
 */
export async function oneSealedValue(store: Store, sealedSettings: readonly string[]): Promise<string | undefined> {
  const client = clientOf(store);
  const [key] = (await client.unsafe("SELECT secret_sealed AS value FROM provider_keys LIMIT 1")) as Array<{ value: string }>;
  if (key) return key.value;
  if (sealedSettings.length === 0) return undefined;
  const [setting] = (await client.unsafe("SELECT value FROM settings WHERE key = ANY($1::text[]) LIMIT 1", [sealedSettings])) as Array<{ value: string }>;
  return setting?.value;
}

/** Answers when the database does; fails (with the driver's error) when it does not. */
export async function pingDatabase(store: Store): Promise<void> {
  await clientOf(store).unsafe("SELECT 1");
}

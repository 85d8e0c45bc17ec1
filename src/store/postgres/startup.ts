import type { Store } from "../store.ts";
import type { SealedValue } from "../sealing-check.ts";
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
 * The values sealed with the deployment's key that serving needs: every provider key's
 * secret, then every sealed setting among `sealedSettings` (their names), of any tenant.
 * Start-up opens them to prove this instance was given the key the others use.
 */
export async function sealedValues(store: Store, sealedSettings: readonly string[]): Promise<SealedValue[]> {
  const client = clientOf(store);
  const keys = (await client.unsafe("SELECT id, secret_sealed AS value FROM provider_keys ORDER BY id")) as Array<{ id: number; value: string }>;
  const settings =
    sealedSettings.length === 0
      ? []
      : ((await client.unsafe("SELECT tenant_id AS tenant, key, value FROM settings WHERE key = ANY($1::text[]) AND value LIKE 'v1:%' ORDER BY tenant_id, key", [sealedSettings])) as Array<{
          tenant: number;
          key: string;
          value: string;
        }>);
  return [...keys.map((row) => ({ name: `provider key ${row.id}`, value: row.value })), ...settings.map((row) => ({ name: `the setting ${row.key} of tenant ${row.tenant}`, value: row.value }))];
}

/** Answers when the database does; fails (with the driver's error) when it does not. */
export async function pingDatabase(store: Store): Promise<void> {
  await clientOf(store).unsafe("SELECT 1");
}

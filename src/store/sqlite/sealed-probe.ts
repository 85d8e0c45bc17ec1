import { Database } from "bun:sqlite";
import { SECRET_ITEMS } from "../../admin/config/items.ts";
import { createSealer } from "../crypto.ts";

/**
 * One value of the SQLite file at `path` sealed with the deployment's key: a provider
 * key's secret, else a secret setting of any tenant (EMAIL_PASS), else undefined. What
 * proves a key is the deployment's (the start-up check, a backup's key copy): a
 * deployment whose only secret is EMAIL_PASS has one too.
 */
export function oneSealedValueIn(path: string): string | undefined {
  const db = new Database(path, { readonly: true });
  try {
    const secret = db.query<{ value: string }, []>("SELECT secret_sealed AS value FROM provider_keys LIMIT 1").get();
    if (secret) return secret.value;
    const placeholders = SECRET_ITEMS.map(() => "?").join(", ");
    return db.query<{ value: string }, string[]>(`SELECT value FROM settings WHERE key IN (${placeholders}) AND value LIKE 'v1:%' LIMIT 1`).get(...SECRET_ITEMS)?.value;
  } finally {
    db.close();
  }
}

/**
 * Whether `key` opens the sealed values of the SQLite file at `path` (true when it holds
 * none yet): after `router rekey` the secret.key beside a database may be the old key, and
 * a command that names or copies a key for it must not name that one.
 */
export function keyOpensDatabase(path: string, key: Uint8Array): boolean {
  try {
    const sealed = oneSealedValueIn(path);
    if (sealed === undefined) return true;
    createSealer(key).open(sealed);
    return true;
  } catch {
    return false;
  }
}

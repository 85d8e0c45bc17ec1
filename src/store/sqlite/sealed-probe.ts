import { Database } from "bun:sqlite";
import { SECRET_ITEMS } from "../../admin/config/secret-items.ts";
import { createSealer } from "../crypto.ts";
import type { SealedValue } from "../sealing-check.ts";

/**
 * The values of the SQLite file at `path` that are sealed with the deployment's key and
 * that serving needs: every provider key's secret, then every sealed secret setting of any
 * tenant (EMAIL_PASS). What proves a key is the deployment's (the start-up check, a
 * backup's key copy): a deployment whose only secret is EMAIL_PASS has one too.
 */
export function sealedValuesIn(path: string): SealedValue[] {
  const db = new Database(path, { readonly: true });
  try {
    const secrets = db.query<{ id: number; value: string }, []>("SELECT id, secret_sealed AS value FROM provider_keys ORDER BY id").all();
    const placeholders = SECRET_ITEMS.map(() => "?").join(", ");
    const settings = db
      .query<{ tenant: number; key: string; value: string }, string[]>(`SELECT tenant_id AS tenant, key, value FROM settings WHERE key IN (${placeholders}) AND value LIKE 'v1:%' ORDER BY tenant_id, key`)
      .all(...SECRET_ITEMS);
    return [...secrets.map((row) => ({ name: `provider key ${row.id}`, value: row.value })), ...settings.map((row) => ({ name: `the setting ${row.key} of tenant ${row.tenant}`, value: row.value }))];
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
    const sealer = createSealer(key);
    for (const { value } of sealedValuesIn(path)) sealer.open(value);
    return true;
  } catch {
    return false;
  }
}

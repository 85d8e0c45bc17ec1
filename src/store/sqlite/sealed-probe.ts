import { Database } from "bun:sqlite";
import { SECRET_ITEMS } from "../../admin/config/items.ts";
import { createSealer } from "../crypto.ts";

/**
 * Whether `key` opens the sealed values of the SQLite file at `path` (true when it holds
 * none yet): after `router rekey` the secret.key beside a database may be the old key, and
 * a command that names or copies a key for it must not name that one.
 */
export function keyOpensDatabase(path: string, key: Uint8Array): boolean {
  const db = new Database(path, { readonly: true });
  try {
    const secret = db.query<{ value: string }, []>("SELECT secret_sealed AS value FROM provider_keys LIMIT 1").get();
    const setting = db.query<{ value: string }, string[]>(`SELECT value FROM settings WHERE key IN (${SECRET_ITEMS.map(() => "?").join(", ")}) LIMIT 1`).get(...SECRET_ITEMS);
    const sealed = secret?.value ?? setting?.value;
    if (sealed === undefined) return true;
    createSealer(key).open(sealed);
    return true;
  } catch {
    return false;
  } finally {
    db.close();
  }
}

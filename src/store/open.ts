import { openSqliteStore } from "./sqlite/store.ts";
import type { Store } from "./store.ts";

/** Opens the store of a deployment: the embedded SQLite file (migrated on open). */
export function openStore(path: string, options: { migrate?: boolean } = {}): Store {
  return openSqliteStore(path, options);
}

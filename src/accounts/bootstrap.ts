import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Store } from "../store/store.ts";
import type { Owners } from "./owners.ts";

/**
 * First start on an empty data dir: create the first owner and put its key in
 * `<data>/initial-owner-key` (mode 0600). Returns that file's path, or undefined
 * when accounts already exist. The key itself is never printed or logged.
 */
export async function ensureInitialOwner(store: Store, owners: Owners, dataDir: string, email: string): Promise<string | undefined> {
  if ((await store.accounts.countLive()) > 0) return undefined;
  const { key } = await owners.create({ email });
  const path = join(dataDir, "initial-owner-key");
  writeFileSync(path, key + "\n", { mode: 0o600 });
  chmodSync(path, 0o600);
  return path;
}

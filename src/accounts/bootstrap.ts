import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AccountsRepository } from "./repository.ts";

/**
 * First start on an empty data dir: create the first owner and put its key in
 * `<data>/initial-owner-key` (mode 0600). Returns that file's path, or undefined
 * when accounts already exist. The key itself is never printed or logged.
 */
export function ensureInitialOwner(accounts: AccountsRepository, dataDir: string, email: string): string | undefined {
  if (accounts.countLive() > 0) return undefined;
  const { key } = accounts.createOwner({ email });
  const path = join(dataDir, "initial-owner-key");
  writeFileSync(path, key + "\n", { mode: 0o600 });
  chmodSync(path, 0o600);
  return path;
}

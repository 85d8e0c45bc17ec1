import { conflict } from "../core/errors.ts";
import { randomBase62 } from "../core/ids.ts";
import type { AccountRow, NewAccountRow } from "../store/store.ts";
import type { Tx } from "./ledger.ts";
import { nameFromEmail } from "./validation.ts";

/** 409 when a live account other than `except` already has this email or name. */
export async function assertUnique(tx: Tx, field: "email" | "name", value: string, except?: number): Promise<void> {
  const hit = await tx.accounts.liveIdWith(field, value);
  if (hit !== undefined && hit !== except) {
    const label = field === "email" ? "Email" : "Name";
    throw conflict(`${label} ${value} is already used`, label, `${field}_taken`);
  }
}

/** A free name derived from the email's local part. */
async function uniqueName(tx: Tx, email: string): Promise<string> {
  for (;;) {
    const candidate = nameFromEmail(email, randomBase62(6).toLowerCase());
    if ((await tx.accounts.liveIdWith("name", candidate)) === undefined) return candidate;
  }
}

/**
 * Inserts an account under `parentPath` (`""` for an owner) and sets its materialised
 * path, after checking email and name are free. Runs inside the caller's transaction.
 */
export async function insertAccount(tx: Tx, values: Omit<NewAccountRow, "name" | "path"> & { name?: string }, parentPath: string): Promise<AccountRow> {
  await assertUnique(tx, "email", values.email);
  if (values.name !== undefined) await assertUnique(tx, "name", values.name);
  return tx.accounts.insert({ ...values, name: values.name ?? (await uniqueName(tx, values.email)) }, parentPath);
}

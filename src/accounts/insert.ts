import { conflict } from "../core/errors.ts";
import { randomBase62 } from "../core/ids.ts";
import { rootIdOf } from "../store/account-root.ts";
import type { AccountRow, NewAccountRow } from "../store/store.ts";
import type { Tx } from "./ledger.ts";
import { nameFromEmail } from "./validation.ts";

const taken = (field: "email" | "name", value: string) => {
  const label = field === "email" ? "Email" : "Name";
  return conflict(`${label} ${value} is already used`, label, `${field}_taken`);
};

/**
 * 409 when a live account of the tree rooted at `rootId`, other than `except`, already
 * has this email or name. Only that tree is asked: another tree's accounts are neither
 * revealed by the answer nor in the way (every identifier is resolved inside the
 * caller's own tree, so this is exactly the scope a name must be unique in).
 */
export async function assertUnique(tx: Tx, rootId: number, field: "email" | "name", value: string, except?: number): Promise<void> {
  const hit = await tx.accounts.liveIdWith(rootId, field, value);
  if (hit !== undefined && hit !== except) throw taken(field, value);
}

/** A free name of the tree derived from the email's local part. */
async function uniqueName(tx: Tx, rootId: number, email: string): Promise<string> {
  for (;;) {
    const candidate = nameFromEmail(email, randomBase62(6).toLowerCase());
    if ((await tx.accounts.liveIdWith(rootId, "name", candidate)) === undefined) return candidate;
  }
}

/**
 * Inserts an account under `parentPath` (`""` for an owner) and sets its materialised
 * path, after checking email and name are free. Runs inside the caller's transaction.
 *
 * An account under a parent needs an email and name free in the parent's tree. An owner
 * starts a tree of its own, empty until now, so its name is free there; its email must
 * be one no other owner uses (an address owns one tree), whatever accounts of other
 * trees use it.
 */
export async function insertAccount(tx: Tx, values: Omit<NewAccountRow, "name" | "path" | "rootId"> & { name?: string }, parentPath: string): Promise<AccountRow> {
  if (parentPath === "") {
    if ((await tx.accounts.liveOwnerIdWith(values.email)) !== undefined) throw taken("email", values.email);
    return tx.accounts.insert({ ...values, name: values.name ?? nameFromEmail(values.email, randomBase62(6).toLowerCase()) }, parentPath);
  }
  const rootId = rootIdOf(parentPath);
  await assertUnique(tx, rootId, "email", values.email);
  if (values.name !== undefined) await assertUnique(tx, rootId, "name", values.name);
  return tx.accounts.insert({ ...values, name: values.name ?? (await uniqueName(tx, rootId, values.email)) }, parentPath);
}

import { and, eq, isNull } from "drizzle-orm";
import { conflict } from "../core/errors.ts";
import { randomBase62 } from "../core/ids.ts";
import { accounts, type AccountRow, type NewAccountRow } from "../store/schema/accounts.ts";
import type { Tx } from "./ledger.ts";
import { nameFromEmail } from "./validation.ts";

const live = isNull(accounts.deletedAt);

/** 409 when a live account other than `except` already has this email or name. */
export function assertUnique(tx: Tx, field: "email" | "name", value: string, except?: number): void {
  const column = field === "email" ? accounts.email : accounts.name;
  const hit = tx.select({ id: accounts.id }).from(accounts).where(and(eq(column, value), live)).get();
  if (hit && hit.id !== except) {
    const label = field === "email" ? "Email" : "Name";
    throw conflict(`${label} ${value} is already used`, label, `${field}_taken`);
  }
}

/** A free name derived from the email's local part. */
export function uniqueName(tx: Tx, email: string): string {
  for (;;) {
    const candidate = nameFromEmail(email, randomBase62(6).toLowerCase());
    if (!tx.select({ id: accounts.id }).from(accounts).where(and(eq(accounts.name, candidate), live)).get()) return candidate;
  }
}

/**
 * Inserts an account under `parentPath` (`""` for an owner) and sets its materialised
 * path, after checking email and name are free. Runs inside the caller's transaction.
 */
export function insertAccount(tx: Tx, values: Omit<NewAccountRow, "name" | "path"> & { name?: string }, parentPath: string): AccountRow {
  assertUnique(tx, "email", values.email);
  if (values.name !== undefined) assertUnique(tx, "name", values.name);
  const inserted = tx
    .insert(accounts)
    .values({ ...values, name: values.name ?? uniqueName(tx, values.email) })
    .returning()
    .get();
  return tx
    .update(accounts)
    .set({ path: `${parentPath || "/"}${inserted.id}/` })
    .where(eq(accounts.id, inserted.id))
    .returning()
    .get();
}

import { and, eq, gt, isNull, or, sql } from "drizzle-orm";
import type { Clock } from "../core/clock.ts";
import { conflict, badRequest } from "../core/errors.ts";
import { randomBase62 } from "../core/ids.ts";
import type { Store } from "../store/db.ts";
import { accounts, creditGrants, type AccountRow } from "../store/schema/accounts.ts";
import { issueApiKey } from "./api-keys.ts";
import { isValidAccountName, isValidEmail, nameFromEmail, normaliseEmail } from "./validation.ts";

export interface CreatedAccount {
  account: AccountRow;
  /** The new API key, to hand over once. */
  key: string;
}

export interface OwnerInput {
  email: string;
  name?: string;
}

/** Reads and writes of account rows; the only module that touches the accounts table. */
export interface AccountsRepository {
  createOwner(input: OwnerInput): CreatedAccount;
  findLiveByKeyHash(hash: string): AccountRow | undefined;
  findLiveById(id: number): AccountRow | undefined;
  countLive(): number;
  /** Unexpired credit in nano-credits. */
  balanceNanos(accountId: number): number;
}

export function createAccountsRepository({ store, clock }: { store: Store; clock: Clock }): AccountsRepository {
  const { db } = store;
  const live = isNull(accounts.deletedAt);

  const emailTaken = (email: string) =>
    db.select({ id: accounts.id }).from(accounts).where(and(eq(accounts.email, email), live)).get() !== undefined;
  const nameTaken = (name: string) =>
    db.select({ id: accounts.id }).from(accounts).where(and(eq(accounts.name, name), live)).get() !== undefined;

  function uniqueName(email: string): string {
    for (;;) {
      const candidate = nameFromEmail(email, randomBase62(6).toLowerCase());
      if (!nameTaken(candidate)) return candidate;
    }
  }

  return {
    createOwner(input) {
      const email = normaliseEmail(input.email);
      if (!isValidEmail(email)) throw badRequest(`Email "${input.email}" is not a valid address`, "Email");
      if (input.name !== undefined && !isValidAccountName(input.name)) {
        throw badRequest("Name must be 4 to 63 characters (letters, digits, . _ -) with at least one letter", "Name");
      }
      const issued = issueApiKey();
      const now = clock.now();
      const account = db.transaction((tx) => {
        // Checked inside the write transaction, so two concurrent creators cannot both pass.
        if (emailTaken(email)) throw conflict(`Email ${email} is already used`, "Email", "email_taken");
        if (input.name !== undefined && nameTaken(input.name)) {
          throw conflict(`Name ${input.name} is already used`, "Name", "name_taken");
        }
        const inserted = tx
          .insert(accounts)
          .values({
            depth: 1,
            isOwner: true,
            email,
            name: input.name ?? uniqueName(email),
            keyHash: issued.hash,
            keyPrefix: issued.prefix,
            createdAt: now,
            updatedAt: now,
          })
          .returning()
          .get();
        return tx
          .update(accounts)
          .set({ path: `/${inserted.id}/` })
          .where(eq(accounts.id, inserted.id))
          .returning()
          .get();
      }, { behavior: "immediate" });
      return { account, key: issued.key };
    },

    findLiveByKeyHash(hash) {
      return db.select().from(accounts).where(and(eq(accounts.keyHash, hash), live)).get();
    },

    findLiveById(id) {
      return db.select().from(accounts).where(and(eq(accounts.id, id), live)).get();
    },

    countLive() {
      return db.select({ n: sql<number>`count(*)` }).from(accounts).where(live).get()?.n ?? 0;
    },

    balanceNanos(accountId) {
      const row = db
        .select({ total: sql<number>`coalesce(sum(${creditGrants.remaining}), 0)` })
        .from(creditGrants)
        .where(
          and(
            eq(creditGrants.accountId, accountId),
            or(isNull(creditGrants.expiresAt), gt(creditGrants.expiresAt, clock.now())),
          ),
        )
        .get();
      return row?.total ?? 0;
    },
  };
}

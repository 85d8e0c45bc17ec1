import { and, eq, isNull, sql } from "drizzle-orm";
import type { Clock } from "../core/clock.ts";
import { badRequest } from "../core/errors.ts";
import type { Store } from "../store/db.ts";
import { accounts, type AccountRow } from "../store/schema/accounts.ts";
import { issueApiKey } from "./api-keys.ts";
import { insertAccount } from "./insert.ts";
import { isValidAccountName, isValidEmail, normaliseEmail } from "./validation.ts";

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
}

export function createAccountsRepository({ store, clock }: { store: Store; clock: Clock }): AccountsRepository {
  const { db } = store;
  const live = isNull(accounts.deletedAt);

  return {
    createOwner(input) {
      const email = normaliseEmail(input.email);
      if (!isValidEmail(email)) throw badRequest(`Email "${input.email}" is not a valid address`, "Email");
      if (input.name !== undefined && !isValidAccountName(input.name)) {
        throw badRequest("Name must be 4 to 63 characters (letters, digits, . _ -) with at least one letter", "Name");
      }
      const issued = issueApiKey();
      const now = clock.now();
      // Checked inside the write transaction, so two concurrent creators cannot both pass.
      const account = db.transaction(
        (tx) =>
          insertAccount(
            tx,
            { depth: 1, isOwner: true, email, name: input.name, keyHash: issued.hash, keyPrefix: issued.prefix, createdAt: now, updatedAt: now },
            "",
          ),
        { behavior: "immediate" },
      );
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
  };
}

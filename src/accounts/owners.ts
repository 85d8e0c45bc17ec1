import type { Clock } from "../core/clock.ts";
import { badRequest } from "../core/errors.ts";
import type { AccountRow, Store } from "../store/store.ts";
import { issueApiKey } from "./api-keys.ts";
import { insertAccount } from "./insert.ts";
import { ACCOUNT_NAME_RULE, isValidAccountName, isValidEmail, normaliseEmail } from "./validation.ts";

export interface CreatedAccount {
  account: AccountRow;
  /** The new API key, to hand over once. */
  key: string;
}

export interface OwnerInput {
  email: string;
  name?: string;
}

/** Creates first-level owner accounts (the initial owner, `router owner create`, BYOK sign-ups). */
export interface Owners {
  create(input: OwnerInput): Promise<CreatedAccount>;
}

export function createOwners({ store, clock }: { store: Store; clock: Clock }): Owners {
  return {
    async create(input) {
      const email = normaliseEmail(input.email);
      if (!isValidEmail(email)) throw badRequest(`Email "${input.email}" is not a valid address`, "Email");
      if (input.name !== undefined && !isValidAccountName(input.name)) {
        throw badRequest(ACCOUNT_NAME_RULE, "Name");
      }
      const issued = issueApiKey();
      const now = clock.now();
      // Checked inside the write transaction, so two concurrent creators cannot both pass.
      const account = await store.transaction((tx) =>
        insertAccount(
          tx,
          { depth: 1, isOwner: true, email, name: input.name, keyHash: issued.hash, keyPrefix: issued.prefix, createdAt: now, updatedAt: now },
          "",
        ),
      );
      return { account, key: issued.key };
    },
  };
}

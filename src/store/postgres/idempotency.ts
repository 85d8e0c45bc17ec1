import { and, eq, lt } from "drizzle-orm";
import type { IdempotencyStore } from "../store.ts";
import type { Scope } from "./db.ts";
import { idempotencyKeys } from "./schema/idempotency.ts";

export function postgresIdempotency({ db }: Scope): IdempotencyStore {
  const of = (accountId: number, key: string) => and(eq(idempotencyKeys.accountId, accountId), eq(idempotencyKeys.key, key));
  return {
    async claim(claim, expiredBefore) {
      // The insert decides between instances; a holder that let go between it and the read is claimed again.
      for (let attempt = 0; attempt < 3; attempt++) {
        await db.delete(idempotencyKeys).where(and(of(claim.accountId, claim.key), lt(idempotencyKeys.createdAt, expiredBefore)));
        const inserted = await db.insert(idempotencyKeys).values(claim).onConflictDoNothing().returning({ key: idempotencyKeys.key });
        if (inserted.length > 0) return undefined;
        const [held] = await db.select().from(idempotencyKeys).where(of(claim.accountId, claim.key));
        if (held) return held;
      }
      throw new Error("the Idempotency-Key could not be claimed: its holder kept letting go");
    },
    async complete(accountId, key, answer) {
      await db.update(idempotencyKeys).set(answer).where(of(accountId, key));
    },
    async release(accountId, key) {
      await db.delete(idempotencyKeys).where(of(accountId, key));
    },
    async prune(before) {
      const removed = await db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, before)).returning({ key: idempotencyKeys.key });
      return removed.length;
    },
  };
}

import { and, eq, lt } from "drizzle-orm";
import { idempotencyKeys } from "../schema/idempotency.ts";
import type { IdempotencyStore } from "../store.ts";
import type { Db } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";

export function sqliteIdempotency(db: Db): Synchronous<IdempotencyStore> {
  const of = (accountId: number, key: string) => and(eq(idempotencyKeys.accountId, accountId), eq(idempotencyKeys.key, key));
  return {
    claim(claim, expiredBefore) {
      // One connection, synchronous statements: nothing runs between them.
      db.delete(idempotencyKeys).where(and(of(claim.accountId, claim.key), lt(idempotencyKeys.createdAt, expiredBefore))).run();
      const inserted = db.insert(idempotencyKeys).values(claim).onConflictDoNothing().returning({ key: idempotencyKeys.key }).all();
      if (inserted.length > 0) return undefined;
      return db.select().from(idempotencyKeys).where(of(claim.accountId, claim.key)).get();
    },
    complete(accountId, key, answer) {
      db.update(idempotencyKeys).set(answer).where(of(accountId, key)).run();
    },
    release(accountId, key) {
      db.delete(idempotencyKeys).where(of(accountId, key)).run();
    },
    prune(before) {
      // drizzle's bun:sqlite run() types its result as void; the driver's own holds the count.
      return (db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, before)).run() as unknown as { changes: number }).changes;
    },
  };
}

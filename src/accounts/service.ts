import { and, asc, desc, eq, isNull, like, ne, sql, type SQL } from "drizzle-orm";
import type { OperationLog } from "../admin/oplog/writer.ts";
import type { Clock } from "../core/clock.ts";
import { badRequest, conflict, notFound, unauthorized } from "../core/errors.ts";
import { randomBase62 } from "../core/ids.ts";
import type { Store } from "../store/db.ts";
import { accounts, type AccountRow } from "../store/schema/accounts.ts";
import { issueApiKey } from "./api-keys.ts";
import type { AccountInput } from "./input.ts";
import { balanceOf, capExpiry, give, take, type Tx } from "./ledger.ts";
import { assertUnique, insertAccount } from "./insert.ts";
import type { InvalidationBus } from "../core/invalidation.ts";
import { NANOS_PER_CREDIT } from "./records.ts";
import { columnsForCreate, columnsForUpdate } from "./scope.ts";
import { normaliseEmail } from "./validation.ts";

export type Scope = "direct" | "subtree";

export interface ListQuery {
  id?: number;
  name?: string;
  email?: string;
  level?: number;
  order: string;
  page: number;
  size: number;
}

/** Allowed values of `order` on account lists. */
export const ORDERS: Record<string, SQL[]> = {
  id: [asc(accounts.id)],
  "-id": [desc(accounts.id)],
  name: [asc(accounts.name)],
  "-name": [desc(accounts.name)],
  email: [asc(accounts.email)],
  "-email": [desc(accounts.email)],
  created: [asc(accounts.createdAt), asc(accounts.id)],
  "-created": [desc(accounts.createdAt), desc(accounts.id)],
  level: [asc(accounts.depth), asc(accounts.id)],
  "-level": [desc(accounts.depth), desc(accounts.id)],
};

export interface CreditOutcome {
  /** Change of the caller's own balance (nano-credits): negative when it gave, 0 when an owner minted. */
  callerChange: number;
  /** Change of the target's balance (nano-credits). */
  targetChange: number;
}

export interface Actor {
  account: AccountRow;
  ip: string | undefined;
}

const DAY_MS = 86_400_000;

export function createAccountsService(deps: {
  store: Store;
  clock: Clock;
  /** Where committed account changes are announced (principal cache, live sessions, ancestor chains). */
  bus: InvalidationBus;
  oplog: OperationLog;
  /** Told after a committed change of balances (e.g. so metering re-reads them). */
  onCreditChanged?: (accountIds: number[]) => void;
  /** Credit an account's calls hold back from its balance: reservations in flight and unwritten charges. */
  heldCredit?: (accountId: number) => Promise<number>;
  /** Told after an account was deleted (what its calls held back follows when they end). */
  onDeleted?: (accountId: number) => void;
}) {
  const creditChanged = (...ids: Array<number | null | undefined>) =>
    deps.onCreditChanged?.(ids.filter((id): id is number => typeof id === "number"));
  const { db } = deps.store;
  const live = isNull(accounts.deletedAt);

  const inScope = (caller: AccountRow, row: AccountRow, scope: Scope) =>
    scope === "direct" ? row.parentId === caller.id : row.id !== caller.id && row.path.startsWith(caller.path);

  const scopeCondition = (caller: AccountRow, scope: Scope): SQL =>
    scope === "direct" ? eq(accounts.parentId, caller.id) : and(like(accounts.path, `${caller.path}%`), ne(accounts.id, caller.id))!;

  /** `{identifier}`: all digits is an ID, with `@` an email, else a name. Outside the scope it does not exist. */
  function resolve(tx: Tx, caller: AccountRow, identifier: string, scope: Scope): AccountRow {
    const where = /^\d+$/.test(identifier)
      ? eq(accounts.id, Number(identifier))
      : identifier.includes("@")
        ? eq(accounts.email, normaliseEmail(identifier))
        : eq(accounts.name, identifier);
    const row = tx.select().from(accounts).where(and(where, live)).get();
    if (!row || !inScope(caller, row, scope)) throw notFound(`Account ${identifier} not found`, "account_not_found");
    return row;
  }

  /**
   * The caller as it is now, inside the write transaction: a request authenticated just
   * before its key was rotated or its account deleted must not write anything (it would
   * hand out a dead key, or create accounts under a deleted one). Scope checks use this
   * fresh row, not the request's cached snapshot.
   */
  function current(tx: Tx, caller: AccountRow): AccountRow {
    const row = tx.select().from(accounts).where(and(eq(accounts.id, caller.id), eq(accounts.keyHash, caller.keyHash), live)).get();
    if (!row) throw unauthorized("Invalid API key", "invalid_api_key");
    return row;
  }

  /** Moves credit between caller and target inside the transaction (spec 4.2 credit rule). */
  function applyCredit(tx: Tx, caller: AccountRow, target: AccountRow, credits: number, days: number | undefined): CreditOutcome {
    const now = deps.clock.now();
    const nanos = Math.round(credits * NANOS_PER_CREDIT);
    if (nanos === 0) return { callerChange: 0, targetChange: 0 };
    if (nanos > 0) {
      const expiry = days ? now + days * DAY_MS : null;
      // Owners mint credit; anyone else transfers it from its own balance, expiries included.
      const pieces = caller.isOwner ? [{ amount: nanos, expiresAt: expiry }] : capExpiry(take(tx, caller.id, nanos, now), expiry);
      give(tx, target.id, pieces, caller.id, now);
      return { callerChange: caller.isOwner ? 0 : -nanos, targetChange: nanos };
    }
    const pieces = take(tx, target.id, -nanos, now);
    give(tx, caller.id, pieces, caller.id, now);
    return { callerChange: -nanos, targetChange: nanos };
  }


  return {
    resolve: (caller: AccountRow, identifier: string, scope: Scope) => resolve(db, caller, identifier, scope),

    balanceNanos: (accountId: number) => balanceOf(db, accountId, deps.clock.now()),

    list(caller: AccountRow, scope: Scope, query: ListQuery) {
      const parts: SQL[] = [live, scopeCondition(caller, scope)];
      if (query.id !== undefined) parts.push(eq(accounts.id, query.id));
      if (query.level !== undefined) parts.push(eq(accounts.depth, query.level));
      if (query.name) parts.push(sql`instr(lower(${accounts.name}), ${query.name.toLowerCase()}) > 0`);
      if (query.email) parts.push(sql`instr(${accounts.email}, ${query.email.toLowerCase()}) > 0`);
      const where = and(...parts);
      const total = db.select({ n: sql<number>`count(*)` }).from(accounts).where(where).get()?.n ?? 0;
      const rows = db
        .select()
        .from(accounts)
        .where(where)
        .orderBy(...ORDERS[query.order]!)
        .limit(query.size)
        .offset((query.page - 1) * query.size)
        .all();
      return { rows, total };
    },

    create(actor: Actor, input: AccountInput) {
      const caller = actor.account;
      if (!input.email) throw badRequest("Email is required", "Email");
      if (input.credit !== undefined && input.credit < 0) throw badRequest("CreditGranted must not be negative when creating an account", "CreditGranted");
      const issued = issueApiKey();
      const now = deps.clock.now();
      const result = db.transaction(
        (tx) => {
          const columns = columnsForCreate(current(tx, caller), input);
          const account = insertAccount(
            tx,
            {
              ...columns,
              parentId: caller.id,
              depth: caller.depth + 1,
              isOwner: false,
              email: input.email!,
              name: input.name,
              alias: input.alias ?? null,
              billingEmail: input.billingEmail ?? null,
              keyHash: issued.hash,
              keyPrefix: issued.prefix,
              createdAt: now,
              updatedAt: now,
            },
            caller.path,
          );
          const credit = input.credit ? applyCredit(tx, caller, account, input.credit, input.days) : { callerChange: 0, targetChange: 0 };
          return { account, credit };
        },
        { behavior: "immediate" },
      );
      if (result.credit.targetChange !== 0) creditChanged(caller.id, result.account.id);
      deps.oplog.write({
        actorId: caller.id,
        action: "account.create",
        targetId: result.account.id,
        details: { email: result.account.email, name: result.account.name, credit: result.credit.targetChange / NANOS_PER_CREDIT },
        ip: actor.ip,
      });
      return { account: result.account, key: issued.key };
    },

    update(actor: Actor, identifier: string, input: AccountInput) {
      const caller = actor.account;
      const result = db.transaction(
        (tx) => {
          const columns = columnsForUpdate(current(tx, caller), input);
          const target = resolve(tx, caller, identifier, "subtree");
          if (input.email !== undefined) assertUnique(tx, "email", input.email, target.id);
          if (input.name !== undefined) assertUnique(tx, "name", input.name, target.id);
          const account =
            Object.keys(columns).length > 0
              ? tx.update(accounts).set({ ...columns, updatedAt: deps.clock.now() }).where(eq(accounts.id, target.id)).returning().get()
              : target;
          const credit = input.credit !== undefined ? applyCredit(tx, caller, account, input.credit, input.days) : undefined;
          return { account, credit, columns };
        },
        { behavior: "immediate" },
      );
      deps.bus.publish({ kind: "account", accountId: result.account.id });
      if (result.credit) creditChanged(caller.id, result.account.id);
      deps.oplog.write({
        actorId: caller.id,
        action: "account.update",
        targetId: result.account.id,
        details: { fields: Object.keys(result.columns), credit: result.credit ? result.credit.targetChange / NANOS_PER_CREDIT : undefined, days: input.days },
        ip: actor.ip,
      });
      return result.account;
    },

    async remove(actor: Actor, identifier: string) {
      const caller = actor.account;
      // What the target's calls hold is asked first (the State may be shared, so asynchronous);
      // whatever they charge after this is covered by what stays behind, then follows them.
      const named = db.transaction((tx) => resolve(tx, caller, identifier, "subtree"));
      const heldBack = (await deps.heldCredit?.(named.id)) ?? 0;
      const now = deps.clock.now();
      const result = db.transaction(
        (tx) => {
          current(tx, caller);
          const target = resolve(tx, caller, identifier, "subtree");
          if (target.id !== named.id) throw conflict(`Account ${identifier} changed while it was being deleted; try again`, undefined, "account_changed");
          const child = tx.select({ id: accounts.id }).from(accounts).where(and(eq(accounts.parentId, target.id), live)).get();
          if (child) throw conflict(`Account ${identifier} still has accounts under it; delete those first`, undefined, "has_descendants");
          // What is really left goes back to the parent, expiries kept: the balance less
          // what calls in flight reserved and charges not yet written, which stay to pay
          // for them (the rest follows when they end: `onDeleted`).
          const left = Math.max(0, balanceOf(tx, target.id, now) - heldBack);
          const pieces = left > 0 ? take(tx, target.id, left, now) : [];
          give(tx, target.parentId!, pieces, target.id, now);
          tx.update(accounts)
            .set({ deletedAt: now, updatedAt: now, keyHash: `deleted:${target.id}:${randomBase62(16)}` })
            .where(eq(accounts.id, target.id))
            .run();
          return { target, returned: pieces.reduce((sum, p) => sum + p.amount, 0) };
        },
        { behavior: "immediate" },
      );
      deps.bus.publish({ kind: "account", accountId: result.target.id });
      creditChanged(result.target.id, result.target.parentId);
      deps.onDeleted?.(result.target.id);
      deps.oplog.write({
        actorId: caller.id,
        action: "account.delete",
        targetId: result.target.id,
        details: { email: result.target.email, creditReturned: result.returned / NANOS_PER_CREDIT },
        ip: actor.ip,
      });
      return result;
    },

    /** Applies one credit change to one account in its own transaction (batch entries are atomic one by one). */
    creditOne(tx: Tx, caller: AccountRow, identifier: string, credits: number, days: number | undefined) {
      current(tx, caller);
      const target = resolve(tx, caller, identifier, "subtree");
      const before = balanceOf(tx, target.id, deps.clock.now());
      const outcome = applyCredit(tx, caller, target, credits, days);
      return { target, before, after: before + outcome.targetChange, outcome };
    },

    rotateKey(actor: Actor, confirm: unknown) {
      const expected = `${deps.clock.businessDate()}-ROTATE-SELF`;
      if (typeof confirm !== "string" || confirm !== expected) {
        throw badRequest("confirm must be <YYYY-MM-DD>-ROTATE-SELF with today's server date", "confirm", "invalid_confirm");
      }
      const issued = issueApiKey();
      const now = deps.clock.now();
      // Only the key this request authenticated with is replaced: a second rotation that
      // was authenticated before the first one committed must not hand out a dead key.
      const rotated = db
        .update(accounts)
        .set({ keyHash: issued.hash, keyPrefix: issued.prefix, updatedAt: now })
        .where(and(eq(accounts.id, actor.account.id), eq(accounts.keyHash, actor.account.keyHash), live))
        .returning({ id: accounts.id })
        .get();
      if (!rotated) throw unauthorized("Invalid API key", "invalid_api_key");
      deps.bus.publish({ kind: "account", accountId: actor.account.id });
      deps.oplog.write({ actorId: actor.account.id, action: "account.rotate_key", targetId: actor.account.id, details: { keyPrefix: issued.prefix }, ip: actor.ip });
      return issued;
    },

    transaction: <T>(fn: (tx: Tx) => T) => db.transaction(fn, { behavior: "immediate" }),
    creditChanged,
    log: deps.oplog,
  };
}

export type AccountsService = ReturnType<typeof createAccountsService>;

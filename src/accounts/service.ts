import type { OperationLog } from "../admin/oplog/writer.ts";
import type { Clock } from "../core/clock.ts";
import { badRequest, conflict, notFound, unauthorized } from "../core/errors.ts";
import { randomBase62 } from "../core/ids.ts";
import type { AccountOrder, AccountRow, AccountsWithin, Store, Transaction } from "../store/store.ts";
import { issueApiKey } from "./api-keys.ts";
import type { AccountInput } from "./input.ts";
import { capExpiry, take, type Tx } from "./ledger.ts";
import { assertUnique, insertAccount } from "./insert.ts";
import type { InvalidationBus } from "../core/invalidation.ts";
import { NANOS_PER_CREDIT } from "./records.ts";
import { columnsForCreate, columnsForUpdate } from "./grants.ts";
import { normaliseEmail } from "./validation.ts";

export { ACCOUNT_ORDERS } from "../store/store.ts";

export type Scope = "direct" | "subtree";

export interface ListQuery {
  id?: number;
  name?: string;
  email?: string;
  level?: number;
  order: AccountOrder;
  page: number;
  size: number;
}

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
  const { store } = deps;

  const inScope = (caller: AccountRow, row: AccountRow, scope: Scope) =>
    scope === "direct" ? row.parentId === caller.id : row.id !== caller.id && row.path.startsWith(caller.path);

  const within = (caller: AccountRow, scope: Scope): AccountsWithin =>
    scope === "direct" ? { parentId: caller.id } : { path: caller.path, exceptId: caller.id };

  /** `{identifier}`: all digits is an ID, with `@` an email, else a name. Outside the scope it does not exist. */
  async function resolve(tx: Tx, caller: AccountRow, identifier: string, scope: Scope): Promise<AccountRow> {
    const by = /^\d+$/.test(identifier) ? { id: Number(identifier) } : identifier.includes("@") ? { email: normaliseEmail(identifier) } : { name: identifier };
    const row = await tx.accounts.find(by);
    if (!row || !inScope(caller, row, scope)) throw notFound(`Account ${identifier} not found`, "account_not_found");
    return row;
  }

  /**
   * The caller as it is now, inside the write transaction: a request authenticated just
   * before its key was rotated or its account deleted must not write anything (it would
   * hand out a dead key, or create accounts under a deleted one). Scope checks use this
   * fresh row, not the request's cached snapshot.
   */
  async function current(tx: Tx, caller: AccountRow): Promise<AccountRow> {
    const row = await tx.accounts.byId(caller.id);
    if (!row || row.keyHash !== caller.keyHash) throw unauthorized("Invalid API key", "invalid_api_key");
    return row;
  }

  /** Moves credit between caller and target inside the transaction (spec 4.2 credit rule). */
  async function applyCredit(tx: Tx, caller: AccountRow, target: AccountRow, credits: number, days: number | undefined): Promise<CreditOutcome> {
    const now = deps.clock.now();
    const nanos = Math.round(credits * NANOS_PER_CREDIT);
    if (nanos === 0) return { callerChange: 0, targetChange: 0 };
    if (nanos > 0) {
      const expiry = days ? now + days * DAY_MS : null;
      // Owners mint credit; anyone else transfers it from its own balance, expiries included.
      const pieces = caller.isOwner ? [{ amount: nanos, expiresAt: expiry }] : capExpiry(await take(tx, caller.id, nanos, now), expiry);
      await tx.credit.give(target.id, pieces, caller.id, now);
      return { callerChange: caller.isOwner ? 0 : -nanos, targetChange: nanos };
    }
    const pieces = await take(tx, target.id, -nanos, now);
    await tx.credit.give(caller.id, pieces, caller.id, now);
    return { callerChange: -nanos, targetChange: nanos };
  }


  return {
    resolve: (caller: AccountRow, identifier: string, scope: Scope) => resolve(store, caller, identifier, scope),

    balanceNanos: (accountId: number) => store.credit.balance(accountId, deps.clock.now()),

    list(caller: AccountRow, scope: Scope, query: ListQuery) {
      return store.accounts.list(
        { within: within(caller, scope), id: query.id, level: query.level, nameContains: query.name, emailContains: query.email },
        query.order,
        query.page,
        query.size,
      );
    },

    async create(actor: Actor, input: AccountInput) {
      const caller = actor.account;
      if (!input.email) throw badRequest("Email is required", "Email");
      if (input.credit !== undefined && input.credit < 0) throw badRequest("CreditGranted must not be negative when creating an account", "CreditGranted");
      const issued = issueApiKey();
      const now = deps.clock.now();
      const result = await store.transaction(async (tx) => {
        const columns = columnsForCreate(await current(tx, caller), input);
        const account = await insertAccount(
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
        const credit = input.credit ? await applyCredit(tx, caller, account, input.credit, input.days) : { callerChange: 0, targetChange: 0 };
        return { account, credit };
      });
      if (result.credit.targetChange !== 0) creditChanged(caller.id, result.account.id);
      await deps.oplog.write({
        actorId: caller.id,
        action: "account.create",
        targetId: result.account.id,
        details: { email: result.account.email, name: result.account.name, credit: result.credit.targetChange / NANOS_PER_CREDIT },
        ip: actor.ip,
      });
      return { account: result.account, key: issued.key };
    },

    async update(actor: Actor, identifier: string, input: AccountInput) {
      const caller = actor.account;
      const result = await store.transaction(async (tx) => {
        const columns = columnsForUpdate(await current(tx, caller), input);
        const target = await resolve(tx, caller, identifier, "subtree");
        if (input.email !== undefined) await assertUnique(tx, "email", input.email, target.id);
        if (input.name !== undefined) await assertUnique(tx, "name", input.name, target.id);
        const account = Object.keys(columns).length > 0 ? await tx.accounts.update(target.id, { ...columns, updatedAt: deps.clock.now() }) : target;
        const credit = input.credit !== undefined ? await applyCredit(tx, caller, account, input.credit, input.days) : undefined;
        return { account, credit, columns };
      });
      // A write that changed nothing (an empty body, a zero credit) tells no cache and leaves no log row.
      if (Object.keys(result.columns).length === 0 && !result.credit?.targetChange) return result.account;
      await deps.bus.publish({ kind: "account", accountId: result.account.id });
      if (result.credit) creditChanged(caller.id, result.account.id);
      await deps.oplog.write({
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
      const named = await resolve(store, caller, identifier, "subtree");
      const heldBack = (await deps.heldCredit?.(named.id)) ?? 0;
      const now = deps.clock.now();
      const result = await store.transaction(async (tx) => {
        await current(tx, caller);
        const target = await resolve(tx, caller, identifier, "subtree");
        if (target.id !== named.id) throw conflict(`Account ${identifier} changed while it was being deleted; try again`, undefined, "account_changed");
        if (await tx.accounts.hasLiveChild(target.id)) throw conflict(`Account ${identifier} still has accounts under it; delete those first`, undefined, "has_descendants");
        // What is really left goes back to the parent, expiries kept: the balance less
        // what calls in flight reserved and charges not yet written, which stay to pay
        // for them (the rest follows when they end: `onDeleted`).
        const left = Math.max(0, (await tx.credit.balance(target.id, now)) - heldBack);
        const pieces = left > 0 ? await take(tx, target.id, left, now) : [];
        await tx.credit.give(target.parentId!, pieces, target.id, now);
        await tx.accounts.markDeleted(target.id, now, `deleted:${target.id}:${randomBase62(16)}`);
        return { target, returned: pieces.reduce((sum, p) => sum + p.amount, 0) };
      });
      await deps.bus.publish({ kind: "account", accountId: result.target.id });
      creditChanged(result.target.id, result.target.parentId);
      deps.onDeleted?.(result.target.id);
      await deps.oplog.write({
        actorId: caller.id,
        action: "account.delete",
        targetId: result.target.id,
        details: { email: result.target.email, creditReturned: result.returned / NANOS_PER_CREDIT },
        ip: actor.ip,
      });
      return result;
    },

    /** Applies one credit change to one account in its own transaction (batch entries are atomic one by one). */
    async creditOne(tx: Tx, caller: AccountRow, identifier: string, credits: number, days: number | undefined) {
      await current(tx, caller);
      const target = await resolve(tx, caller, identifier, "subtree");
      const before = await tx.credit.balance(target.id, deps.clock.now());
      const outcome = await applyCredit(tx, caller, target, credits, days);
      return { target, before, after: before + outcome.targetChange, outcome };
    },

    async rotateKey(actor: Actor, confirm: unknown) {
      const expected = `${deps.clock.businessDate()}-ROTATE-SELF`;
      if (typeof confirm !== "string" || confirm !== expected) {
        throw badRequest("confirm must be <YYYY-MM-DD>-ROTATE-SELF with today's server date", "confirm", "invalid_confirm");
      }
      const issued = issueApiKey();
      const now = deps.clock.now();
      // Only the key this request authenticated with is replaced: a second rotation that
      // was authenticated before the first one committed must not hand out a dead key.
      const rotated = await store.accounts.replaceKey(actor.account.id, actor.account.keyHash, issued.hash, issued.prefix, now);
      if (!rotated) throw unauthorized("Invalid API key", "invalid_api_key");
      await deps.bus.publish({ kind: "account", accountId: actor.account.id });
      await deps.oplog.write({ actorId: actor.account.id, action: "account.rotate_key", targetId: actor.account.id, details: { keyPrefix: issued.prefix }, ip: actor.ip });
      return issued;
    },

    transaction: <T>(body: (tx: Transaction) => Promise<T>) => store.transaction(body),
    creditChanged,
    log: deps.oplog,
  };
}

export type AccountsService = ReturnType<typeof createAccountsService>;

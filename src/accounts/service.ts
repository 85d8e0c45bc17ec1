import type { OperationLog } from "../admin/oplog/writer.ts";
import type { Clock } from "../core/clock.ts";
import { badRequest, conflict, HttpError, notFound, unauthorized } from "../core/errors.ts";
import { randomBase62 } from "../core/ids.ts";
import { rootIdOf } from "../store/account-root.ts";
import type { AccountOrder, AccountRow, AccountsWithin, Store, Transaction } from "../store/store.ts";
import { issueApiKey } from "./api-keys.ts";
import type { AccountInput } from "./input.ts";
import { capExpiry, take, type Held, type Tx } from "./ledger.ts";
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
/** How long a transfer waits for instances to give back blocks of credit reserved ahead: longer than one lasts (ALLOWANCE_MAX_MS). */
const BLOCKS_RETURN_MS = 1500;
const BLOCKS_POLL_MS = 20;
/** How long a credit change refused while calls held credit waits before its one more try. */
const HELD_RETRY_MS = 50;

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
  /**
   * Asks every instance to give back the blocks of the account's credit it reserved ahead
   * of its calls and did not use (allowances, several instances on Redis): part of what
   * `heldCredit` counts until then. Absent where nothing reserves ahead.
   */
  releaseCreditBlocks?: (accountId: number) => Promise<void>;
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

  /**
   * `{identifier}`: all digits is an ID, with `@` an email, else a name. Outside the scope it
   * does not exist. Looked up in the caller's tree (its scope is part of it), where emails
   * and names are unique: other trees may use the same ones.
   */
  async function resolve(tx: Tx, caller: AccountRow, identifier: string, scope: Scope): Promise<AccountRow> {
    const by = /^\d+$/.test(identifier) ? { id: Number(identifier) } : identifier.includes("@") ? { email: normaliseEmail(identifier) } : { name: identifier };
    const row = await tx.accounts.find(rootIdOf(caller.path), by);
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

  /**
   * Moves credit between caller and target inside the transaction (spec 4.2 credit rule).
   * `held`: what the calls of the account the credit comes from hold (`heldBy`, read
   * before the transaction): theirs to spend, not to give away.
   */
  async function applyCredit(tx: Tx, caller: AccountRow, target: AccountRow, credits: number, days: number | undefined, held?: Held): Promise<CreditOutcome> {
    const now = deps.clock.now();
    const nanos = Math.round(credits * NANOS_PER_CREDIT);
    if (nanos === 0) return { callerChange: 0, targetChange: 0 };
    if (nanos > 0) {
      const expiry = days ? now + days * DAY_MS : null;
      // Owners mint credit; anyone else transfers it from its own balance, expiries included.
      const pieces = caller.isOwner ? [{ amount: nanos, expiresAt: expiry }] : capExpiry(await take(tx, caller.id, nanos, now, held), expiry);
      await tx.credit.give(target.id, pieces, caller.id, now);
      return { callerChange: caller.isOwner ? 0 : -nanos, targetChange: nanos };
    }
    const pieces = await take(tx, target.id, -nanos, now, held);
    await tx.credit.give(caller.id, pieces, caller.id, now);
    return { callerChange: -nanos, targetChange: nanos };
  }

  /** The account a credit change takes from: the caller giving (an owner mints), the target deducted from. */
  const sourceOf = (caller: AccountRow, targetId: number, credits: number) => (credits > 0 ? (caller.isOwner ? undefined : caller.id) : credits < 0 ? targetId : undefined);

  /**
   * What the calls of `accountId` hold of its balance (0 without a State), asked before the
   * transaction (the State may be shared, so asynchronous). When only what they hold stands
   * between the balance and `needed` nano-credits, part of it may be blocks instances
   * reserved ahead and will not use: every instance is asked to give them back, and what
   * is held is read again until it no longer stands in the way, for as long as a block can
   * last at most. A call admitted in the moment between this read and the transaction is
   * not counted (it ends at most its own cost below zero, as concurrent calls do).
   */
  async function heldBy(accountId: number, needed: number): Promise<Held | undefined> {
    if (!deps.heldCredit) return undefined;
    const balance = () => store.credit.balance(accountId, deps.clock.now());
    // What is held first, the ledger after: a charge written between leaves both (see `stillHeld`).
    let held = await deps.heldCredit(accountId);
    let ledger = await balance();
    if (held === 0 || !deps.releaseCreditBlocks || ledger - held >= needed || ledger < needed) return { amount: held, ledger };
    await deps.releaseCreditBlocks(accountId);
    const until = performance.now() + BLOCKS_RETURN_MS;
    while (ledger - held < needed && ledger >= needed && performance.now() < until) {
      await Bun.sleep(BLOCKS_POLL_MS);
      held = await deps.heldCredit(accountId);
      ledger = await balance();
    }
    return { amount: held, ledger };
  }

  /**
   * Runs a credit change with what its source's calls hold (`held`, read again for each
   * try). Refused for lack of credit while they held some, it is tried once more a moment
   * later: a charge between its write to the ledger and its announcement to the State
   * counts in both meanwhile (a few milliseconds), and an account taking all that is left
   * right after a call must not be told its calls hold it.
   */
  async function withHeld<T>(held: () => Promise<Held | undefined>, run: (held: Held | undefined) => Promise<T>): Promise<T> {
    const first = await held();
    try {
      return await run(first);
    } catch (error) {
      if (!(error instanceof HttpError) || error.code !== "insufficient_credit" || !first || first.amount === 0) throw error;
      await Bun.sleep(HELD_RETRY_MS);
      return run(await held());
    }
  }
  /** What the source of a change of `credits` to `targetId` holds (see `heldBy`); `times` changes alike (a batch). */
  const heldForChange = async (caller: AccountRow, targetId: number, credits: number, times = 1) => {
    const source = sourceOf(caller, targetId, credits);
    return source === undefined ? undefined : heldBy(source, Math.abs(Math.round(credits * NANOS_PER_CREDIT)) * times);
  };


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
      const credits = input.credit;
      const result = await withHeld(async () => (credits ? heldForChange(caller, 0, credits) : undefined), (held) => store.transaction(async (tx) => {
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
        const credit = input.credit ? await applyCredit(tx, caller, account, input.credit, input.days, held) : { callerChange: 0, targetChange: 0 };
        return { account, credit };
      }));
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
      // What the calls of the account the credit comes from hold is asked first (see `heldBy`).
      // (A deduction's target is looked up for it; the transaction finds it again, and says what is wrong, in its own order.)
      const credit = input.credit ?? 0;
      const named = credit < 0 ? await resolve(store, caller, identifier, "subtree").catch(() => undefined) : undefined;
      const result = await withHeld(async () => (credit > 0 || named ? heldForChange(caller, named?.id ?? 0, credit) : undefined), (held) => store.transaction(async (tx) => {
        const columns = columnsForUpdate(await current(tx, caller), input);
        const target = await resolve(tx, caller, identifier, "subtree");
        if (named && target.id !== named.id) throw conflict(`Account ${identifier} changed while it was being updated; try again`, undefined, "account_changed");
        // The target is below the caller, never an owner: unique within its tree is the whole rule.
        if (input.email !== undefined) await assertUnique(tx, rootIdOf(target.path), "email", input.email, target.id);
        if (input.name !== undefined) await assertUnique(tx, rootIdOf(target.path), "name", input.name, target.id);
        const account = Object.keys(columns).length > 0 ? await tx.accounts.update(target.id, { ...columns, updatedAt: deps.clock.now() }) : target;
        const credit = input.credit !== undefined ? await applyCredit(tx, caller, account, input.credit, input.days, held) : undefined;
        return { account, credit, columns };
      }));
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

    /** What the calls of the account a batch entry takes from hold (see `heldBy`); `entries` of them take from the caller alike. */
    async heldForBatch(caller: AccountRow, targetId: number, credits: number, entries: number): Promise<Held | undefined> {
      // A deduction from an account outside the caller's subtree asks nothing of it (the entry is skipped as not found).
      if (credits < 0 && !(await resolve(store, caller, String(targetId), "subtree").catch(() => undefined))) return undefined;
      return heldForChange(caller, targetId, credits, credits > 0 ? entries : 1);
    },

    /** Applies one credit change to one account in its own transaction (batch entries are atomic one by one); `held` as `heldForBatch` says. */
    async creditOne(tx: Tx, caller: AccountRow, identifier: string, credits: number, days: number | undefined, held?: Held) {
      await current(tx, caller);
      const target = await resolve(tx, caller, identifier, "subtree");
      const before = await tx.credit.balance(target.id, deps.clock.now());
      const outcome = await applyCredit(tx, caller, target, credits, days, held);
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

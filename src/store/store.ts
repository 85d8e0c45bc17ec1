/**
 * The store seam (docs/architecture.md, "Store"): every read and write of the database
 * goes through these repositories, and nothing outside `src/store/` sees SQL, a driver
 * or a prepared statement. Every method returns a promise, so an implementation may
 * talk to a server (PostgreSQL); the embedded one runs on bun:sqlite.
 *
 * Rows in and out are plain values. Several writes that must commit together run in
 * `transaction`, whose body receives the same repositories bound to the transaction.
 */
import type { Logger } from "../core/log.ts";
import type { AccountRow, NewAccountRow } from "./schema/accounts.ts";
import type { UpstreamObjectRow } from "./schema/affinity.ts";
import type { NoticeRow } from "./schema/notices.ts";
import type { OperationLogRow } from "./schema/operation-log.ts";
import type { ProviderKeyRow } from "./schema/provider-keys.ts";
import type { NewRequestLogRow, RequestLogRow } from "./schema/request-log.ts";
import type { KeyHealthRow, NewKeyHealthRow } from "./schema/key-health.ts";
import type { NewUsageEventRow, UsageEventRow } from "./schema/usage.ts";
import type { IdempotencyRow } from "./schema/idempotency.ts";
import type { UsageBatchWriter, UsageStore } from "./usage-store.ts";

export type { AccountRow, NewAccountRow, NoticeRow, OperationLogRow, ProviderKeyRow, UpstreamObjectRow, NewUsageEventRow, UsageEventRow, NewRequestLogRow, RequestLogRow, KeyHealthRow, NewKeyHealthRow, IdempotencyRow };
export type CreditGrantRow = typeof import("./schema/accounts.ts").creditGrants.$inferSelect;
// The usage rows' repository and what goes with it (identities, claims, batches off the serving thread).
export * from "./usage-store.ts";

/** An amount of credit (nano-credits) with the expiry it carries. */
export interface Piece {
  amount: number;
  expiresAt: number | null;
}

/** Which accounts a list covers: the direct children of one, or everything below a path but the root. */
export type AccountsWithin = { parentId: number } | { path: string; exceptId: number };

export interface AccountFilter {
  within: AccountsWithin;
  id?: number;
  level?: number;
  /** Case-insensitive substring of the name. */
  nameContains?: string;
  /** Substring of the (lower-case) email. */
  emailContains?: string;
}

/** The orders an account list can take (`-` = descending). */
export const ACCOUNT_ORDERS = ["id", "-id", "name", "-name", "email", "-email", "created", "-created", "level", "-level"] as const;
export type AccountOrder = (typeof ACCOUNT_ORDERS)[number];

export interface Page<T> {
  rows: T[];
  total: number;
}

export interface AccountIdentity {
  id: number;
  name: string;
  alias: string | null;
  email: string;
}

export interface AccountStore {
  /** The live account holding this key hash. */
  byKeyHash(hash: string): Promise<AccountRow | undefined>;
  /** A live account by id. */
  byId(id: number): Promise<AccountRow | undefined>;
  /** An account by id, deleted or not. */
  anyById(id: number): Promise<AccountRow | undefined>;
  /**
   * A live account of the tree rooted at `rootId` (see `rootIdOf`) by exactly one of id,
   * email or name: emails and names are unique within a tree, not across trees.
   */
  find(rootId: number, by: { id: number } | { email: string } | { name: string }): Promise<AccountRow | undefined>;
  /** The id of the live account of the tree rooted at `rootId` using this email or name, if any. */
  liveIdWith(rootId: number, field: "email" | "name", value: string): Promise<number | undefined>;
  /** The id of the live owner using this email, if any: an address owns one tree at most. */
  liveOwnerIdWith(email: string): Promise<number | undefined>;
  countLive(): Promise<number>;
  list(filter: AccountFilter, order: AccountOrder, page: number, size: number): Promise<Page<AccountRow>>;
  /**
   * Inserts an account under `parentPath` (`""` for an owner: the root of a new tree) and
   * sets its materialised path and its root (the parent's, an owner's own id).
   */
  insert(values: Omit<NewAccountRow, "path" | "rootId">, parentPath: string): Promise<AccountRow>;
  update(id: number, columns: Partial<NewAccountRow>): Promise<AccountRow>;
  /** Replaces the key only while it is still `expectedHash`; false when it was not. */
  replaceKey(id: number, expectedHash: string, hash: string, prefix: string, now: number): Promise<boolean>;
  /** Marks the account deleted: it keeps its row (usage stays attributable) but loses its key. */
  markDeleted(id: number, now: number, deadKeyHash: string): Promise<void>;
  hasLiveChild(id: number): Promise<boolean>;
  /** Name, alias and email of the given accounts, deleted ones included. */
  identities(ids: readonly number[]): Promise<Map<number, AccountIdentity>>;
}

export interface LedgerBalance {
  balance: number;
  version: number;
  /** The grants with an expiry and credit left, soonest first: what leaves the balance when (nano-credits). */
  expiring: Array<{ at: number; remaining: number }>;
}

export interface CreditStore {
  /** Unexpired credit (nano-credits): positive grants less any debt. */
  balance(accountId: number, now: number): Promise<number>;
  /**
   * The balance, its expiring grants and the ledger's version as one read saw them: the
   * version is the newest usage row's id. Usage rows and their charges are written in one transaction, one transaction at
   * a time, so a read at version v holds the charges of every usage write that reached v.
   */
  ledgerBalance(accountId: number, now: number): Promise<LedgerBalance>;
  /**
   * Removes up to `amount` from the account's grants, the earliest expiry first (grants
   * without expiry last) and returns the pieces taken; `Infinity` takes everything.
   */
  take(accountId: number, amount: number, now: number): Promise<Piece[]>;
  /** Adds pieces as new grants. */
  give(accountId: number, pieces: readonly Piece[], grantedBy: number | null, now: number): Promise<void>;
  /** Charges consumption: draws from the grants that expire first; what they cannot cover becomes debt. */
  consume(accountId: number, amount: number, now: number): Promise<void>;
  /** Unexpired grants with credit left or owed, soonest expiry first. */
  grants(accountId: number, now: number): Promise<CreditGrantRow[]>;
  /** Clears the account's debt entries (its heir was charged instead). */
  clearDebt(accountId: number): Promise<void>;
}

export interface ProviderKeyFilter {
  id?: number;
  level?: number;
  /** Substring of the Provider URL. */
  provider?: string;
}

export type ProviderKeyValues = Partial<Omit<ProviderKeyRow, "id" | "tenantId" | "createdAt">>;

export interface SleepColumns {
  sleeping: boolean;
  sleepReason: string | null;
  sleepUntil: number | null;
  sleepCount: number;
}

/** Provider keys, always within one tenant. */
export interface ProviderKeyStore {
  list(tenantId: number, filter: ProviderKeyFilter, page: number, size: number): Promise<Page<ProviderKeyRow>>;
  all(tenantId: number): Promise<ProviderKeyRow[]>;
  get(tenantId: number, id: number): Promise<ProviderKeyRow | undefined>;
  create(tenantId: number, values: ProviderKeyValues & Pick<ProviderKeyRow, "level" | "provider" | "secretSealed" | "partialKey" | "status">, now: number): Promise<ProviderKeyRow>;
  update(tenantId: number, id: number, values: ProviderKeyValues, now: number): Promise<ProviderKeyRow | undefined>;
  delete(tenantId: number, id: number): Promise<boolean>;
  setSleep(tenantId: number, id: number, sleep: SleepColumns): Promise<void>;
  /** Every tenant's keys' `partialKey` as stored, by id: what the start-up sealing of clear ones reads. */
  storedPartialKeys(): Promise<Array<{ id: number; partialKey: string }>>;
  /**
   * Replaces a key's stored `partialKey` when it still is `from` (a concurrent rotation or
   * another instance's conversion wins); `updatedAt` stays, as nothing the owner set changed.
   */
  replacePartialKey(id: number, from: string, to: string): Promise<boolean>;
}

export interface SettingsStore {
  /** Every stored item of a tenant (values as stored: secrets sealed). */
  all(tenantId: number): Promise<Array<{ key: string; value: string }>>;
  put(tenantId: number, entries: ReadonlyArray<readonly [key: string, value: string]>, now: number): Promise<void>;
  remove(tenantId: number, keys: readonly string[]): Promise<void>;
}

export type NewNotice = Omit<NoticeRow, "id">;

export interface NoticeStore {
  create(notice: NewNotice): Promise<NoticeRow>;
  get(tenantId: number, id: number): Promise<NoticeRow | undefined>;
  remove(id: number): Promise<void>;
  /** Notices an author manages (with the system-wide ones when `withSystem`), newest first. */
  listManaged(tenantId: number, authorId: number, withSystem: boolean, page: number, size: number): Promise<Page<NoticeRow>>;
  /** Unexpired notices addressed to everyone or to one of `targetIds`, newest first, at most `limit`. */
  feed(tenantId: number, targetIds: readonly number[], now: number, limit: number): Promise<NoticeRow[]>;
}

export interface OperationFilter {
  /** Exact action, or a pattern where `*` matches any run of characters (case-sensitive). */
  action?: string;
  targetId?: number;
  /** Inclusive bounds, epoch ms. */
  since?: number;
  until?: number;
}

export interface OperationStore {
  write(row: Omit<OperationLogRow, "id">): Promise<void>;
  /** Newest first. */
  list(tenantId: number, filter: OperationFilter, page: number, size: number): Promise<Page<OperationLogRow>>;
}

/** Which request-log rows a list reads; every filter narrows (all of them hold together). */
export interface RequestLogFilter {
  tenantId: number;
  /** One account's calls. */
  accountId?: number;
  /** The calls of the accounts under this path, the account owning it included (a manager's subtree). */
  under?: string;
  /** The requested or the effective model. */
  model?: string;
  /** Inclusive status bounds: `429` is 429..429, `5xx` is 500..599. */
  statusFrom?: number;
  statusTo?: number;
  /** Calls any of whose attempts used this key, or this Level. */
  keyId?: number;
  level?: number;
  /** Inclusive bounds on when the call started, epoch ms. */
  since?: number;
  until?: number;
  requestId?: string;
}

/** The request log (one row per model call, docs/api.md "Request log"). */
export interface RequestLogStore {
  /** Stores rows; a row whose request id is stored already is left as it is (a batch written again). */
  append(rows: readonly NewRequestLogRow[]): Promise<void>;
  /** Newest first. */
  list(filter: RequestLogFilter, page: number, size: number): Promise<Page<RequestLogRow>>;
  get(tenantId: number, requestId: string): Promise<RequestLogRow | undefined>;
  /** Removes the rows of calls that started before `before` (ms); returns how many. */
  prune(before: number): Promise<number>;
}

/** Provider keys' health figures (docs/api.md, "Key health"), added to by every instance's usage recorder. */
export interface KeyHealthStore {
  /**
   * Adds a batch's figures, one row per key: counts of the row's day are added to the
   * stored ones of the same day, replace those of an older day, and are dropped for an
   * older day than stored; a later last error or success replaces the stored one.
   */
  add(rows: readonly NewKeyHealthRow[]): Promise<void>;
  /** The rows of a tenant's keys. */
  ofTenant(tenantId: number): Promise<KeyHealthRow[]>;
}

export interface UpstreamObjectStore {
  /**
   * Binds an object (its account made it again: the row is replaced); false, and nothing
   * written, when another account holds the id (two upstreams numbering their objects alike).
   */
  put(row: UpstreamObjectRow): Promise<boolean>;
  get(objectId: string): Promise<UpstreamObjectRow | undefined>;
  remove(objectId: string): Promise<void>;
  /** Objects of a kind an account created (any order). */
  ownedBy(accountId: number, kind: string): Promise<UpstreamObjectRow[]>;
}

/** How long the answer of a request sent with an `Idempotency-Key` is kept for its retries. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

/** A management write's claim on its `Idempotency-Key` (src/http/idempotency.ts). */
export interface IdempotencyClaim {
  accountId: number;
  key: string;
  fingerprint: string;
  createdAt: number;
}

/** The answer a claimed request ended with. */
export interface IdempotentAnswer {
  status: number;
  contentType: string | null;
  body: string | null;
  secret: boolean;
}

export interface IdempotencyStore {
  /**
   * Claims the account's key for a request: undefined when this call claimed it (no row,
   * or only one created before `expiredBefore`, which is replaced); else the row that
   * holds it (status 0 while its request runs).
   */
  claim(claim: IdempotencyClaim, expiredBefore: number): Promise<IdempotencyRow | undefined>;
  /** Keeps the answer of the request that claimed the key. */
  complete(accountId: number, key: string, answer: IdempotentAnswer): Promise<void>;
  /** Gives a claim up (its request failed on the server's side: a retry runs it again). */
  release(accountId: number, key: string): Promise<void>;
  /** Removes rows created before `before` (ms); resolves with how many. */
  prune(before: number): Promise<number>;
}

export interface SoftLimitMailStore {
  wasSent(accountId: number, month: string): Promise<boolean>;
  markSent(accountId: number, month: string, at: number, recipient: string): Promise<void>;
}

/** The repositories, outside or inside a transaction. */
export interface Repositories {
  readonly accounts: AccountStore;
  readonly credit: CreditStore;
  readonly providerKeys: ProviderKeyStore;
  readonly settings: SettingsStore;
  readonly notices: NoticeStore;
  readonly operations: OperationStore;
  readonly usage: UsageStore;
  readonly requests: RequestLogStore;
  readonly keyHealth: KeyHealthStore;
  readonly objects: UpstreamObjectStore;
  readonly softLimitMail: SoftLimitMailStore;
  readonly idempotency: IdempotencyStore;
}

/** The repositories of an open transaction. */
export interface Transaction extends Repositories {
  /** Runs `body` so that, when it throws, what it wrote is undone and the rest of the transaction stays. */
  savepoint<T>(body: () => Promise<T>): Promise<T>;
}

export interface Store extends Repositories {
  /**
   * Runs `body` in one write transaction: its repository calls commit together, or
   * none does when it throws. The body awaits only the store (it holds the writer), and
   * uses the repositories it is given, never the store's own.
   */
  transaction<T>(body: (tx: Transaction) => Promise<T>): Promise<T>;
  /** True once another process (e.g. `router owner create`) committed since the last call. */
  changedElsewhere(): boolean;
  /**
   * True when `error` is the database refusing a value it was given (a number out of
   * range, a character it cannot store, a required value missing), not a fault of the
   * connection or the database: the same rows would be refused again.
   */
  refusedRow(error: unknown): boolean;
  /**
   * True when `error` says the database could not be reached or went away (a refused or
   * dropped connection, a server shutting down or starting up): the same request may
   * succeed in a moment. Never for the embedded file.
   */
  unavailable(error: unknown): boolean;
  /**
   * True when `error` says another process held the database's write lock past the wait
   * (the embedded file: SQLite's `database is locked`): the same request may succeed once
   * it lets go. Never for PostgreSQL, whose writers queue for their rows.
   */
  busy(error: unknown): boolean;
  /** Starts the engine's background upkeep (SQLite: WAL checkpoints); returns how to stop it. */
  startUpkeep(log: Logger): () => Promise<void>;
  /**
   * Where batches of usage rows are written off the serving thread, while there is such a
   * place (SQLite: the upkeep thread, once it runs); undefined otherwise, and the usage
   * writer then writes them in a `transaction` of its own.
   */
  usageBatches(): UsageBatchWriter | undefined;
  close(): void;
}

import { and, asc, between, eq, gt, gte, inArray, lt, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../store/db.ts";
import { accounts } from "../../store/schema/accounts.ts";
import { usageDaily } from "../../store/schema/usage.ts";
import type { DateRange } from "./dates.ts";

/** Summed counters of usage_daily rows (tokens as in `Usage`; cost in nano-credits). */
export interface UsageSums {
  requests: number;
  prompt: number;
  completion: number;
  reasoning: number;
  cacheRead: number;
  cacheWrite: number;
  costNanos: number;
}

/**
 * Whose usage a report reads: one account, or the accounts under a path (the
 * account owning the path itself included or not). Deleted accounts keep their row
 * and path, so their usage stays in their ancestors' reports.
 */
export type Audience = { accountId: number } | { path: string; includeRoot: boolean };

export const ZERO_SUMS: Readonly<UsageSums> = Object.freeze({
  requests: 0,
  prompt: 0,
  completion: 0,
  reasoning: 0,
  cacheRead: 0,
  cacheWrite: 0,
  costNanos: 0,
});

export function addSums<T extends UsageSums>(into: T, add: UsageSums): T {
  into.requests += add.requests;
  into.prompt += add.prompt;
  into.completion += add.completion;
  into.reasoning += add.reasoning;
  into.cacheRead += add.cacheRead;
  into.cacheWrite += add.cacheWrite;
  into.costNanos += add.costNanos;
  return into;
}

const SUMS = {
  requests: sql<number>`sum(${usageDaily.requests})`.mapWith(Number),
  prompt: sql<number>`sum(${usageDaily.promptTokens})`.mapWith(Number),
  completion: sql<number>`sum(${usageDaily.completionTokens})`.mapWith(Number),
  reasoning: sql<number>`sum(${usageDaily.reasoningTokens})`.mapWith(Number),
  cacheRead: sql<number>`sum(${usageDaily.cacheReadTokens})`.mapWith(Number),
  cacheWrite: sql<number>`sum(${usageDaily.cacheWriteTokens})`.mapWith(Number),
  costNanos: sql<number>`sum(${usageDaily.costNanos})`.mapWith(Number),
};

/**
 * Accounts whose path starts with `path`, as an index range scan: paths are digits
 * and slashes and end in `/`, and `0` is the character after `/`, so every path with
 * the prefix `/1/4/` lies in [`/1/4/`, `/1/40`).
 */
function pathCondition(path: string, includeRoot: boolean): SQL {
  const upper = `${path.slice(0, -1)}0`;
  return and(includeRoot ? gte(accounts.path, path) : gt(accounts.path, path), lt(accounts.path, upper))!;
}

function where(db: Db, audience: Audience, range: DateRange): SQL {
  const days = between(usageDaily.day, range.start, range.end);
  if ("accountId" in audience) return and(eq(usageDaily.accountId, audience.accountId), days)!;
  const members = db.select({ id: accounts.id }).from(accounts).where(pathCondition(audience.path, audience.includeRoot));
  return and(inArray(usageDaily.accountId, members), days)!;
}

/** Totals per business date and effective model. */
export function sumsByDayModel(db: Db, audience: Audience, range: DateRange): Array<UsageSums & { day: string; model: string }> {
  return db
    .select({ day: usageDaily.day, model: usageDaily.model, ...SUMS })
    .from(usageDaily)
    .where(where(db, audience, range))
    .groupBy(usageDaily.day, usageDaily.model)
    .orderBy(asc(usageDaily.day), asc(usageDaily.model))
    .all();
}

/** Totals per effective model over the range. */
export function sumsByModel(db: Db, audience: Audience, range: DateRange): Array<UsageSums & { model: string }> {
  return db
    .select({ model: usageDaily.model, ...SUMS })
    .from(usageDaily)
    .where(where(db, audience, range))
    .groupBy(usageDaily.model)
    .orderBy(asc(usageDaily.model))
    .all();
}

export interface AccountIdentity {
  id: number;
  name: string;
  alias: string | null;
  email: string;
}

/** Name, alias and email of the given accounts, deleted ones included. */
export function identities(db: Db, ids: number[]): Map<number, AccountIdentity> {
  const found = new Map<number, AccountIdentity>();
  for (let i = 0; i < ids.length; i += 500) {
    const rows = db
      .select({ id: accounts.id, name: accounts.name, alias: accounts.alias, email: accounts.email })
      .from(accounts)
      .where(inArray(accounts.id, ids.slice(i, i + 500)))
      .all();
    for (const row of rows) found.set(row.id, row);
  }
  return found;
}

/** One rollup row: an account's totals for one business date and effective model. */
export type RollupRow = UsageSums & { accountId: number; day: string; model: string };

type RawRollup = [number, string, string, number, number, number, number, number, number, number];

/**
 * The rollup rows of an audience over a range, unaggregated: a report that needs
 * several groupings (by day and model, by account and model) reads them once and
 * sums in memory, which over months of data is cheaper than one GROUP BY per grouping.
 */
export function rollupRows(db: Db, audience: Audience, range: DateRange): RollupRow[] {
  const columns =
    "account_id, day, model, requests, prompt_tokens, completion_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens, cost_nanos";
  const byAccount = "accountId" in audience;
  const sqlText = byAccount
    ? `SELECT ${columns} FROM usage_daily WHERE account_id = ? AND day BETWEEN ? AND ?`
    : `SELECT ${columns} FROM usage_daily WHERE account_id IN (SELECT id FROM accounts WHERE path ${audience.includeRoot ? ">=" : ">"} ? AND path < ?) AND day BETWEEN ? AND ?`;
  const params = byAccount
    ? [audience.accountId, range.start, range.end]
    : [audience.path, `${audience.path.slice(0, -1)}0`, range.start, range.end];
  const raw = db.$client.query<RawRollup, (string | number)[]>(sqlText).values(...params) as RawRollup[];
  return raw.map(([accountId, day, model, requests, prompt, completion, reasoning, cacheRead, cacheWrite, costNanos]) => ({
    accountId,
    day,
    model,
    requests,
    prompt,
    completion,
    reasoning,
    cacheRead,
    cacheWrite,
    costNanos,
  }));
}

/** Sums rollup rows under a key, keeping the first row's key fields. */
function groupRows<K extends object>(rows: readonly RollupRow[], keyOf: (row: RollupRow) => string, pick: (row: RollupRow) => K): Array<UsageSums & K> {
  const groups = new Map<string, UsageSums & K>();
  for (const row of rows) {
    const key = keyOf(row);
    let group = groups.get(key);
    if (!group) {
      group = { ...ZERO_SUMS, ...pick(row) };
      groups.set(key, group);
    }
    addSums(group, row);
  }
  return [...groups.values()];
}

export function groupByDayModel(rows: readonly RollupRow[]): Array<UsageSums & { day: string; model: string }> {
  return groupRows(rows, (r) => `${r.day}\u0000${r.model}`, (r) => ({ day: r.day, model: r.model })).sort(
    (a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : a.model < b.model ? -1 : a.model > b.model ? 1 : 0),
  );
}

export function groupByAccountModel(rows: readonly RollupRow[]): Array<UsageSums & { accountId: number; model: string }> {
  return groupRows(rows, (r) => `${r.accountId}\u0000${r.model}`, (r) => ({ accountId: r.accountId, model: r.model }));
}

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

/** Totals per account and effective model over the range. */
export function sumsByAccountModel(db: Db, audience: Audience, range: DateRange): Array<UsageSums & { accountId: number; model: string }> {
  return db
    .select({ accountId: usageDaily.accountId, model: usageDaily.model, ...SUMS })
    .from(usageDaily)
    .where(where(db, audience, range))
    .groupBy(usageDaily.accountId, usageDaily.model)
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

import { and, asc, eq, gt, inArray, sql, type SQL } from "drizzle-orm";
import { accounts } from "../schema/accounts.ts";
import { usageDaily, usageEvents } from "../schema/usage.ts";
import { claimChargesOf, claimChargesText, usageRowIdentity, type Audience, type RollupRow, type UsageStore } from "../store.ts";
import type { Connection } from "./connection.ts";
import { pathsUnder, pathUpperBound, periodDays } from "../key-ranges.ts";
import type { Synchronous } from "./synchronous.ts";
import type { SqlValue } from "../row-values.ts";
import { newestUsageId, rollupAdder, usageEventInserter } from "./usage-statements.ts";

const PERIOD_COLUMN = {
  requests: sql<number>`coalesce(sum(${usageDaily.requests}), 0)`,
  tokens: sql<number>`coalesce(sum(${usageDaily.promptTokens} + ${usageDaily.completionTokens}), 0)`,
  cost: sql<number>`coalesce(sum(${usageDaily.costNanos}), 0)`,
  spent: sql<number>`coalesce(sum(${usageDaily.costNanos}), 0)`,
};

const SUMS = {
  requests: sql<number>`sum(${usageDaily.requests})`.mapWith(Number),
  prompt: sql<number>`sum(${usageDaily.promptTokens})`.mapWith(Number),
  completion: sql<number>`sum(${usageDaily.completionTokens})`.mapWith(Number),
  reasoning: sql<number>`sum(${usageDaily.reasoningTokens})`.mapWith(Number),
  cacheRead: sql<number>`sum(${usageDaily.cacheReadTokens})`.mapWith(Number),
  cacheWrite: sql<number>`sum(${usageDaily.cacheWriteTokens})`.mapWith(Number),
  costNanos: sql<number>`sum(${usageDaily.costNanos})`.mapWith(Number),
};

type RawRollup = [number, string, string, number, number, number, number, number, number, number];

export function sqliteUsage({ db, sqlite }: Connection): Synchronous<UsageStore> {
  // Prepared statements on the raw connection (usage-statements.ts): the query builder cost more per row than SQLite did.
  const insert = usageEventInserter(sqlite);
  const addRollups = rollupAdder(sqlite);
  const latestId = newestUsageId(sqlite);
  const membersUnder = (path: string) => db.select({ id: accounts.id }).from(accounts).where(pathsUnder(accounts.path, path));
  const recordClaim = sqlite.prepare<unknown, SqlValue[]>("INSERT INTO usage_claim_writes (claim, charged, version, created_at) VALUES (?, ?, ?, ?)");
  const claimWritten = sqlite.prepare<{ charged: string; version: number | null }, [string]>("SELECT charged, version FROM usage_claim_writes WHERE claim = ?");
  const forgetClaim = sqlite.prepare<unknown, [string]>("DELETE FROM usage_claim_writes WHERE claim = ?");
  const forgetBefore = sqlite.prepare<unknown, [number]>("DELETE FROM usage_claim_writes WHERE created_at < ?");
  const forgetCopiesBefore = sqlite.prepare<unknown, [number]>("DELETE FROM usage_copies WHERE written_at < ?");
  const forgetClaims = sqlite.transaction((claims: readonly string[], before: number) => {
    for (const claim of claims) forgetClaim.run(claim);
    forgetBefore.run(before);
    if (before > 0) forgetCopiesBefore.run(before);
  });
  const markCopy = sqlite.prepare<unknown, [string, number, string, number, string, number]>(
    "INSERT INTO usage_copies (request_id, created_at, endpoint, status, writer, written_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
  );
  const copyWriter = sqlite.prepare<{ writer: string }, [string, number, string, number]>(
    "SELECT writer FROM usage_copies WHERE request_id = ? AND created_at = ? AND endpoint = ? AND status = ?",
  );

  return {
    insert: (rows) => insert(rows),
    addRollups: (rollups) => addRollups(rollups),
    recordClaim(claim, written, now, forget = []) {
      for (const id of forget) forgetClaim.run(id);
      recordClaim.run(claim, claimChargesText(written.charged), written.version ?? null, now);
    },
    claimWritten(claim) {
      const row = claimWritten.get(claim);
      return row ? { charged: claimChargesOf(row.charged), version: row.version ?? undefined } : undefined;
    },
    forgetClaims: (claims, before) => forgetClaims(claims, before),
    markCopies(rows, writer, now) {
      for (const row of rows) markCopy.run(row.requestId, row.createdAt, row.endpoint, row.status, writer, now);
    },
    copyWriters(rows) {
      const writers = new Map<string, string>();
      for (const row of rows) {
        const found = copyWriter.get(row.requestId, row.createdAt, row.endpoint, row.status);
        if (found) writers.set(usageRowIdentity(row), found.writer);
      }
      return writers;
    },
    periodTotal(of, period) {
      const parts: SQL[] = [periodDays(usageDaily.day, period)];
      if ("subtreePath" in of) {
        // Every account whose path starts with the root's, deleted ones included.
        parts.push(inArray(usageDaily.accountId, membersUnder(of.subtreePath)));
      } else {
        if (of.accountId !== undefined) parts.push(eq(usageDaily.accountId, of.accountId));
        // A BYOK tenant's model totals count only its own accounts.
        else if (of.tenantRoot !== undefined) parts.push(inArray(usageDaily.accountId, membersUnder(`/${of.tenantRoot}/`)));
        if (of.model !== undefined) parts.push(eq(usageDaily.model, of.model));
      }
      return db.select({ value: PERIOD_COLUMN[of.measure] }).from(usageDaily).where(and(...parts)).get()?.value ?? 0;
    },
    rollups(audience, range) {
      const columns =
        "account_id, day, model, requests, prompt_tokens, completion_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens, cost_nanos";
      const byAccount = "accountId" in audience;
      const sqlText = byAccount
        ? `SELECT ${columns} FROM usage_daily WHERE account_id = ? AND day BETWEEN ? AND ?`
        : `SELECT ${columns} FROM usage_daily WHERE account_id IN (SELECT id FROM accounts WHERE path ${audience.includeRoot ? ">=" : ">"} ? AND path < ?) AND day BETWEEN ? AND ?`;
      const params = byAccount ? [audience.accountId, range.start, range.end] : [audience.path, pathUpperBound(audience.path), range.start, range.end];
      const raw = sqlite.query<RawRollup, (string | number)[]>(sqlText).values(...params) as RawRollup[];
      return raw.map(([accountId, day, model, requests, prompt, completion, reasoning, cacheRead, cacheWrite, costNanos]): RollupRow => ({
        accountId, day, model, requests, prompt, completion, reasoning, cacheRead, cacheWrite, costNanos,
      }));
    },
    events: (afterId, limit) => db.select().from(usageEvents).where(gt(usageEvents.id, afterId)).orderBy(asc(usageEvents.id)).limit(limit).all(),
    // Prepared: built by the query builder each time, this took about 110 µs of the serving thread per usage write (timed inside the router at c=1).
    latestId,
    sumsByModel(audience, range) {
      return db
        .select({ model: usageDaily.model, ...SUMS })
        .from(usageDaily)
        .where(audienceCondition(db, audience, range))
        .groupBy(usageDaily.model)
        .orderBy(asc(usageDaily.model))
        .all();
    },
  };
}

function audienceCondition(db: Connection["db"], audience: Audience, range: { start: string; end: string }): SQL {
  const days = sql`${usageDaily.day} BETWEEN ${range.start} AND ${range.end}`;
  if ("accountId" in audience) return and(eq(usageDaily.accountId, audience.accountId), days)!;
  const path = sql`${accounts.path} ${sql.raw(audience.includeRoot ? ">=" : ">")} ${audience.path} AND ${accounts.path} < ${pathUpperBound(audience.path)}`;
  return and(inArray(usageDaily.accountId, db.select({ id: accounts.id }).from(accounts).where(path)), days)!;
}

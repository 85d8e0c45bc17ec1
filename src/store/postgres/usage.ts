import { and, asc, eq, gt, inArray, like, ne, sql, type SQL } from "drizzle-orm";
import { claimChargesOf, claimChargesText, rowsWritten, usageRowIdentity, USAGE_IDENTITY_COLUMNS, type Audience, type DayRange, type RollupRow, type UsageStore } from "../store.ts";
import type { Db, Scope } from "./db.ts";
import { periodDays } from "../key-ranges.ts";
import { appendUsageEventValues, memoized, multiRowInsert, USAGE_EVENT_COLUMNS, type SqlValue } from "../row-values.ts";
import { jsonInsert, storable } from "./json-insert.ts";
import { accounts } from "./schema/accounts.ts";
import { usageClaimWrites, usageDaily, usageEvents } from "./schema/usage.ts";


// sum() of int8 is numeric, which the driver hands over as a string.
const total = (expression: SQL) => sql<number>`coalesce(sum(${expression}), 0)`.mapWith(Number);

const PERIOD_COLUMN = {
  requests: total(sql`${usageDaily.requests}`),
  tokens: total(sql`${usageDaily.promptTokens} + ${usageDaily.completionTokens}`),
  cost: total(sql`${usageDaily.costNanos}`),
  spent: total(sql`${usageDaily.costNanos}`),
};

const SUMS = {
  requests: total(sql`${usageDaily.requests}`),
  prompt: total(sql`${usageDaily.promptTokens}`),
  completion: total(sql`${usageDaily.completionTokens}`),
  reasoning: total(sql`${usageDaily.reasoningTokens}`),
  cacheRead: total(sql`${usageDaily.cacheReadTokens}`),
  cacheWrite: total(sql`${usageDaily.cacheWriteTokens}`),
  costNanos: total(sql`${usageDaily.costNanos}`),
};

/** Models order by code point, as on SQLite, whatever the database's collation. */
const modelOrder = sql`${usageDaily.model} COLLATE "C"`;

/**
 * One row per account, day and model: an upsert may not touch a row twice in one
 * statement, and a batch can carry several sums for one key. Sorted, so concurrent
 * batches lock rows in the same order.
 */
function merged(rollups: Iterable<RollupRow>): RollupRow[] {
  const byKey = new Map<string, RollupRow>();
  for (const r of rollups) {
    // Models that differ only in what PostgreSQL cannot store are one row there.
    const model = storable(r.model);
    const key = `${r.accountId}\u0000${r.day}\u0000${model}`;
    const sum = byKey.get(key);
    if (!sum) {
      byKey.set(key, { ...r, model });
      continue;
    }
    sum.requests += r.requests;
    sum.prompt += r.prompt;
    sum.completion += r.completion;
    sum.reasoning += r.reasoning;
    sum.cacheRead += r.cacheRead;
    sum.cacheWrite += r.cacheWrite;
    sum.costNanos += r.costNanos;
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
}

/** Subtree audiences by path prefix (paths are digits and slashes: nothing to escape); LIKE means the same under any collation. */
function audienceMembers(db: Db, audience: Exclude<Audience, { accountId: number }>) {
  const under = like(accounts.path, `${audience.path}%`);
  return db
    .select({ id: accounts.id })
    .from(accounts)
    .where(audience.includeRoot ? under : and(under, ne(accounts.path, audience.path)));
}

function audienceCondition(db: Db, audience: Audience, range: DayRange): SQL {
  const days = sql`${usageDaily.day} BETWEEN ${range.start} AND ${range.end}`;
  if ("accountId" in audience) return and(eq(usageDaily.accountId, audience.accountId), days)!;
  return and(inArray(usageDaily.accountId, audienceMembers(db, audience)), days)!;
}

const insertEvents = jsonInsert(usageEvents, USAGE_EVENT_COLUMNS, appendUsageEventValues, ` ON CONFLICT DO NOTHING RETURNING ${USAGE_IDENTITY_COLUMNS}`);

const ROLLUP_COLUMNS = ["account_id", "day", "model", "requests", "prompt_tokens", "completion_tokens", "reasoning_tokens", "cache_read_tokens", "cache_write_tokens", "cost_nanos"];
const upsertRollups = memoized(
  (rows) =>
    `${multiRowInsert("usage_daily", ROLLUP_COLUMNS, rows, "$")} ON CONFLICT (account_id, day, model) DO UPDATE SET ${ROLLUP_COLUMNS.slice(3)
      .map((column) => `${column} = usage_daily.${column} + excluded.${column}`)
      .join(", ")}`,
);

export function postgresUsage({ db, atomic }: Scope): UsageStore {
  const membersUnder = (path: string) => audienceMembers(db, { path, includeRoot: true });
  return {
    insert: async (rows) => (rows.length === 0 ? [] : rowsWritten(rows, await atomic((_db, client) => insertEvents(client, rows)))),
    // One statement (a round trip less in every claim's transaction): the notes dropped, the new one added.
    recordClaim: (claim, written, now, forget = []) =>
      atomic(async (_db, client) => {
        await client.unsafe(
          `WITH forgotten AS (DELETE FROM usage_claim_writes WHERE claim IN (SELECT json_array_elements_text($5::text::json)))
           INSERT INTO usage_claim_writes (claim, charged, version, created_at) VALUES ($1, $2, $3, $4)`,
          [claim, claimChargesText(written.charged), written.version ?? null, now, JSON.stringify(forget)],
        );
      }),
    async claimWritten(claim) {
      const [row] = await db.select().from(usageClaimWrites).where(eq(usageClaimWrites.claim, claim));
      return row ? { charged: claimChargesOf(row.charged), version: row.version ?? undefined } : undefined;
    },
    forgetClaims: (claims, before) =>
      atomic(async (_db, client) => {
        await client.unsafe("DELETE FROM usage_claim_writes WHERE claim IN (SELECT json_array_elements_text($1::text::json)) OR created_at < $2", [JSON.stringify(claims), before]);
        if (before > 0) await client.unsafe("DELETE FROM usage_copies WHERE written_at < $1", [before]);
      }),
    markCopies: (rows, writer, now) =>
      atomic(async (_db, client) => {
        if (rows.length === 0) return;
        await client.unsafe(
          `INSERT INTO usage_copies (request_id, created_at, endpoint, status, writer, written_at)
           SELECT request_id, created_at, endpoint, status, $2, $3 FROM json_to_recordset($1::text::json) AS r(request_id text, created_at int8, endpoint text, status integer)
           ON CONFLICT DO NOTHING`,
          [JSON.stringify(rows.map((row) => ({ request_id: storable(row.requestId), created_at: row.createdAt, endpoint: storable(row.endpoint), status: row.status }))), writer, now],
        );
      }),
    async copyWriters(rows) {
      const writers = new Map<string, string>();
      if (rows.length === 0) return writers;
      const found = (await atomic((_db, client) =>
        client
          .unsafe("SELECT request_id, created_at, endpoint, status, writer FROM usage_copies WHERE request_id IN (SELECT json_array_elements_text($1::text::json))", [
            JSON.stringify([...new Set(rows.map((row) => storable(row.requestId)))]),
          ])
          .values(),
      )) as Array<[string, number | string, string, number, string]>;
      const byIdentity = new Map(found.map(([requestId, createdAt, endpoint, status, writer]) => [usageRowIdentity({ requestId, createdAt: Number(createdAt), endpoint, status }), writer]));
      for (const row of rows) {
        const identity = usageRowIdentity({ ...row, requestId: storable(row.requestId), endpoint: storable(row.endpoint) });
        const writer = byIdentity.get(identity);
        if (writer !== undefined) writers.set(usageRowIdentity(row), writer);
      }
      return writers;
    },
    addRollups: (rollups) =>
      atomic(async (_db, client) => {
        const sums = merged(rollups);
        if (sums.length === 0) return;
        const values: SqlValue[] = [];
        for (const r of sums) values.push(r.accountId, r.day, r.model, r.requests, r.prompt, r.completion, r.reasoning, r.cacheRead, r.cacheWrite, r.costNanos);
        await client.unsafe(upsertRollups(sums.length), values);
      }),
    async periodTotal(of, period) {
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
      const [row] = await db.select({ value: PERIOD_COLUMN[of.measure] }).from(usageDaily).where(and(...parts));
      return row?.value ?? 0;
    },
    rollups: (audience, range) =>
      db
        .select({
          accountId: usageDaily.accountId, day: usageDaily.day, model: usageDaily.model, requests: usageDaily.requests,
          prompt: usageDaily.promptTokens, completion: usageDaily.completionTokens, reasoning: usageDaily.reasoningTokens,
          cacheRead: usageDaily.cacheReadTokens, cacheWrite: usageDaily.cacheWriteTokens, costNanos: usageDaily.costNanos,
        })
        .from(usageDaily)
        .where(audienceCondition(db, audience, range))
        // SQLite hands them over in primary-key order; so does this.
        .orderBy(asc(usageDaily.accountId), asc(usageDaily.day), asc(modelOrder)),
    events: (afterId, limit) => db.select().from(usageEvents).where(gt(usageEvents.id, afterId)).orderBy(asc(usageEvents.id)).limit(limit),
    async latestId() {
      const [row] = await db.select({ id: sql<number>`coalesce(max(${usageEvents.id}), 0)`.mapWith(Number) }).from(usageEvents);
      return row?.id ?? 0;
    },
    sumsByModel: (audience, range) =>
      db
        .select({ model: usageDaily.model, ...SUMS })
        .from(usageDaily)
        .where(audienceCondition(db, audience, range))
        .groupBy(usageDaily.model)
        .orderBy(asc(modelOrder)),
  };
}

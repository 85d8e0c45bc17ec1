import { expect } from "bun:test";

/**
 * A database from before the usage rows' unique identity, holding a call stored twice
 * (and a failed attempt stored twice): the statements that seed it, in SQL both dialects
 * take, and what the migration must leave. Shared by the SQLite and PostgreSQL migration tests.
 */
const row = (requestId: string, createdAt: number, status: number, accountId: number, cost: number, tokens: [number, number]) =>
  `('${requestId}', ${accountId}, '2026-11-01', ${createdAt}, '/v1/chat/completions', 'm', ${status}, 'upstream', 5, ${tokens[0]}, ${tokens[1]}, ${cost})`;

export const USAGE_REPEATS_SEED = [
  `INSERT INTO usage_events (request_id, account_id, day, created_at, endpoint, effective_model, status, source, latency_ms, prompt_tokens, completion_tokens, cost_nanos) VALUES ${[
    row("req_a", 1000, 200, 5, 700, [10, 5]),
    row("req_b", 2000, 502, 5, 0, [0, 0]),
    row("req_a", 1000, 200, 5, 700, [10, 5]),
    row("req_b", 2000, 502, 5, 0, [0, 0]),
    row("req_c", 3000, 200, 6, 300, [1, 1]),
    // A realtime session's two responses: one request id, two starts.
    row("sess", 4000, 200, 6, 100, [1, 1]),
    row("sess", 4001, 200, 6, 100, [1, 1]),
  ].join(", ")}`,
  "INSERT INTO usage_daily (account_id, day, model, requests, prompt_tokens, completion_tokens, cost_nanos) VALUES (5, '2026-11-01', 'm', 2, 20, 10, 1400), (6, '2026-11-01', 'm', 3, 3, 3, 500)",
  "INSERT INTO credit_grants (account_id, amount, remaining, created_at) VALUES (5, 10000, 8600, 1)",
];

type Query = (text: string) => Promise<Array<Record<string, unknown>>>;

/** Each call once, the rollups without the repeat, its charge given back, and the identity unique from now on. */
export async function expectRepeatsRemoved(query: Query): Promise<void> {
  const numbers = (rows: Array<Record<string, unknown>>) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === "string" && /^\d+$/.test(v) ? Number(v) : v])));
  expect(numbers(await query("SELECT request_id, created_at, status FROM usage_events ORDER BY id"))).toEqual([
    { request_id: "req_a", created_at: 1000, status: 200 },
    { request_id: "req_b", created_at: 2000, status: 502 },
    { request_id: "req_c", created_at: 3000, status: 200 },
    { request_id: "sess", created_at: 4000, status: 200 },
    { request_id: "sess", created_at: 4001, status: 200 },
  ]);
  expect(numbers(await query("SELECT account_id, requests, prompt_tokens, completion_tokens, cost_nanos FROM usage_daily ORDER BY account_id"))).toEqual([
    { account_id: 5, requests: 1, prompt_tokens: 10, completion_tokens: 5, cost_nanos: 700 },
    { account_id: 6, requests: 3, prompt_tokens: 3, completion_tokens: 3, cost_nanos: 500 },
  ]);
  // The repeat charged 700 once too many: it comes back, and nothing to the account charged right.
  expect(numbers(await query("SELECT account_id, sum(remaining) AS remaining FROM credit_grants GROUP BY account_id ORDER BY account_id"))).toEqual([{ account_id: 5, remaining: 9300 }]);
  expect(numbers(await query("SELECT count(*) AS n FROM credit_grants WHERE expires_at IS NULL AND granted_by IS NULL AND amount = 700 AND created_at > 1"))).toEqual([{ n: 1 }]);
  await expect(query(USAGE_REPEATS_SEED[0]!.split("VALUES")[0] + "VALUES ('req_c', 6, '2026-11-01', 3000, '/v1/chat/completions', 'm', 200, 'upstream', 5, 1, 1, 300)")).rejects.toThrow(/unique|UNIQUE/);
}

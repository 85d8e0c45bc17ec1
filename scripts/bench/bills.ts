/**
 * Bills over 1M usage rows: a separate data directory gets a manager with 50 child
 * accounts (created over HTTP), then, with the router stopped, its database is
 * seeded directly with bun:sqlite: usage_events rows for 10 models over the last 90
 * business days (UTC), and the usage_daily rollups summed from exactly those rows, as
 * the usage recorder keeps them. The router is started again on it and
 * `/dashboard/bill?days=90` (one child's own bill) and `/x-bill?days=90` (the
 * manager's bill over all 50) are timed one request at a time.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { percentile } from "./stats.ts";
import { api, startRouter, type RouterOptions } from "./router.ts";

const ACCOUNTS = 50;
const MODELS = Array.from({ length: 10 }, (_, i) => `model-${String.fromCharCode(97 + i)}`);
const DAYS = 90;
const MANAGER_RESOURCES = "/v1/*,/dashboard/*,/x-self,/x-pricing,/x-users*,/x-dna*,/x-bill";

export interface EndpointTiming {
  path: string;
  /** First request after the restart (cold caches), ms. */
  first: number;
  p50: number;
  p95: number;
  max: number;
  n: number;
  /** Requests in the bill's usage_summary, to check the report read what was seeded. */
  requests: number;
}

export interface BillsResult {
  rows: number;
  rollupRows: number;
  seedSeconds: number;
  dbMb: number;
  dashboard: EndpointTiming;
  xbill: EndpointTiming;
}

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Inserts `rows` usage_events spread evenly over accounts × models × days, and their rollups. */
export function seed(dbPath: string, accountIds: number[], rows: number): number {
  const db = new Database(dbPath);
  db.run("PRAGMA journal_mode = WAL");
  db.run("PRAGMA synchronous = OFF");
  const insertEvent = db.prepare(
    `INSERT INTO usage_events (request_id, account_id, day, created_at, endpoint, requested_model, effective_model, level, key_id,
       status, stream, prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, source, latency_ms, cost_nanos, extra)
     VALUES (?, ?, ?, ?, '/v1/chat/completions', ?, ?, 1, 1, 200, ?, ?, ?, ?, 0, ?, 'upstream', ?, ?, NULL)`,
  );
  const insertDaily = db.prepare(
    `INSERT INTO usage_daily (account_id, day, model, requests, prompt_tokens, completion_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens, cost_nanos)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?)`,
  );
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const combos = accountIds.length * MODELS.length * DAYS;
  const sums = new Map<number, { requests: number; prompt: number; completion: number; reasoning: number; cacheRead: number; cost: number }>();
  db.transaction(() => {
    for (let i = 0; i < rows; i++) {
      const combo = i % combos;
      const account = accountIds[combo % accountIds.length]!;
      const modelIndex = Math.floor(combo / accountIds.length) % MODELS.length;
      const dayIndex = Math.floor(combo / (accountIds.length * MODELS.length));
      const dayStart = today - dayIndex * 86_400_000;
      const createdAt = dayStart + ((i * 7919) % 86_400_000);
      const prompt = 100 + (i % 900);
      const completion = 10 + (i % 300);
      const reasoning = i % 5 === 0 ? completion >> 1 : 0;
      const cacheRead = i % 3 === 0 ? prompt >> 2 : 0;
      const cost = prompt * 150 + completion * 600;
      insertEvent.run(`bench-${i}`, account, isoDay(dayStart), createdAt, MODELS[modelIndex]!, MODELS[modelIndex]!, i % 2, prompt, completion, cacheRead, reasoning, 200 + (i % 500), cost);
      let sum = sums.get(combo);
      if (!sum) sums.set(combo, (sum = { requests: 0, prompt: 0, completion: 0, reasoning: 0, cacheRead: 0, cost: 0 }));
      sum.requests++;
      sum.prompt += prompt;
      sum.completion += completion;
      sum.reasoning += reasoning;
      sum.cacheRead += cacheRead;
      sum.cost += cost;
    }
    for (const [combo, s] of sums) {
      const account = accountIds[combo % accountIds.length]!;
      const model = MODELS[Math.floor(combo / accountIds.length) % MODELS.length]!;
      const day = isoDay(today - Math.floor(combo / (accountIds.length * MODELS.length)) * 86_400_000);
      insertDaily.run(account, day, model, s.requests, s.prompt, s.completion, s.reasoning, s.cacheRead, s.cost);
    }
  })();
  db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  db.run("ANALYZE");
  db.close();
  return sums.size;
}

async function time(url: string, key: string, path: string, n: number): Promise<EndpointTiming> {
  const once = async () => {
    const t0 = performance.now();
    const response = await fetch(url + path, { headers: { authorization: `Bearer ${key}` } });
    const body = (await response.json()) as { total_requests?: number };
    const ms = performance.now() - t0;
    if (!response.ok) throw new Error(`GET ${path} → ${response.status}: ${JSON.stringify(body).slice(0, 300)}`);
    return { ms, requests: body.total_requests ?? NaN };
  };
  const first = await once();
  for (let i = 0; i < 3; i++) await once();
  const samples: number[] = [];
  for (let i = 0; i < n; i++) samples.push((await once()).ms);
  samples.sort((a, b) => a - b);
  return { path, first: first.ms, p50: percentile(samples, 50), p95: percentile(samples, 95), max: samples[samples.length - 1]!, n, requests: first.requests };
}

export async function benchBills(options: Omit<RouterOptions, "name" | "logFile"> & { workDir: string; rows: number; samples: number }): Promise<BillsResult> {
  const routerOptions = { ...options, name: "router (bills)", logFile: join(options.workDir, "router-bills.log") };
  let router = await startRouter(routerOptions);
  const manager = await api(router.url, router.ownerKey, "POST", "/x-users", {
    Email: "manager@bench.example",
    Name: "bench-manager",
    Resources: MANAGER_RESOURCES,
    CreditGranted: 1000,
  });
  const children: Array<{ id: number; key: string }> = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const child = await api(router.url, manager.APIKey, "POST", "/x-users", { Email: `user${i}@bench.example`, Name: `bench-user-${i}` });
    children.push({ id: child.ID, key: child.APIKey });
  }
  await router.stop();

  const dbPath = join(options.dataDir, "router.db");
  const t0 = performance.now();
  const rollupRows = seed(dbPath, children.map((c) => c.id), options.rows);
  const seedSeconds = (performance.now() - t0) / 1000;
  const dbMb = Bun.file(dbPath).size / 1024 / 1024;

  router = await startRouter({ ...routerOptions, logFile: join(options.workDir, "router-bills-2.log") });
  try {
    const dashboard = await time(router.url, children[0]!.key, "/dashboard/bill?days=90", options.samples);
    const xbill = await time(router.url, manager.APIKey, "/x-bill?days=90", options.samples);
    return { rows: options.rows, rollupRows, seedSeconds, dbMb, dashboard, xbill };
  } finally {
    await router.stop();
  }
}

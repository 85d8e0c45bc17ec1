import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { ServeConfig } from "../../src/config.ts";
import { createManualClock } from "../../src/core/clock.ts";
import { addKey, usageRows } from "../helpers/keys.ts";
import { chatCompletion, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, type Reply } from "../helpers/owner-ops.ts";
import { startRouter, tempDir, waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.ts";

/**
 * Restarts and time (a review): day quotas (RPD, TPD, DailyLimit) and the month's
 * HardLimit across a restart within the day, across midnight and with a changed
 * `--timezone`; calls in flight across a graceful stop; the clock stepped backwards.
 * Black-box over HTTP, on manual clocks, restarts on the same data directory.
 */

const SECOND = 1000;
const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
const TOKENS = { prompt: 30, completion: 30 };
/** (30 × 2 + 30 × 8) × 1000 nano-credits per call. */
const COST = 300_000;
const credits = (nanos: number) => nanos / 1e9;

const scope = perTest();
type Clock = ReturnType<typeof createManualClock>;

const BODY = { model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
const chat = (router: TestRouter, key: string): Promise<Reply> => api(router, "/v1/chat/completions", { key, body: BODY });

/**
 * A router on `dataDir` with the test PRICING and (first start only) a key on `upstream`;
 * stopped after the test unless stopped before. `zone`: a `--timezone` other than the
 * clock's, on a clock of its own set to the same moment.
 */
async function routerOn(dataDir: string, clock: Clock, upstream: MockUpstream, options: { zone?: string; restart?: boolean; config?: Partial<ServeConfig> } = {}): Promise<TestRouter> {
  const zoned = options.zone === undefined ? clock : createManualClock(clock.now(), options.zone);
  const router = await startRouter({ dataDir, clock: zoned, pricing: PRICING, config: { timeZone: zoned.timeZone, ...options.config } });
  let stopped: Promise<void> | undefined;
  const stop = router.stop.bind(router);
  router.stop = () => (stopped ??= stop());
  scope.later(() => router.stop());
  await router.deps.settings.update({ PRICING });
  if (!options.restart) await addKey(router, { provider: upstream.url });
  return router;
}

function setup(at: number, zone = "UTC") {
  const clock = createManualClock(at, zone);
  const dataDir = tempDir();
  scope.later(() => rmSync(dataDir, { recursive: true, force: true }));
  const upstream = scope.upstream();
  upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model, TOKENS));
  return { clock, dataDir, upstream };
}

/** The next chat call waits at the upstream until `release()`. */
function holdNext(upstream: MockUpstream) {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  upstream.once(async (req) => {
    await done;
    return chatCompletion(req.json.model, TOKENS);
  });
  return release;
}

/**
 * Two calls by each account, then a third of each held at the upstream while the router
 * stops gracefully and the clock moves to `after` (past midnight): the stop drains them,
 * so they end on the new day. `afterCall` runs after each answered call (a settlement to
 * wait for, on Redis).
 */
async function callsAcrossStop(router: TestRouter, upstream: MockUpstream, clock: Pick<ReturnType<typeof createManualClock>, "set">, after: number, accounts: ReadonlyArray<{ id: number; key: string }>, afterCall: (accountId: number) => Promise<unknown> = async () => {}): Promise<void> {
  const releases: Array<() => void> = [];
  const inFlight: Promise<Reply>[] = [];
  for (const account of accounts) {
    for (let i = 0; i < 2; i++) {
      expect((await chat(router, account.key)).status).toBe(200);
      await afterCall(account.id);
    }
    const seen = upstream.requests.length;
    releases.push(holdNext(upstream));
    inFlight.push(chat(router, account.key));
    await waitFor(() => upstream.requests.length === seen + 1);
  }
  const stopping = router.stop();
  clock.set(after);
  for (const release of releases) release();
  for (const reply of await Promise.all(inFlight)) expect(reply.status).toBe(200);
  await stopping;
}

/** Requests and credit used by the account on `date`, as its bill shows them. */
async function billOn(router: TestRouter, key: string, date: string): Promise<{ requests: number; cost: number }> {
  await router.deps.usageRecorder.flush();
  const bill = await api(router, `/dashboard/bill?date=${date}`, { key });
  expect(bill.status).toBe(200);
  const day = bill.body.daily_costs[0];
  expect(day.date).toBe(date);
  return { requests: day.total_requests, cost: Math.round(day.total_credit_used * 1e9) };
}

describe("restart across midnight (embedded SQLite)", () => {
  test("stopped at 23:59:50 with a call in flight, started at 00:00:10: the new day starts from its own rows, the call in flight counts on the day it was admitted", async () => {
    // 2026-03-10 23:59:50 in Tokyo is 14:59:50 UTC.
    const { clock, dataDir, upstream } = setup(Date.UTC(2026, 2, 10, 14, 59, 50), "Asia/Tokyo");
    const first = await routerOn(dataDir, clock, upstream);
    const limits = [{ RPD: 3 }, { TPD: 180 }, { DailyLimit: credits(3 * COST) }];
    const codes = ["RPD limit of 3", "TPD limit of 180", "DailyLimit of"];
    const accounts = [];
    for (const fields of limits) accounts.push(await createAccount(first, { CreditGranted: 100, ...fields }));
    // Two calls each, and a third in flight across the stop, drained after midnight.
    await callsAcrossStop(first, upstream, clock, Date.UTC(2026, 2, 10, 15, 0, 10), accounts);

    const second = await routerOn(dataDir, clock, upstream, { restart: true });
    for (const [i, account] of accounts.entries()) {
      // Yesterday's three calls (the one in flight included) are not today's.
      for (let n = 0; n < 3; n++) expect({ account: i, n, status: (await chat(second, account.key)).status }).toEqual({ account: i, n, status: 200 });
      const refused = await chat(second, account.key);
      expect(refused.status).toBe(429);
      expect(refused.body.error.message).toContain(codes[i]!);
      expect(await billOn(second, account.key, "2026-03-10")).toEqual({ requests: 3, cost: 3 * COST });
      expect(await billOn(second, account.key, "2026-03-11")).toEqual({ requests: 3, cost: 3 * COST });
    }
  });
});

describe("restart within the day (embedded SQLite)", () => {
  test("TPD, DailyLimit and the month's HardLimit are what they were before the restart", async () => {
    const { clock, dataDir, upstream } = setup(Date.UTC(2026, 2, 3, 12));
    const first = await routerOn(dataDir, clock, upstream);
    const monthly = await createAccount(first, { CreditGranted: 100, HardLimit: credits(2 * COST) });
    // One call on the 3rd, one on the 10th: the month's HardLimit is reached.
    expect((await chat(first, monthly.key)).status).toBe(200);
    clock.set(Date.UTC(2026, 2, 10, 12));
    const tokens = await createAccount(first, { CreditGranted: 100, TPD: 120 });
    const daily = await createAccount(first, { CreditGranted: 100, DailyLimit: credits(2 * COST) });
    expect((await chat(first, monthly.key)).status).toBe(200);
    for (const account of [tokens, daily]) for (let i = 0; i < 2; i++) expect((await chat(first, account.key)).status).toBe(200);
    const before = await Promise.all([tokens, daily, monthly].map(async (account) => (await chat(first, account.key)).body.error.code));
    expect(before).toEqual(["tpd_limit_reached", "daily_limit_reached", "hard_limit_reached"]);
    await first.stop();
    clock.advance(10 * SECOND);
    const second = await routerOn(dataDir, clock, upstream, { restart: true });
    const after = await Promise.all([tokens, daily, monthly].map(async (account) => (await chat(second, account.key)).body.error.code));
    expect(after).toEqual(before);
  });
});

describe("restart with a changed --timezone", () => {
  test("stored rows keep their day; today's quotas in the new zone count the rows stored under today's date", async () => {
    // 12:00 UTC on 2026-03-10: 21:00 the same day in Tokyo, 02:00 the next day in Kiritimati (UTC+14).
    const { clock, dataDir, upstream } = setup(Date.UTC(2026, 2, 10, 12));
    const first = await routerOn(dataDir, clock, upstream);
    const account = await createAccount(first, { CreditGranted: 100, RPD: 3 });
    for (let i = 0; i < 2; i++) expect((await chat(first, account.key)).status).toBe(200);
    await first.stop();

    // Eastward to the same date: today (2026-03-10 in Tokyo) already holds the two calls.
    clock.advance(10 * SECOND);
    const tokyo = await routerOn(dataDir, clock, upstream, { zone: "Asia/Tokyo", restart: true });
    expect((await chat(tokyo, account.key)).status).toBe(200);
    expect((await chat(tokyo, account.key)).body.error.message).toContain("RPD limit of 3");
    expect(await billOn(tokyo, account.key, "2026-03-10")).toEqual({ requests: 3, cost: 3 * COST });
    await tokyo.stop();

    // Further east, past the date: 2026-03-11 holds no row yet, so its RPD starts empty;
    // the rows of 2026-03-10 stay on their day in the bill.
    clock.advance(10 * SECOND);
    const kiritimati = await routerOn(dataDir, clock, upstream, { zone: "Pacific/Kiritimati", restart: true });
    for (let i = 0; i < 3; i++) expect(await chat(kiritimati, account.key)).toMatchObject({ status: 200 });
    expect((await chat(kiritimati, account.key)).status).toBe(429);
    expect(await billOn(kiritimati, account.key, "2026-03-10")).toEqual({ requests: 3, cost: 3 * COST });
    expect(await billOn(kiritimati, account.key, "2026-03-11")).toEqual({ requests: 3, cost: 3 * COST });
    await kiritimati.stop();

    // Back west to UTC: the date is 2026-03-10 again, and its quota counts its three rows;
    // nothing is counted or billed twice (six rows, each on one day).
    clock.advance(10 * SECOND);
    const utc = await routerOn(dataDir, clock, upstream, { restart: true });
    expect((await chat(utc, account.key)).body.error.message).toContain("RPD limit of 3");
    const rows = (await usageRows(utc)).filter((row) => row.account_id === account.id);
    expect(rows.map((row) => row.day).sort()).toEqual(["2026-03-10", "2026-03-10", "2026-03-10", "2026-03-11", "2026-03-11", "2026-03-11"]);
  });
});

describe("the clock stepped backwards", () => {
  test("a few seconds within the day: windows and reservations stay right", async () => {
    const { clock, upstream, dataDir } = setup(Date.UTC(2026, 2, 10, 12));
    const router = await routerOn(dataDir, clock, upstream);
    const account = await createAccount(router, { CreditGranted: 100, RPM: 3, TPD: 1000 });
    for (let i = 0; i < 2; i++) expect((await chat(router, account.key)).status).toBe(200);
    clock.advance(-5 * SECOND);
    expect((await chat(router, account.key)).status).toBe(200);
    const refused = await chat(router, account.key);
    expect(refused.body.error.message).toContain("RPM limit of 3");
    const wait = Number(refused.headers.get("retry-after"));
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(66);
    clock.advance(66 * SECOND);
    const next = await chat(router, account.key);
    expect(next.status).toBe(200);
    // Nothing is held once the calls' rows are written: no reservation outlived its call.
    await router.deps.usageRecorder.flush();
    await waitFor(async () => (await router.deps.state.credit.held(account.id)) === 0, 2000, "nothing held");
    expect(await billOn(router, account.key, "2026-03-10")).toEqual({ requests: 4, cost: 4 * COST });
  });

  test("back across midnight and forward again: the new day's DailyLimit keeps the reservation of a call in flight and its cost, never going below its rows", async () => {
    // 00:00:01 on 2026-03-11 (UTC): a call is admitted and held upstream.
    const { clock, upstream, dataDir } = setup(Date.UTC(2026, 2, 11, 0, 0, 1));
    const router = await routerOn(dataDir, clock, upstream);
    const account = await createAccount(router, { CreditGranted: 100, DailyLimit: credits(2 * COST) });
    const release = holdNext(upstream);
    const held = chat(router, account.key);
    await waitFor(() => upstream.requests.length === 1);
    // An NTP step: back to 23:59:58 of the 10th, a call there, then forward past midnight again.
    clock.set(Date.UTC(2026, 2, 10, 23, 59, 58));
    expect((await chat(router, account.key)).status).toBe(200);
    clock.set(Date.UTC(2026, 2, 11, 0, 0, 3));
    release();
    expect((await held).status).toBe(200);
    // The 11th has one call (COST) of its DailyLimit of two: one more passes, then it is reached.
    expect((await chat(router, account.key)).status).toBe(200);
    const refused = await chat(router, account.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("daily_limit_reached");
    expect(await billOn(router, account.key, "2026-03-11")).toEqual({ requests: 2, cost: 2 * COST });
    expect(await billOn(router, account.key, "2026-03-10")).toEqual({ requests: 1, cost: COST });
  });
});

if (!skipServices) {
  let postgres: PostgresServer;
  let redis: RedisServer;
  beforeAll(async () => {
    [postgres, redis] = await Promise.all([startPostgres(), startRedisServer()]);
  }, 60_000);
  afterAll(async () => {
    await redis?.close();
    await postgres?.stop();
  });

  /** No reservation of the account's calls is held any more (its subtree's spend in flight is 0). */
  const settled = (router: TestRouter, accountId: number) =>
    waitFor(async () => (await router.deps.state.counts.read({ kind: "gauge", key: `spend:${accountId}:reserved` }, router.deps.clock.now())) === 0, 2000, "the settlement");

  /** Ends a router as a kill would: no flush, nothing handed over. */
  const kill = (router: TestRouter) => {
    router.deps.usageRecorder.halt();
    router.server.server.stop(true);
    router.deps.dependencies.stop();
    void Promise.resolve(router.deps.store.close()).catch(() => {});
    router.stop = async () => {};
  };

  describe("restart with usage rows still on disk (PostgreSQL without Redis)", () => {
    test("rows a run killed during an outage left in the spool count in today's RPD and DailyLimit from the first call after the restart", async () => {
      const { clock, dataDir, upstream } = setup(Date.UTC(2026, 2, 10, 12));
      const config = { database: postgres.url(await postgres.createDatabase()) };
      const first = await routerOn(dataDir, clock, upstream, { config });
      const requests = await createAccount(first, { CreditGranted: 100, RPD: 3 });
      const spend = await createAccount(first, { CreditGranted: 100, DailyLimit: credits(3 * COST) });
      for (const account of [requests, spend]) expect((await chat(first, account.key)).status).toBe(200);
      await first.deps.usageRecorder.flush();
      const spool = join(dataDir, "usage-spool.jsonl");
      await postgres.halt();
      try {
        for (const account of [requests, spend]) for (let i = 0; i < 2; i++) expect((await chat(first, account.key)).status).toBe(200);
        await waitFor(() => readFileSync(spool, "utf8").split("\n").filter(Boolean).length >= 4, 5000, "the rows to be kept on disk");
        kill(first);
      } finally {
        await postgres.resume();
      }
      clock.advance(10 * SECOND);
      const second = await routerOn(dataDir, clock, upstream, { config, restart: true });
      // Three calls today each, two of them only on disk when the router started.
      expect((await chat(second, requests.key)).body.error?.code).toBe("rpd_limit_reached");
      expect((await chat(second, spend.key)).body.error?.code).toBe("daily_limit_reached");
      expect(await billOn(second, requests.key, "2026-03-10")).toEqual({ requests: 3, cost: 3 * COST });
    }, 40_000);
  });

  describe("restart across midnight (PostgreSQL and Redis)", () => {
    test("stopped at 23:59:50 with a call in flight, started at 00:00:10: RPD and DailyLimit start the new day from its own rows; the bill puts each call on its day", async () => {
      const { clock, dataDir, upstream } = setup(Date.UTC(2026, 2, 10, 14, 59, 50), "Asia/Tokyo");
      const config = { database: postgres.url(await postgres.createDatabase()), redis: redis.url };
      const first = await routerOn(dataDir, clock, upstream, { config });
      const accounts = [await createAccount(first, { CreditGranted: 100, RPD: 3 }), await createAccount(first, { CreditGranted: 100, DailyLimit: credits(3 * COST) })];
      // On Redis a settlement is counted a few milliseconds after its answer (docs/api.md, "Reservation").
      await callsAcrossStop(first, upstream, clock, Date.UTC(2026, 2, 10, 15, 0, 10), accounts, (id) => settled(first, id));
      const second = await routerOn(dataDir, clock, upstream, { config, restart: true });
      for (const [i, account] of accounts.entries()) {
        for (let n = 0; n < 3; n++) {
          expect({ account: i, n, status: (await chat(second, account.key)).status }).toEqual({ account: i, n, status: 200 });
          await settled(second, account.id);
        }
        expect((await chat(second, account.key)).body.error?.code).toBe(i === 0 ? "rpd_limit_reached" : "daily_limit_reached");
        expect(await billOn(second, account.key, "2026-03-10")).toEqual({ requests: 3, cost: 3 * COST });
        expect(await billOn(second, account.key, "2026-03-11")).toEqual({ requests: 3, cost: 3 * COST });
      }
    }, 40_000);
  });
}

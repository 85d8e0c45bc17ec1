import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, geminiClient, openaiClient } from "../helpers/sdk.ts";

/**
 * Issue 5, spend and rate limits: DailyLimit and HardLimit on the business date and
 * month of the configured time zone; RPM/RPH/TPM/TPH sliding windows; RPD/TPD on the
 * business date; account ModelLimits and system MODEL_LIMITS on the effective model;
 * each refusal a 429 with Retry-After naming the limit and its scope, not forwarded,
 * not charged; and the order of the admission checks.
 *
 * The router runs in Asia/Tokyo (UTC+9) on a manual clock, so the business date
 * changes at 15:00 UTC, never at UTC midnight.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const ZONE = "Asia/Tokyo";
/** A wall-clock time in Tokyo, as epoch ms. */
const tokyo = (y: number, m: number, d: number, h = 0, min = 0, s = 0) => Date.UTC(y, m - 1, d, h - 9, min, s);

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
/** What the mock reports for every non-streaming call: 30 in, 30 out. */
const USAGE = { prompt_tokens: 30, completion_tokens: 30, total_tokens: 60 };
const TOKENS_PER_CALL = 60;
/** (30 × 2 + 30 × 8) × 1000 at Rates 1. */
const COST = 300_000;
const BODY = (model = "acme-chat") => JSON.stringify({ model, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });

let upstream: MockUpstream;
let router: TestRouter;
let clock: ReturnType<typeof createManualClock>;

beforeAll(() => {
  upstream = startMockUpstream();
});
afterAll(async () => {
  await upstream.stop();
});

/** A fresh router on a manual Tokyo clock for each test, so counters and time start clean. */
beforeEach(async () => {
  upstream.reset();
  upstream.route("POST", "/v1/chat/completions", (req) =>
    req.json.stream
      ? sse(
          [
            { id: "c", object: "chat.completion.chunk", created: 1, model: req.json.model, choices: [{ index: 0, delta: { content: "ok" }, finish_reason: null }] },
            { id: "c", object: "chat.completion.chunk", created: 1, model: req.json.model, choices: [], usage: USAGE },
          ],
          { done: true, delayMs: 15 },
        )
      : json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: USAGE }),
  );
  upstream.route("POST", "/v1/messages", (req) =>
    json({ id: "m", type: "message", role: "assistant", model: req.json.model, content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 30, output_tokens: 30 } }),
  );
  upstream.route("POST", /:generateContent$/, () =>
    json({ candidates: [{ content: { role: "model", parts: [{ text: "ok" }] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 30, totalTokenCount: 60 } }),
  );
  clock = createManualClock(tokyo(2026, 3, 10, 12), ZONE);
  router = await startRouter({ config: { timeZone: ZONE }, clock, pricing: PRICING });
  await addKey(router, { provider: upstream.url });
});
afterEach(async () => {
  await router.stop();
});

async function api(path: string, init: { method?: string; body?: unknown; raw?: string; key?: string | null } = {}) {
  const res = await router.fetch(path, {
    method: init.method ?? (init.body === undefined && init.raw === undefined ? "GET" : "POST"),
    key: init.key,
    headers: { "content-type": "application/json" },
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, retryAfter: res.headers.get("retry-after") };
}

let emails = 0;
async function createAccount(fields: Record<string, unknown>) {
  const res = await api("/x-users", { body: { Email: `limits${++emails}@example.com`, CreditGranted: 100, ...fields } });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.ID as number, key: res.body.APIKey as string };
}

const chat = (key: string, model = "acme-chat") => api("/v1/chat/completions", { key, raw: BODY(model) });

/** Asserts a limit refusal and returns its Retry-After in seconds. */
function refusal(res: Awaited<ReturnType<typeof api>>, code: string, ...mentions: string[]): number {
  expect(res.status).toBe(429);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.type).toBe("rate_limit_error");
  for (const m of mentions) expect(res.body.error.message).toContain(m);
  // Waiting does not bring credit back: no Retry-After.
  if (code === "insufficient_credit") return 0;
  const seconds = Number(res.retryAfter);
  expect(Number.isInteger(seconds)).toBe(true);
  expect(seconds).toBeGreaterThan(0);
  return seconds;
}

/**
 * A Retry-After that waits for the next business date (or month): the exact number
 * of seconds, or one more (the clock's midnight search is precise to a second and
 * rounds up, never down, so a client never retries too early).
 */
function untilMidnight(seconds: number, exact: number): void {
  expect(seconds).toBeGreaterThanOrEqual(exact);
  expect(seconds).toBeLessThanOrEqual(exact + 1);
}

/** Rows and charges of an account so far (flushes pending rows). */
async function charges(accountId: number) {
  const rows = (await usageRows(router)).filter((r) => r.account_id === accountId);
  return { rows: rows.length, cost: rows.reduce((s, r) => s + r.cost_nanos, 0) };
}

describe("spend limits", () => {
  test("DailyLimit: refused once today's spend reached it; resets at midnight in the business zone", async () => {
    // 08:00 in Tokyo is 23:00 UTC of the previous day.
    clock.set(tokyo(2026, 3, 10, 8));
    const acct = await createAccount({ DailyLimit: (2.5 * COST) / 1e9 });
    // Three calls run (spent 0, then 1 × COST, then 2 × COST: each time something is left); no flush in between.
    for (let i = 0; i < 3; i++) expect((await chat(acct.key)).status).toBe(200);
    const seconds = refusal(await chat(acct.key), "daily_limit_reached", "DailyLimit");
    // Until midnight in Tokyo: 16 hours.
    untilMidnight(seconds, 16 * 3600);
    expect(upstream.requests).toHaveLength(3);
    expect(await charges(acct.id)).toEqual({ rows: 3, cost: 3 * COST });

    // Past UTC midnight (10:00 in Tokyo): still the same business date.
    clock.set(tokyo(2026, 3, 10, 10));
    untilMidnight(refusal(await chat(acct.key), "daily_limit_reached"), 14 * 3600);
    // Past midnight in Tokyo: a new day.
    clock.set(tokyo(2026, 3, 11, 0, 0, 1));
    expect((await chat(acct.key)).status).toBe(200);
    expect(upstream.requests).toHaveLength(4);
  });

  test("DailyLimit holds under concurrency: reservations count against it", async () => {
    const body = JSON.stringify({ model: "acme-chat", max_tokens: 100, stream: true, messages: [{ role: "user", content: "hi" }] });
    // The documented worst case: body bytes + 1024 input tokens at 2, 100 output tokens at 8.
    const W = ((body.length + 1024) * 2 + 100 * 8) * 1000;
    const limit = 3 * W;
    const acct = await createAccount({ DailyLimit: limit / 1e9 });
    const statuses = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const res = await router.fetch("/v1/chat/completions", {
          method: "POST",
          key: acct.key,
          body,
        });
        await res.text();
        return res.status;
      }),
    );
    const admitted = statuses.filter((s) => s === 200).length;
    expect(statuses.filter((s) => s === 429).length).toBe(12 - admitted);
    expect(admitted).toBeGreaterThanOrEqual(1);
    // Each admitted call reserves its worst case against the limit: at most three run at once.
    expect(admitted).toBeLessThanOrEqual(3);
    expect(upstream.requests).toHaveLength(admitted);
    const spent = await waitFor(async () => {
      const c = await charges(acct.id);
      return c.rows === admitted ? c : undefined;
    });
    expect(spent!.cost).toBeLessThanOrEqual(limit);
  });

  test("HardLimit: per business month, not reset by a new day, reset by a new month", async () => {
    clock.set(tokyo(2026, 3, 30, 12));
    const acct = await createAccount({ HardLimit: (1.5 * COST) / 1e9 });
    expect((await chat(acct.key)).status).toBe(200);
    expect((await chat(acct.key)).status).toBe(200);
    const seconds = refusal(await chat(acct.key), "hard_limit_reached", "HardLimit");
    // Until April 1st, 00:00 in Tokyo: 1 day and 12 hours.
    untilMidnight(seconds, 36 * 3600);
    clock.set(tokyo(2026, 3, 31, 23, 59));
    refusal(await chat(acct.key), "hard_limit_reached");
    expect(upstream.requests).toHaveLength(2);
    clock.set(tokyo(2026, 4, 1, 0, 0, 1));
    expect((await chat(acct.key)).status).toBe(200);
  });

  test("DailyLimit and HardLimit together: each sees the spend of its own period", async () => {
    // The day allows two calls, the month three.
    const acct = await createAccount({ DailyLimit: (1.5 * COST) / 1e9, HardLimit: (2.5 * COST) / 1e9 });
    expect((await chat(acct.key)).status).toBe(200);
    expect((await chat(acct.key)).status).toBe(200);
    refusal(await chat(acct.key), "daily_limit_reached");
    clock.advance(24 * HOUR);
    expect((await chat(acct.key)).status).toBe(200);
    refusal(await chat(acct.key), "hard_limit_reached");
    expect(upstream.requests).toHaveLength(3);
    expect(await charges(acct.id)).toEqual({ rows: 3, cost: 3 * COST });
  });
});

describe("request windows", () => {
  test("RPM: the 4th call in a minute is refused with Retry-After; once it has passed the call goes through", async () => {
    const acct = await createAccount({ RPM: 3 });
    for (let i = 0; i < 3; i++) expect((await chat(acct.key)).status).toBe(200);
    clock.advance(400);
    const res = await chat(acct.key);
    const seconds = refusal(res, "rpm_limit_reached", "RPM limit of 3", "account");
    // Never more than the window: the calls leave it 59.6 s from now.
    expect(seconds).toBe(60);
    // Not forwarded, not charged.
    expect(upstream.requests).toHaveLength(3);
    expect(await charges(acct.id)).toEqual({ rows: 3, cost: 3 * COST });
    clock.advance((seconds - 1) * SECOND);
    refusal(await chat(acct.key), "rpm_limit_reached");
    clock.advance(1 * SECOND);
    expect((await chat(acct.key)).status).toBe(200);
  });

  test("RPM through each family's SDK: 429 in the family's envelope with Retry-After", async () => {
    const acct = await createAccount({ RPM: 1 });
    expect((await chat(acct.key)).status).toBe(200);
    const openai = await openaiClient(router.url, acct.key).chat.completions.create({ model: "acme-chat", messages: [{ role: "user", content: "x" }] }).catch((e) => e);
    expect(openai.status).toBe(429);
    expect(openai.code).toBe("rpm_limit_reached");
    expect(Number(openai.headers.get("retry-after"))).toBeGreaterThan(0);
    const anthropic = await anthropicClient(router.url, acct.key).messages.create({ model: "acme-claude", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).catch((e) => e);
    expect(anthropic.status).toBe(429);
    expect(anthropic.error).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
    expect(anthropic.error.error.message).toContain("RPM");
    const gemini = await api("/v1beta/models/acme-gem:generateContent", { key: acct.key, body: { contents: [{ parts: [{ text: "x" }] }] } });
    expect(gemini.status).toBe(429);
    expect(gemini.body.error).toMatchObject({ code: 429, status: "RESOURCE_EXHAUSTED" });
    expect(gemini.body.error.message).toContain("RPM");
    expect(Number(gemini.retryAfter)).toBeGreaterThan(0);
    const geminiError = await geminiClient(router.url, acct.key).models.generateContent({ model: "acme-gem", contents: "x" }).catch((e) => e);
    expect(geminiError.status).toBe(429);
    expect(upstream.requests).toHaveLength(1);
  });

  test("RPH: refused within the hour; Retry-After is when the oldest call leaves the window", async () => {
    const acct = await createAccount({ RPH: 2 });
    expect((await chat(acct.key)).status).toBe(200);
    clock.advance(20 * MINUTE);
    expect((await chat(acct.key)).status).toBe(200);
    clock.advance(10 * MINUTE);
    const seconds = refusal(await chat(acct.key), "rph_limit_reached", "RPH limit of 2");
    // The first call leaves 30 minutes (and at most one one-minute bucket) from now.
    expect(seconds).toBeGreaterThanOrEqual(30 * 60);
    expect(seconds).toBeLessThanOrEqual(31 * 60);
    clock.advance((seconds - 1) * SECOND);
    refusal(await chat(acct.key), "rph_limit_reached");
    clock.advance(SECOND);
    expect((await chat(acct.key)).status).toBe(200);
    expect(upstream.requests).toHaveLength(3);
  });

  test("RPD resets at the business date, not 24 hours later: a call at 23:59 and one at 00:01", async () => {
    clock.set(tokyo(2026, 3, 10, 23, 59));
    const acct = await createAccount({ RPD: 1 });
    expect((await chat(acct.key)).status).toBe(200);
    untilMidnight(refusal(await chat(acct.key), "rpd_limit_reached", "RPD limit of 1"), 60);
    clock.set(tokyo(2026, 3, 11, 0, 1));
    expect((await chat(acct.key)).status).toBe(200);
    untilMidnight(refusal(await chat(acct.key), "rpd_limit_reached"), 24 * 3600 - 60);
    expect(upstream.requests).toHaveLength(2);
  });
});

describe("token windows", () => {
  test("TPM: tokens count when a call completes; refused once the recorded tokens reached the limit", async () => {
    const acct = await createAccount({ TPM: 2 * TOKENS_PER_CALL });
    expect((await chat(acct.key)).status).toBe(200);
    // 60 recorded < 120
    expect((await chat(acct.key)).status).toBe(200);
    const seconds = refusal(await chat(acct.key), "tpm_limit_reached", "TPM limit of 120", "account");
    expect(seconds).toBeLessThanOrEqual(60);
    expect(upstream.requests).toHaveLength(2);
    clock.advance(seconds * SECOND);
    expect((await chat(acct.key)).status).toBe(200);
  });

  test("TPM: a call in flight reserves its most tokens, so a concurrent call waits for it (Retry-After 1)", async () => {
    const acct = await createAccount({ TPM: 1 });
    const stream = () =>
      router.fetch("/v1/chat/completions", { method: "POST", key: acct.key, body: JSON.stringify({ model: "acme-chat", stream: true, max_tokens: 100, messages: [] }) });
    const [a, b] = await Promise.all([stream(), stream()]);
    expect([a.status, b.status].sort()).toEqual([200, 429]);
    const refused = a.status === 429 ? a : b;
    expect(refused.headers.get("retry-after")).toBe("1");
    expect((await refused.json()).error.message).toContain("calls in flight");
    await Promise.all([a.text(), b.text()].map((p) => p.catch(() => "")));
    await waitFor(async () => (await charges(acct.id)).rows === 1);
    // Settled to the 60 tokens it used: the window's own wait, at most a minute.
    const seconds = refusal(await chat(acct.key), "tpm_limit_reached");
    expect(seconds).toBeLessThanOrEqual(60);
    expect(upstream.requests).toHaveLength(1);
  });

  test("TPM holds under concurrency: 20 calls at once against two calls' worth run one at a time", async () => {
    const acct = await createAccount({ TPM: 2 * TOKENS_PER_CALL });
    const statuses = await Promise.all(Array.from({ length: 20 }, async () => (await chat(acct.key)).status));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 429)).toHaveLength(19);
    await waitFor(async () => (await charges(acct.id)).rows === 1);
    // The window now holds the 60 tokens really used: one more call fits, then the limit holds.
    expect((await chat(acct.key)).status).toBe(200);
    refusal(await chat(acct.key), "tpm_limit_reached");
    expect(upstream.requests).toHaveLength(2);
  });

  test("TPH refuses at its boundary with Retry-After", async () => {
    const acct = await createAccount({ TPH: TOKENS_PER_CALL });
    expect((await chat(acct.key)).status).toBe(200);
    clock.advance(15 * MINUTE);
    const seconds = refusal(await chat(acct.key), "tph_limit_reached", "TPH limit of 60");
    expect(seconds).toBeGreaterThanOrEqual(45 * 60);
    expect(seconds).toBeLessThanOrEqual(46 * 60);
    clock.advance(seconds * SECOND);
    expect((await chat(acct.key)).status).toBe(200);
  });

  test("TPD resets at the business date", async () => {
    clock.set(tokyo(2026, 3, 10, 22));
    const acct = await createAccount({ TPD: TOKENS_PER_CALL + 1 });
    expect((await chat(acct.key)).status).toBe(200);
    expect((await chat(acct.key)).status).toBe(200);
    untilMidnight(refusal(await chat(acct.key), "tpd_limit_reached", "TPD limit of 61"), 2 * 3600);
    clock.set(tokyo(2026, 3, 10, 23, 30));
    refusal(await chat(acct.key), "tpd_limit_reached");
    clock.set(tokyo(2026, 3, 11, 0, 0, 5));
    expect((await chat(acct.key)).status).toBe(200);
    expect(upstream.requests).toHaveLength(3);
  });
});

describe("model limits", () => {
  test("account ModelLimits count on the effective model: an alias and its target share one counter", async () => {
    expect((await api("/x-config", { method: "PUT", body: { MODEL_MAPPER: "nick-lim=acme-lim" } })).status).toBe(200);
    const acct = await createAccount({ ModelLimits: { "acme-lim*": { rpm: 2 } } });
    expect((await chat(acct.key, "nick-lim")).status).toBe(200);
    expect((await chat(acct.key, "acme-lim")).status).toBe(200);
    refusal(await chat(acct.key, "nick-lim"), "rpm_limit_reached", "RPM limit of 2", "account model acme-lim");
    refusal(await chat(acct.key, "acme-lim"), "rpm_limit_reached", "account model acme-lim");
    // Other models are not limited by it.
    expect((await chat(acct.key, "acme-other")).status).toBe(200);
    expect(upstream.requests.map((r) => r.json.model)).toEqual(["acme-lim", "acme-lim", "acme-other"]);
    // Another account is not limited by this account's ModelLimits.
    const other = await createAccount({});
    expect((await chat(other.key, "acme-lim")).status).toBe(200);
  });

  test("account ModelLimits rpd and tpm", async () => {
    const acct = await createAccount({ ModelLimits: { "acme-d": { rpd: 1 }, "acme-t": { tpm: 1 } } });
    expect((await chat(acct.key, "acme-d")).status).toBe(200);
    untilMidnight(refusal(await chat(acct.key, "acme-d"), "rpd_limit_reached", "account model acme-d"), 12 * 3600);
    expect((await chat(acct.key, "acme-t")).status).toBe(200);
    refusal(await chat(acct.key, "acme-t"), "tpm_limit_reached", "account model acme-t");
  });

  test("token limits of ModelLimits and MODEL_LIMITS hold under concurrency too: calls of several accounts reserve their tokens", async () => {
    expect((await api("/x-config", { method: "PUT", body: { MODEL_LIMITS: { "acme-shared": { tpm: 2 * TOKENS_PER_CALL } } } })).status).toBe(200);
    const accounts = await Promise.all([createAccount({}), createAccount({}), createAccount({})]);
    const statuses = await Promise.all(accounts.flatMap((a) => Array.from({ length: 5 }, async () => (await chat(a.key, "acme-shared")).status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(upstream.requests).toHaveLength(1);
    const own = await createAccount({ ModelLimits: { "acme-own": { tpm: 2 * TOKENS_PER_CALL } } });
    const mine = await Promise.all(Array.from({ length: 10 }, async () => (await chat(own.key, "acme-own")).status));
    expect(mine.filter((s) => s === 200)).toHaveLength(1);
  });

  test("system MODEL_LIMITS (PUT /x-config) are shared by all accounts and merged onto the effective model", async () => {
    const put = await api("/x-config", { method: "PUT", body: { MODEL_LIMITS: { "acme-sys*": { rpm: 3 } }, MODEL_MAPPER: "alias-sys=acme-sys" } });
    expect(put.status).toBe(200);
    const a = await createAccount({});
    const b = await createAccount({});
    expect((await chat(a.key, "alias-sys")).status).toBe(200);
    expect((await chat(b.key, "acme-sys")).status).toBe(200);
    expect((await chat(b.key, "alias-sys")).status).toBe(200);
    const seconds = refusal(await chat(a.key, "acme-sys"), "rpm_limit_reached", "RPM limit of 3", "model acme-sys");
    expect(refusal(await chat(b.key, "alias-sys"), "rpm_limit_reached", "model acme-sys")).toBe(seconds);
    expect(upstream.requests).toHaveLength(3);
    // A different model matching the same pattern has its own counter.
    expect((await chat(a.key, "acme-sys2")).status).toBe(200);
    clock.advance(seconds * SECOND);
    expect((await chat(a.key, "acme-sys")).status).toBe(200);
  });

  test("MODEL_LIMITS members may be written as spec 2.4 names them (RPM, RPD…): read as rpm, rpd…, and given twice refused", async () => {
    const put = await api("/x-config", { method: "PUT", body: { MODEL_LIMITS: { "acme-caps": { RPM: 1 } } } });
    expect(put.status).toBe(200);
    expect(put.body.configs.MODEL_LIMITS).toEqual({ "acme-caps": { rpm: 1 } });
    const a = await createAccount({});
    expect((await chat(a.key, "acme-caps")).status).toBe(200);
    refusal(await chat(a.key, "acme-caps"), "rpm_limit_reached", "RPM limit of 1", "model acme-caps");
    const twice = await api("/x-config", { method: "PUT", body: { MODEL_LIMITS: { "acme-caps": { RPM: 1, rpm: 2 } } } });
    expect([twice.status, twice.body.error.param]).toEqual([400, "MODEL_LIMITS"]);
    expect((await api("/x-config", { method: "PUT", body: { MODEL_LIMITS: { "acme-caps": { Rpx: 1 } } } })).status).toBe(400);
  });

  test("system MODEL_LIMITS rpd and tpd are natural-day quotas", async () => {
    clock.set(tokyo(2026, 3, 10, 23));
    expect((await api("/x-config", { method: "PUT", body: { MODEL_LIMITS: { "acme-q": { rpd: 2, tpd: 1000 }, "acme-tq": { tpd: TOKENS_PER_CALL } } } })).status).toBe(200);
    const a = await createAccount({});
    const b = await createAccount({});
    expect((await chat(a.key, "acme-q")).status).toBe(200);
    expect((await chat(b.key, "acme-q")).status).toBe(200);
    untilMidnight(refusal(await chat(a.key, "acme-q"), "rpd_limit_reached", "model acme-q"), 3600);
    expect((await chat(a.key, "acme-tq")).status).toBe(200);
    untilMidnight(refusal(await chat(b.key, "acme-tq"), "tpd_limit_reached", "model acme-tq"), 3600);
    clock.set(tokyo(2026, 3, 11, 0, 0, 1));
    expect((await chat(a.key, "acme-q")).status).toBe(200);
    expect((await chat(b.key, "acme-tq")).status).toBe(200);
  });
});

describe("admission order", () => {
  test("AllowModels (403) comes before any limit", async () => {
    const acct = await createAccount({ RPM: 1, AllowModels: "acme-ok" });
    expect((await chat(acct.key, "acme-ok")).status).toBe(200);
    const res = await chat(acct.key, "acme-no");
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("model_not_allowed");
  });

  test("credit comes before the spend limits and the windows", async () => {
    const acct = await createAccount({ CreditGranted: (1.5 * COST) / 1e9, RPM: 2, DailyLimit: (1.5 * COST) / 1e9 });
    expect((await chat(acct.key)).status).toBe(200);
    // Balance 0.5 × COST and today's spend COST: the second call still passes all three checks.
    expect((await chat(acct.key)).status).toBe(200);
    // Balance below zero, DailyLimit reached, RPM reached: credit answers first.
    refusal(await chat(acct.key), "insufficient_credit", "credit");
  });

  test("both spent, HardLimit is named (waiting for tomorrow would not help); spend limits before the windows", async () => {
    const acct = await createAccount({ DailyLimit: COST / 2e9, HardLimit: COST / 2e9, RPM: 1 });
    expect((await chat(acct.key)).status).toBe(200);
    refusal(await chat(acct.key), "hard_limit_reached");
    const daily = await createAccount({ DailyLimit: COST / 2e9, RPM: 1 });
    expect((await chat(daily.key)).status).toBe(200);
    refusal(await chat(daily.key), "daily_limit_reached");
    const monthly = await createAccount({ HardLimit: COST / 2e9, RPM: 1 });
    expect((await chat(monthly.key)).status).toBe(200);
    refusal(await chat(monthly.key), "hard_limit_reached");
  });

  test("account windows, then account model limits, then system model limits", async () => {
    expect((await api("/x-config", { method: "PUT", body: { MODEL_LIMITS: { "acme-ord": { rpm: 1 } } } })).status).toBe(200);
    const all = await createAccount({ RPM: 1, ModelLimits: { "acme-ord": { rpm: 1 } } });
    expect((await chat(all.key, "acme-ord")).status).toBe(200);
    refusal(await chat(all.key, "acme-ord"), "rpm_limit_reached", "(account)");
    const models = await createAccount({ ModelLimits: { "acme-ord": { rpm: 1 } } });
    refusal(await chat(models.key, "acme-ord"), "rpm_limit_reached", "(model acme-ord)");
    clock.advance(61 * SECOND);
    expect((await chat(models.key, "acme-ord")).status).toBe(200);
    refusal(await chat(models.key, "acme-ord"), "rpm_limit_reached", "(account model acme-ord)");
  });

  test("a refused call counts in no window: refusals do not extend the wait", async () => {
    const acct = await createAccount({ RPM: 1, TPM: 1000 });
    expect((await chat(acct.key)).status).toBe(200);
    for (let i = 0; i < 5; i++) refusal(await chat(acct.key), "rpm_limit_reached");
    clock.advance(61 * SECOND);
    expect((await chat(acct.key)).status).toBe(200);
    expect(await charges(acct.id)).toEqual({ rows: 2, cost: 2 * COST });
  });
});

import { describe, expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import { rmSync } from "node:fs";
import { addKey, usageRows } from "../helpers/keys.ts";
import { chatCompletion, json, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, MANAGER_RESOURCES } from "../helpers/owner-ops.ts";
import { startRouter, tempDir, waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Limits at their edges (rate windows, business days in a zone with daylight saving,
 * month ends, ModelLimits of a manager's children, token counts, restarts, the headers
 * of a 429), from a review: what it found and was fixed, and what it checked and found
 * right.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
const TOKENS = { prompt: 30, completion: 30 };
const COST = 300_000;

const scope = perTest();

type Clock = ReturnType<typeof createManualClock>;

/** A stream the test ends: the call stays in flight until `release()`. */
function gate() {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  return { release, done };
}

async function start(options: { zone?: string; at: number }): Promise<{ router: TestRouter; upstream: MockUpstream; clock: Clock }> {
  const clock = createManualClock(options.at, options.zone ?? "UTC");
  const { router, upstream } = await scope.gateway({ config: { timeZone: options.zone ?? "UTC" }, clock, pricing: PRICING });
  upstream.route("POST", "/v1/chat/completions", (req) =>
    chatCompletion(req.json.model, TOKENS),
  );
  upstream.route("POST", "/v1/messages/count_tokens", () => json({ input_tokens: 14 }));
  upstream.route("POST", "/v1/messages", (req) =>
    json({ id: "m", type: "message", role: "assistant", model: req.json.model, content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 30, output_tokens: 30 } }),
  );
  return { router, upstream, clock };
}

/** A held upstream answer: the next chat call waits upstream until `release()`. */
function holdNext(upstream: MockUpstream) {
  const g = gate();
  upstream.once(async (req) => {
    await g.done;
    return chatCompletion(req.json.model, TOKENS);
  });
  return g;
}

const BODY = (model = "acme-chat") => ({ model, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
const chat = (router: TestRouter, key: string, model = "acme-chat") => api(router, "/v1/chat/completions", { key, body: BODY(model) });

const limited = (router: TestRouter, fields: Record<string, unknown>, parentKey?: string) => createAccount(router, { CreditGranted: 100, ...fields }, parentKey);

/** OpenAI's duration format, parsed back to seconds (`1m0s` → 60). */
function durationSeconds(value: string | null): number {
  if (value === null) return NaN;
  if (/^\d+ms$/.test(value)) return Number(value.slice(0, -2)) / 1000;
  let total = 0;
  for (const [, n, unit] of value.matchAll(/(\d+)(h|m(?!s)|s)/g)) total += Number(n) * (unit === "h" ? 3600 : unit === "m" ? 60 : 1);
  return total;
}

describe("rate-limit headers on 429 refusals", () => {
  /** Holds one call at the upstream and sends a second that `limits` refuse; the held call is then answered. */
  const refusedWhileOneCallIsInFlight = async (limits: Record<string, unknown>) => {
    const { router, upstream } = await start({ at: Date.UTC(2026, 2, 10, 12) });
    const acct = await limited(router, limits);
    const held = holdNext(upstream);
    const first = chat(router, acct.key);
    await waitFor(() => upstream.requests.length === 1);
    const refused = await router.fetch("/v1/chat/completions", { method: "POST", key: acct.key, headers: { "content-type": "application/json" }, body: JSON.stringify(BODY()) });
    const body = await refused.json();
    held.release();
    expect((await first).status).toBe(200);
    return { refused, body };
  };

  test("a TPM refusal caused only by calls in flight: x-ratelimit-reset-tokens equals Retry-After (1s)", async () => {
    // docs/api.md, "Rate-limit headers": "429 refusals by a window carry the refusing window's trio with
    // remaining 0 and its reset (equal to Retry-After, in the header's own format)". And "Rate and token
    // limits": "When only the token reservations of calls in flight make the difference ... Retry-After is 1".
    const { refused, body } = await refusedWhileOneCallIsInFlight({ TPM: 100 });
    expect(refused.status).toBe(429);
    expect(body.error.message).toContain("calls in flight");
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("x-ratelimit-remaining-tokens")).toBe("0");
    expect(durationSeconds(refused.headers.get("x-ratelimit-reset-tokens"))).toBe(Number(refused.headers.get("retry-after")));
  });

  test("a TPD refusal caused only by calls in flight: x-ratelimit-reset-tokens equals Retry-After (1s), not midnight", async () => {
    const { refused, body } = await refusedWhileOneCallIsInFlight({ TPD: 100 });
    expect(refused.status).toBe(429);
    expect(body.error.message).toContain("calls in flight");
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(durationSeconds(refused.headers.get("x-ratelimit-reset-tokens"))).toBe(1);
  });
});

describe("business days in a zone with daylight saving time", () => {
  test("RPD Retry-After on the 23-hour spring-forward day runs to the next local midnight", async () => {
    // 2026-03-08 00:30 EST (UTC-5) = 05:30 UTC; next midnight 2026-03-09 00:00 EDT (UTC-4) = 04:00 UTC: 22.5 h.
    const { router } = await start({ zone: "America/New_York", at: Date.UTC(2026, 2, 8, 5, 30) });
    const acct = await limited(router, { RPD: 1 });
    expect((await chat(router, acct.key)).status).toBe(200);
    const refused = await chat(router, acct.key);
    expect(refused.status).toBe(429);
    const seconds = Number(refused.headers.get("retry-after"));
    expect(seconds).toBeGreaterThanOrEqual(22.5 * 3600);
    expect(seconds).toBeLessThanOrEqual(22.5 * 3600 + 1);
  });

  test("RPD on the 25-hour fall-back day: still one business day, reset at the local midnight", async () => {
    // 2026-11-01 00:30 EDT = 04:30 UTC; next midnight 2026-11-02 00:00 EST = 05:00 UTC: 24.5 h.
    const { router, clock } = await start({ zone: "America/New_York", at: Date.UTC(2026, 10, 1, 4, 30) });
    const acct = await limited(router, { RPD: 1 });
    expect((await chat(router, acct.key)).status).toBe(200);
    const refused = await chat(router, acct.key);
    const seconds = Number(refused.headers.get("retry-after"));
    expect(seconds).toBeGreaterThanOrEqual(24.5 * 3600);
    expect(seconds).toBeLessThanOrEqual(24.5 * 3600 + 1);
    // 24 hours later it is 23:30 local on the same business date.
    clock.advance(24 * HOUR);
    expect((await chat(router, acct.key)).status).toBe(429);
    clock.advance(31 * MINUTE);
    expect((await chat(router, acct.key)).status).toBe(200);
  });
});

describe("window edges", () => {
  test("RPM: a call exactly a minute after the counted one is admitted; a millisecond earlier is not", async () => {
    const { router, clock } = await start({ at: Date.UTC(2026, 2, 10, 12, 0, 0, 500) });
    const acct = await limited(router, { RPM: 1 });
    expect((await chat(router, acct.key)).status).toBe(200);
    clock.advance(MINUTE - 1);
    expect((await chat(router, acct.key)).status).toBe(429);
    clock.advance(1);
    expect((await chat(router, acct.key)).status).toBe(200);
  });
});

describe("a manager's ModelLimits bound its children", () => {
  test("a child cannot escape its manager's model limit with a more specific pattern the manager's entry does not cover literally", async () => {
    // Spec 2.2: "Permissions granted can never exceed the caller's own available scope."
    // docs/api.md, Validation: "ModelLimits: ... A child keeps each of the caller's own entries (at or below its values)".
    // docs/api.md, Rate and token limits: the account's ModelLimits apply by "the most specific matching pattern".
    const { router } = await start({ at: Date.UTC(2026, 2, 10, 12) });
    const manager = await limited(router, { Resources: MANAGER_RESOURCES, ModelLimits: { "acme-*": { rpm: 1 } } });
    // The manager itself gets one acme-chat call a minute.
    expect((await chat(router, manager.key)).status).toBe(200);
    expect((await chat(router, manager.key)).status).toBe(429);
    // The child keeps "acme-*" at rpm 1 as required, and adds "*e-chat" (6 literal characters against 5):
    // for acme-chat that entry is the most specific, and nothing bounds it by the manager's entry.
    const created = await api(router, "/x-users", {
      key: manager.key,
      body: { Email: `escape-${Date.now()}@example.com`, CreditGranted: 1, ModelLimits: { "acme-*": { rpm: 1 }, "*e-chat": { rpm: 1000 } } },
    });
    if (created.status === 400) return; // refused at creation: the manager's scope holds
    expect(created.status).toBe(201);
    const child = created.body.APIKey as string;
    expect((await chat(router, child)).status).toBe(200);
    // The manager's own scope on acme-chat is one call a minute: the child's second call must be refused.
    expect((await chat(router, child)).status).toBe(429);
  });
});

describe("token counts", () => {
  test("Anthropic count_tokens answers carry anthropic-ratelimit-* request headers and count in RPM", async () => {
    // docs/api.md, Rate-limit headers: "Anthropic-format answers (/v1/messages, /v1/messages/count_tokens) use Anthropic's names".
    const { router } = await start({ at: Date.UTC(2026, 2, 10, 12) });
    const acct = await limited(router, { RPM: 3 });
    const res = await router.fetch("/v1/messages/count_tokens", {
      method: "POST",
      key: acct.key,
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "acme-claude", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    expect(res.headers.get("anthropic-ratelimit-requests-limit")).toBe("3");
    expect(res.headers.get("anthropic-ratelimit-requests-remaining")).toBe("2");
  });
});

/** A router on `dataDir` with the test PRICING and a key on `upstream`; stopped after the test unless stopped before. */
async function routerOn(dataDir: string, clock: Clock, upstream: MockUpstream, restart = false): Promise<TestRouter> {
  const router = await startRouter({ dataDir, clock, pricing: PRICING });
  let stopped = false;
  const stop = router.stop.bind(router);
  router.stop = async () => {
    if (stopped) return;
    stopped = true;
    await stop();
  };
  scope.later(() => router.stop());
  // A given data directory skips the test PRICING: set it here (it is kept for the restart).
  await router.deps.settings.update({ PRICING });
  if (!restart) await addKey(router, { provider: upstream.url });
  return router;
}

function restartSetup() {
  const clock = createManualClock(Date.UTC(2026, 2, 10, 12));
  const dataDir = tempDir();
  scope.later(() => rmSync(dataDir, { recursive: true, force: true }));
  const upstream = scope.upstream();
  upstream.route("POST", "/v1/chat/completions", (req) =>
    chatCompletion(req.json.model, TOKENS),
  );
  upstream.route("POST", "/v1/messages/count_tokens", () => json({ input_tokens: 14 }));
  return { clock, dataDir, upstream };
}

describe("day quotas across a restart", () => {
  test("RPD used up by chat calls stays used up after a restart", async () => {
    const { clock, dataDir, upstream } = restartSetup();
    const first = await routerOn(dataDir, clock, upstream);
    const acct = await limited(first, { RPD: 2 });
    expect((await chat(first, acct.key)).status).toBe(200);
    expect((await chat(first, acct.key)).status).toBe(200);
    expect((await chat(first, acct.key)).status).toBe(429);
    await first.stop();
    const second = await routerOn(dataDir, clock, upstream, true);
    expect((await chat(second, acct.key)).status).toBe(429);
  });

});

describe("spend limits and limits changed", () => {
  test("HardLimit Retry-After at the end of a leap February in a non-UTC zone runs to March 1st local midnight", async () => {
    // 2028-02-29 12:00 in Tokyo (03:00 UTC); March 1st 00:00 Tokyo is 12 hours later.
    const { router } = await start({ zone: "Asia/Tokyo", at: Date.UTC(2028, 1, 29, 3) });
    const acct = await limited(router, { HardLimit: COST / 2e9 });
    expect((await chat(router, acct.key)).status).toBe(200);
    const refused = await chat(router, acct.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("hard_limit_reached");
    const seconds = Number(refused.headers.get("retry-after"));
    expect(seconds).toBeGreaterThanOrEqual(12 * 3600);
    expect(seconds).toBeLessThanOrEqual(12 * 3600 + 1);
  });

  test("a deleted child's spend still counts against its manager's DailyLimit, after a restart too", async () => {
    // docs/api.md: "An account's DailyLimit and HardLimit hold over the spending of its whole subtree (... deleted ones included)".
    const { clock, dataDir, upstream } = restartSetup();
    const first = await routerOn(dataDir, clock, upstream);
    const manager = await limited(first, { Resources: MANAGER_RESOURCES, DailyLimit: (1.5 * COST) / 1e9 });
    const child = await createAccount(first, { CreditGranted: 1 }, manager.key);
    expect((await chat(first, child.key)).status).toBe(200);
    expect((await chat(first, child.key)).status).toBe(200);
    await waitFor(async () => (await usageRows(first)).filter((r) => r.account_id === child.id).length === 2);
    expect((await api(first, `/x-users/${child.id}`, { method: "DELETE", key: manager.key })).status).toBe(200);
    expect((await chat(first, manager.key)).body.error.code).toBe("daily_limit_reached");
    await first.stop();
    const second = await routerOn(dataDir, clock, upstream, true);
    expect((await chat(second, manager.key)).body.error.code).toBe("daily_limit_reached");
  });

  test("a refusal by MODEL_LIMITS counts in none of the account's windows", async () => {
    const { router, clock } = await start({ at: Date.UTC(2026, 2, 10, 12) });
    expect((await api(router, "/x-config", { method: "PUT", body: { MODEL_LIMITS: { "acme-sys": { rpm: 1 } } } })).status).toBe(200);
    const acct = await limited(router, { RPM: 2 });
    expect((await chat(router, acct.key, "acme-sys")).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await chat(router, acct.key, "acme-sys")).body.error.message).toContain("(model acme-sys)");
    // The account's RPM of 2 has one call in it: one more of another model passes.
    clock.advance(SECOND);
    expect((await chat(router, acct.key, "acme-other")).status).toBe(200);
    expect((await chat(router, acct.key, "acme-other")).body.error.message).toContain("(account)");
  });

  test("lowering an account's RPM applies to its next call; the calls already made count", async () => {
    const { router } = await start({ at: Date.UTC(2026, 2, 10, 12) });
    const acct = await limited(router, { RPM: 5 });
    for (let i = 0; i < 3; i++) expect((await chat(router, acct.key)).status).toBe(200);
    expect((await api(router, `/x-users/${acct.id}`, { method: "PUT", body: { RPM: 3 } })).status).toBe(200);
    const refused = await chat(router, acct.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toContain("RPM limit of 3");
  });
});

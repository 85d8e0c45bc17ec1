import { afterEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { createManualClock } from "../../src/core/clock.ts";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream, type Script } from "../helpers/mock-upstream.ts";
import { chatCompletion } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type StartOptions, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Review of the waits refusals name: a client (the official SDKs obey Retry-After and
 * x-should-retry) that waits exactly what it was told and retries must get through, or
 * be told not to retry. The router's clock is a manual one: "waiting" is advancing it.
 */

const T0 = Date.UTC(2026, 0, 1);

const mocks: MockUpstream[] = [];
const routers: TestRouter[] = [];
afterEach(async () => {
  for (const mock of mocks.splice(0)) await mock.stop();
  for (const router of routers.splice(0)) await router.stop();
});

async function manualRouter(config: StartOptions["config"] = {}) {
  const clock = createManualClock(T0, "UTC");
  const router = await startRouter({ clock, config });
  routers.push(router);
  return { router, clock };
}

function mock(script: Script): MockUpstream {
  const upstream = startMockUpstream().route("POST", "/v1/chat/completions", script);
  mocks.push(upstream);
  return upstream;
}

const completion = { id: "c", object: "chat.completion", created: 1, model: "gpt-x", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } };

function chat(r: TestRouter, model = "gpt-x") {
  return r.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
}

describe("no usable key (503 no_available_key)", () => {
  test("every key asleep after upstream 429s: Retry-After names the soonest wake-up, and a retry after exactly that wait is served", async () => {
    const { router: r, clock } = await manualRouter();
    const state = { limited: true };
    const upstream = mock(() => (state.limited ? json({ error: { message: "quota" } }, 429, { "retry-after": "90" }) : json(completion)));
    await addKey(r, { provider: `${upstream.url}/v1` });
    // Three 429s put the key to sleep for the upstream's 90 s.
    for (let i = 0; i < 3; i++) expect((await chat(r)).status).toBe(429);
    state.limited = false;
    clock.advance(10_000);

    const refused = await chat(r);
    expect(refused.status).toBe(503);
    expect((await refused.json()).error.code).toBe("no_available_key");
    const wait = Number(refused.headers.get("retry-after"));
    expect(wait).toBe(80);
    // Past a minute the SDKs are told not to sleep through it themselves.
    expect(refused.headers.get("x-should-retry")).toBe("false");

    clock.advance(wait * 1000);
    expect((await chat(r)).status).toBe(200);
  });

  test("the upstream 429 that puts the only key to sleep: the 429's Retry-After is the sleep, not the upstream's 1 s; a retry then is served", async () => {
    const { router: r, clock } = await manualRouter();
    const state = { limited: true };
    const upstream = mock(() => (state.limited ? json({ error: { message: "slow down" } }, 429, { "retry-after": "1" }) : json(completion)));
    await addKey(r, { provider: `${upstream.url}/v1` });
    // The first two leave the key awake: the upstream's own second is the truth.
    for (let i = 0; i < 2; i++) {
      const res = await chat(r);
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).toBe("1");
    }
    // The third puts it to sleep for the one-minute cool-down.
    const third = await chat(r);
    expect(third.status).toBe(429);
    state.limited = false;
    const wait = Number(third.headers.get("retry-after"));
    expect(wait).toBe(60);
    clock.advance(wait * 1000);
    expect((await chat(r)).status).toBe(200);
  });

  test("no key for the model at all: 503 that says not to retry (the SDKs would otherwise retry twice in vain)", async () => {
    const { router: r } = await manualRouter();
    const refused = await chat(r);
    expect(refused.status).toBe(503);
    expect((await refused.json()).error.code).toBe("no_available_key");
    expect(refused.headers.get("x-should-retry")).toBe("false");
    expect(refused.headers.get("retry-after")).toBeNull();
  });

  test("no key at all, through the openai SDK with retries: one request, the 503 at once", async () => {
    const { router: r } = await manualRouter();
    let sent = 0;
    const fetchImpl = ((input: RequestInfo | URL, init?: RequestInit) => (sent++, fetch(input, init))) as typeof fetch;
    const client = new OpenAI({ baseURL: `${r.url}/v1`, apiKey: r.ownerKey, fetch: fetchImpl, maxRetries: 3 });
    const error = (await client.chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e)) as { status: number; code: string };
    expect(error.status).toBe(503);
    expect(error.code).toBe("no_available_key");
    expect(sent).toBe(1);
  });

  test("the only key asleep until woken (manual sleep): not to retry either, waiting does not wake it", async () => {
    const { router: r } = await manualRouter();
    const upstream = mock(() => json(completion));
    const key = await addKey(r, { provider: `${upstream.url}/v1` });
    await r.deps.pool.setManualSleep(key.id, true);
    const refused = await chat(r);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("x-should-retry")).toBe("false");
  });
});

const scope = perTest();
const SECOND = 1000;
const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };

/** A router on a manual clock whose upstream answers every chat call with 30 + 30 tokens. */
async function limitedRouter(at = T0, zone = "UTC") {
  const clock = createManualClock(at, zone);
  const { router, upstream } = await scope.gateway({ config: { timeZone: zone }, clock, pricing: PRICING });
  upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model, { prompt: 30, completion: 30 }));
  return { router, clock };
}
const call = (router: TestRouter, key: string, path = "/v1/chat/completions") =>
  api(router, path, { key, body: { model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: "hi" }] } });

/** OpenAI's duration format, parsed back to seconds (`1m0s` → 60, `250ms` → 0.25). */
function durationSeconds(value: string | null): number {
  if (value === null) return NaN;
  if (/^\d+ms$/.test(value)) return Number(value.slice(0, -2)) / 1000;
  let total = 0;
  for (const [, n, unit] of value.matchAll(/(\d+(?:\.\d+)?)(h|m(?!s)|s)/g)) total += Number(n) * (unit === "h" ? 3600 : unit === "m" ? 60 : 1);
  return total;
}

describe("the router's own limits: waiting exactly Retry-After, the retry is served", () => {
  for (const [limits, second] of [
    [{ RPM: 2 }, 20.3],
    [{ RPH: 2 }, 1000.7],
    [{ TPM: 120 }, 20.3],
    [{ TPH: 120 }, 1000.7],
    [{ ModelLimits: { "acme-*": { rpm: 2 } } }, 20.3],
  ] as const) {
    test(`${JSON.stringify(limits)}: the refusal's wait (Retry-After and the reset header alike) is when the oldest call leaves the window`, async () => {
      const { router, clock } = await limitedRouter();
      const acct = await createAccount(router, { CreditGranted: 100, ...limits });
      expect((await call(router, acct.key)).status).toBe(200);
      clock.advance(second * SECOND);
      expect((await call(router, acct.key)).status).toBe(200);
      clock.advance(7 * SECOND);
      const refused = await call(router, acct.key);
      expect(refused.status).toBe(429);
      const wait = Number(refused.headers.get("retry-after"));
      expect(wait).toBeGreaterThan(1);
      // A wait past a minute is not left to the SDKs to sleep through (they would hang the call).
      expect(refused.headers.get("x-should-retry")).toBe(wait > 60 ? "false" : null);
      const kind = "TPM" in limits || "TPH" in limits ? "tokens" : "requests";
      expect(Math.ceil(durationSeconds(refused.headers.get(`x-ratelimit-reset-${kind}`)))).toBe(wait);
      // Waiting a whole second less is still refused: the wait is not padded.
      clock.advance((wait - 1) * SECOND);
      expect((await call(router, acct.key)).status).toBe(429);
      clock.advance(SECOND);
      expect((await call(router, acct.key)).status).toBe(200);
    });
  }

  test("an hour's window spent, through the openai SDK with retries: one request and the RateLimitError at once, not a call hung for the wait", async () => {
    const { router } = await limitedRouter();
    const acct = await createAccount(router, { CreditGranted: 100, RPH: 1 });
    expect((await call(router, acct.key)).status).toBe(200);
    let sent = 0;
    const fetchImpl = ((input: RequestInfo | URL, init?: RequestInit) => (sent++, fetch(input, init))) as typeof fetch;
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: acct.key, fetch: fetchImpl, maxRetries: 2 });
    const error = (await client.chat.completions.create({ model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(Number(error.headers?.get("retry-after"))).toBeGreaterThan(60);
    expect(sent).toBe(1);
  });

  test("two limits reached at once: the refusal names the longer wait (TPH's hour, not RPM's seconds), so the retry after it is served", async () => {
    const { router, clock } = await limitedRouter();
    const acct = await createAccount(router, { CreditGranted: 100, RPM: 2, TPH: 120 });
    expect((await call(router, acct.key)).status).toBe(200);
    clock.advance(20 * SECOND);
    expect((await call(router, acct.key)).status).toBe(200);
    clock.advance(7 * SECOND);
    const refused = await call(router, acct.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toContain("TPH");
    const wait = Number(refused.headers.get("retry-after"));
    expect(Math.ceil(durationSeconds(refused.headers.get("x-ratelimit-reset-tokens")))).toBe(wait);
    clock.advance(wait * SECOND);
    expect((await call(router, acct.key)).status).toBe(200);
  });

  test("RPD in a zone: Retry-After runs to the next business midnight there; a retry then is served", async () => {
    // 2026-06-10 22:00 in Tokyo (UTC+9) = 13:00 UTC: two hours to the business midnight.
    const { router, clock } = await limitedRouter(Date.UTC(2026, 5, 10, 13, 0), "Asia/Tokyo");
    const acct = await createAccount(router, { CreditGranted: 100, RPD: 1 });
    expect((await call(router, acct.key)).status).toBe(200);
    const refused = await call(router, acct.key);
    expect(refused.status).toBe(429);
    const wait = Number(refused.headers.get("retry-after"));
    expect(wait).toBe(2 * 3600);
    clock.advance(wait * SECOND);
    expect((await call(router, acct.key)).status).toBe(200);
  });

  test("DailyLimit spent by settled calls: Retry-After to the next business midnight, then served", async () => {
    const { router, clock } = await limitedRouter(Date.UTC(2026, 5, 10, 20, 30));
    const acct = await createAccount(router, { CreditGranted: 100, DailyLimit: 0.0001 });
    expect((await call(router, acct.key)).status).toBe(200);
    const refused = await call(router, acct.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("daily_limit_reached");
    const wait = Number(refused.headers.get("retry-after"));
    expect(wait).toBe(3.5 * 3600);
    clock.advance(wait * SECOND);
    expect((await call(router, acct.key)).status).toBe(200);
  });

  test("Anthropic clients: retry-after and anthropic-ratelimit-*-reset name the same moment, and a retry then is served", async () => {
    const { router, clock } = await limitedRouter();
    const acct = await createAccount(router, { CreditGranted: 100, RPM: 1 });
    expect((await call(router, acct.key)).status).toBe(200);
    clock.advance(12.4 * SECOND);
    const refused = await call(router, acct.key, "/v1/messages");
    expect(refused.status).toBe(429);
    const wait = Number(refused.headers.get("retry-after"));
    const reset = Date.parse(refused.headers.get("anthropic-ratelimit-requests-reset")!);
    expect(Math.ceil((reset - clock.now()) / SECOND)).toBe(wait);
    clock.advance(wait * SECOND);
    expect((await call(router, acct.key)).status).toBe(200);
  });
});

describe("sign-up limits", () => {
  test("both hourly limits reached (the address's and the recipient's): Retry-After is the longer, and a sign-up then is accepted", async () => {
    const smtp = new SMTPServer({ authOptional: true, disabledCommands: ["STARTTLS"], logger: false, onData: (stream, _s, done) => (stream.resume(), stream.on("end", () => done())) });
    await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", () => resolve()));
    scope.later(() => new Promise<void>((resolve) => smtp.close(() => resolve())));
    const clock = createManualClock(T0, "UTC");
    const smtpPort = (smtp.server.address() as AddressInfo).port;
    const router = await scope.router({ clock, config: { byok: true, signup: true, trustProxy: true, signupSmtp: `smtp://127.0.0.1:${smtpPort}`, signupFrom: "router@example.com" } });
    const signup = (ip: string, email: string) =>
      router.fetch("/x-signup", { method: "POST", key: null, headers: { "x-forwarded-for": ip, "content-type": "application/json" }, body: JSON.stringify({ Email: email }) });
    // 203.0.113.7 uses its five sign-ups at T0; the recipient gets its three mails at +10, +20, +30 min from elsewhere.
    for (let i = 0; i < 5; i++) expect((await signup("203.0.113.7", `other${i}@x.example`)).status).toBe(202);
    for (let i = 1; i <= 3; i++) {
      clock.advance(10 * 60 * SECOND);
      expect((await signup(`198.51.100.${i}`, "wanted@x.example")).status).toBe(202);
    }
    clock.advance(10 * 60 * SECOND);
    // The address is free again in 20 minutes, the recipient in 30.
    const refused = await signup("203.0.113.7", "wanted@x.example");
    expect(refused.status).toBe(429);
    const wait = Number(refused.headers.get("retry-after"));
    expect(wait).toBe(30 * 60);
    clock.advance(wait * SECOND);
    expect((await signup("203.0.113.7", "wanted@x.example")).status).toBe(202);
  });
});

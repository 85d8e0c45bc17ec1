import { describe, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { json, type MockUpstream, type Script } from "../helpers/mock-upstream.ts";
import { api } from "../helpers/owner-ops.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Each provider's real failure answers, as the providers send them: a dead or exhausted
 * key (whatever its status) is put aside and the call goes to another key; a rate limit
 * says how long to wait; the client's own mistake goes back to the client, in its own
 * envelope, from the one key that saw it.
 */

const scope = perTest();

type Format = "openai" | "anthropic" | "gemini";

const CHAT = { model: "acme-1", messages: [{ role: "user", content: "hi" }] };
const MESSAGES = { model: "acme-1", max_tokens: 50, messages: [{ role: "user", content: "hi" }] };
const GEMINI = { contents: [{ role: "user", parts: [{ text: "hi" }] }] };
const PATHS: Record<Format, { client: string; body: unknown; upstream: RegExp }> = {
  openai: { client: "/v1/chat/completions", body: CHAT, upstream: /\/chat\/completions$/ },
  anthropic: { client: "/v1/messages", body: MESSAGES, upstream: /\/messages$/ },
  gemini: { client: "/v1beta/models/acme-1:generateContent", body: GEMINI, upstream: /:generateContent$/ },
};

const ANSWERS: Record<Format, () => Response> = {
  openai: () => json({ id: "c", object: "chat.completion", created: 1, model: "acme-1", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }),
  anthropic: () => json({ id: "msg_1", type: "message", role: "assistant", model: "acme-1", content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 } }),
  gemini: () => json({ candidates: [{ content: { role: "model", parts: [{ text: "ok" }] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 }, modelVersion: "acme-1" }),
};

/** The providers' own failure bodies (their status and shape as they send them). */
const GEMINI_KEY_INVALID = {
  error: {
    code: 400,
    message: "API key not valid. Please pass a valid API key.",
    status: "INVALID_ARGUMENT",
    details: [
      { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com", metadata: { service: "generativelanguage.googleapis.com" } },
      { "@type": "type.googleapis.com/google.rpc.LocalizedMessage", locale: "en-US", message: "API key not valid. Please pass a valid API key." },
    ],
  },
};
const ANTHROPIC_NO_CREDIT = { type: "error", error: { type: "invalid_request_error", message: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits." }, request_id: "req_011" };
const ANTHROPIC_BILLING = { type: "error", error: { type: "billing_error", message: "There is an issue with your billing." } };
const OPENAI_NO_QUOTA = { error: { message: "You exceeded your current quota, please check your plan and billing details.", type: "insufficient_quota", param: null, code: "insufficient_quota" } };
const GEMINI_RATE_LIMITED = {
  error: {
    code: 429,
    message: "You exceeded your current quota, please check your plan and billing details.",
    status: "RESOURCE_EXHAUSTED",
    details: [
      { "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [{ quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests", quotaId: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier" }] },
      { "@type": "type.googleapis.com/google.rpc.Help", links: [{ description: "Learn more about Gemini API quotas", url: "https://ai.google.dev/gemini-api/docs/rate-limits" }] },
      { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "17s" },
    ],
  },
};
const CONTEXT_TOO_LONG = { error: { message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", type: "invalid_request_error", param: "messages", code: "context_length_exceeded" } };

/** A router with two keys of one upstream speaking `format`; the first key's secret marks its calls. */
async function twoKeys(format: Format, fail: Script): Promise<{ router: TestRouter; upstream: MockUpstream; dead: number; good: number }> {
  const upstream = scope.upstream();
  const router = await scope.router();
  const config = { provider_type: "standard" as const, formats: [format] };
  const dead = await addKey(router, { provider: upstream.url, name: "dead", secret: "sk-dead-key-0123456789abcdef", config });
  const good = await addKey(router, { provider: upstream.url, name: "good", config });
  const isDead = (headers: Headers) => [headers.get("authorization"), headers.get("x-api-key"), headers.get("x-goog-api-key")].some((v) => v?.includes("sk-dead-key"));
  upstream.route("POST", PATHS[format].upstream, (request) => (isDead(request.headers) ? fail(request) : ANSWERS[format]()));
  return { router, upstream, dead: dead.id, good: good.id };
}

async function keyRecord(router: TestRouter, id: number) {
  return (await api(router, `/x-keys/${id}`)).body as { Sleeping: boolean; SleepReason: string | null; SleepUntil: string | null };
}

async function logRow(router: TestRouter, requestId: string) {
  await router.deps.usageRecorder.flush();
  return waitFor(async () => {
    const res = await api(router, `/x-requests/${requestId}`);
    return res.status === 200 && (res.body as { attempts: unknown[] }).attempts.length > 0 ? (res.body as { status: number; attempts: Array<{ key_id: number; status: number | null; error: string | null; message: string | null; answered: boolean }> }) : undefined;
  });
}

/** The log record of an Anthropic call answered 200 whose attempts include key `dead` (the pool starts with either key: at most two calls). */
async function answeredAfterTrying(router: TestRouter, dead: number) {
  let row;
  for (let i = 0; i < 2 && !row?.attempts.some((a) => a.key_id === dead); i++) {
    const res = await router.fetch("/v1/messages", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(MESSAGES) });
    expect(res.status).toBe(200);
    await res.text();
    row = await logRow(router, res.headers.get("x-request-id")!);
  }
  return row;
}

describe("a dead or exhausted key is put aside and the call goes to another key", () => {
  const cases: Array<[string, Format, number, unknown]> = [
    ["Gemini 400 INVALID_ARGUMENT, reason API_KEY_INVALID", "gemini", 400, GEMINI_KEY_INVALID],
    ["Anthropic 400 credit balance too low", "anthropic", 400, ANTHROPIC_NO_CREDIT],
    ["Anthropic 402 billing_error", "anthropic", 402, ANTHROPIC_BILLING],
    ["OpenAI 429 insufficient_quota", "openai", 429, OPENAI_NO_QUOTA],
  ];
  for (const [name, format, status, body] of cases) {
    test(name, async () => {
      const { router, upstream, dead, good } = await twoKeys(format, () => json(body, status));
      // Two calls: whichever key round-robin picks first, the dead key is seen once and then left.
      for (let i = 0; i < 2; i++) {
        const res = await api(router, PATHS[format].client, { body: PATHS[format].body });
        expect(res.status).toBe(200);
      }
      const record = await keyRecord(router, dead);
      expect(record.Sleeping).toBe(true);
      expect(record.SleepReason).toBe("auth");
      expect((await keyRecord(router, good)).Sleeping).toBe(false);
      const deadCalls = upstream.requests.filter((r) => JSON.stringify([...r.headers]).includes("sk-dead-key"));
      expect(deadCalls).toHaveLength(1);
      // Further calls never reach the dead key.
      expect((await api(router, PATHS[format].client, { body: PATHS[format].body })).status).toBe(200);
      expect(upstream.requests.filter((r) => JSON.stringify([...r.headers]).includes("sk-dead-key"))).toHaveLength(1);
    });
  }

  test("the request log names the dead key's attempt as failed, with the provider's words", async () => {
    const { router, dead, good } = await twoKeys("anthropic", () => json(ANTHROPIC_NO_CREDIT, 400));
    const row = await answeredAfterTrying(router, dead);
    expect(row!.status).toBe(200);
    expect(row!.attempts.map((a) => [a.key_id, a.status, a.answered])).toEqual([
      [dead, 400, false],
      [good, 200, true],
    ]);
    expect(row!.attempts[0]!.error).toBe("status");
    expect(row!.attempts[0]!.message).toContain("credit balance is too low");
  });
});

describe("a rate limit says how long", () => {
  test("Gemini 429 RESOURCE_EXHAUSTED with RetryInfo retryDelay 17s: the client's Retry-After is 17", async () => {
    const upstream = scope.upstream();
    const router = await scope.router();
    await addKey(router, { provider: upstream.url, noSleep: true, config: { provider_type: "standard", formats: ["gemini"] } });
    upstream.route("POST", /:generateContent$/, () => json(GEMINI_RATE_LIMITED, 429));
    const res = await api(router, PATHS.gemini.client, { body: GEMINI });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("17");
  });

  test("OpenAI 429 with only x-ratelimit-* headers: the exhausted limit's reset is the client's Retry-After", async () => {
    const upstream = scope.upstream();
    const router = await scope.router();
    await addKey(router, { provider: upstream.url, noSleep: true, config: { provider_type: "standard", formats: ["openai"] } });
    const limited = { error: { message: "Rate limit reached for gpt-4o on requests per day (RPD): Limit 200, Used 200, Requested 1.", type: "requests", param: null, code: "rate_limit_exceeded" } };
    upstream.route("POST", /\/chat\/completions$/, () =>
      json(limited, 429, { "x-ratelimit-limit-requests": "200", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s", "x-ratelimit-remaining-tokens": "29000", "x-ratelimit-reset-tokens": "1.5s" }),
    );
    const res = await api(router, "/v1/chat/completions", { body: CHAT });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("360");
  });
});

describe("the client's own mistake is relayed from the one key that saw it", () => {
  test("Chat 400 context_length_exceeded: relayed as is, no other key tried, the key stays awake", async () => {
    const { router, upstream, dead, good } = await twoKeys("openai", () => json(CONTEXT_TOO_LONG, 400));
    const attempts = () => upstream.requests.length;
    let res;
    // The key that answers the mistake is the first one round-robin picks; the call stops there.
    for (let i = 0; i < 2; i++) {
      const before = attempts();
      res = await api(router, "/v1/chat/completions", { body: CHAT });
      if (res.status === 400) {
        expect(attempts() - before).toBe(1);
        break;
      }
    }
    expect(res!.status).toBe(400);
    expect((res!.body as typeof CONTEXT_TOO_LONG).error.code).toBe("context_length_exceeded");
    expect((await keyRecord(router, dead)).Sleeping).toBe(false);
    expect((await keyRecord(router, good)).Sleeping).toBe(false);
  });

  test("an upstream 400 that merely echoes a dead-account phrase from the client's words stays the client's mistake", async () => {
    const echo = { type: "error", error: { type: "invalid_request_error", message: "messages.0: unexpected text 'Your credit balance is too low to access the Anthropic API'" } };
    const { router, upstream, dead } = await twoKeys("anthropic", () => json(echo, 400));
    let res;
    for (let i = 0; i < 2 && res?.status !== 400; i++) res = await api(router, "/v1/messages", { body: MESSAGES });
    expect(res!.status).toBe(400);
    expect(upstream.requests.filter((r) => r.headers.get("x-api-key")?.includes("sk-dead-key"))).toHaveLength(1);
    expect((await keyRecord(router, dead)).Sleeping).toBe(false);
  });

  test("an Anthropic client routed to a Chat upstream that says context_length_exceeded gets an Anthropic invalid_request_error 400", async () => {
    const upstream = scope.upstream();
    const router = await scope.router();
    await addKey(router, { provider: upstream.url, config: { provider_type: "standard", formats: ["openai"] } });
    upstream.route("POST", /\/chat\/completions$/, () => json(CONTEXT_TOO_LONG, 400));
    const res = await api(router, "/v1/messages", { body: MESSAGES });
    expect(res.status).toBe(400);
    const body = res.body as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain("maximum context length");
    expect(upstream.requests).toHaveLength(1);
  });

  test("a Gemini client routed to an Anthropic upstream that is overloaded (529) is not told it erred", async () => {
    const upstream = scope.upstream();
    const router = await scope.router();
    await addKey(router, { provider: upstream.url, noSleep: true, config: { provider_type: "standard", formats: ["anthropic"] } });
    upstream.route("POST", /\/messages$/, () => json({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, 529));
    const res = await api(router, PATHS.gemini.client, { body: GEMINI });
    expect(res.status).toBe(502);
    expect((res.body as { error: { status: string } }).error.status).toBeDefined();
  });
});

describe("an overloaded provider fails over and the key stays in rotation", () => {
  test("Anthropic 529 overloaded_error on one key: the call is answered by the other, the key is not put to sleep", async () => {
    const { router, dead, good } = await twoKeys("anthropic", () => json({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, 529));
    const row = await answeredAfterTrying(router, dead);
    expect(row!.attempts.map((a) => [a.key_id, a.status, a.error, a.answered])).toEqual([
      [dead, 529, "status", false],
      [good, 200, null, true],
    ]);
    expect((await keyRecord(router, dead)).Sleeping).toBe(false);
  });
});

describe("a dead key with no other key to take the call", () => {
  test("the client gets a 502 in its own envelope naming the key's refusal, then 503 no_available_key", async () => {
    const upstream = scope.upstream();
    const router = await scope.router();
    const only = await addKey(router, { provider: upstream.url, config: { provider_type: "standard", formats: ["anthropic"] } });
    upstream.route("POST", /\/messages$/, () => json(ANTHROPIC_NO_CREDIT, 400));
    const first = await api(router, "/v1/messages", { body: MESSAGES });
    expect(first.status).toBe(502);
    const body = first.body as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe("error");
    expect(body.error.message).toContain("refused the provider key");
    expect((await keyRecord(router, only.id)).SleepReason).toBe("auth");
    const second = await api(router, "/v1/messages", { body: MESSAGES });
    expect(second.status).toBe(503);
    expect(upstream.requests).toHaveLength(1);
  });
});

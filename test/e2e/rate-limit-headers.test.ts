import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import { openAiDuration, rfc3339Seconds } from "../../src/metering/rate-limit-headers.ts";
import { addKey } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

/**
 * Issue 17: model answers carry the tightest request and token window of the caller's
 * limits (account, ModelLimits, MODEL_LIMITS) as OpenAI's x-ratelimit-* headers, or
 * Anthropic's anthropic-ratelimit-* on Anthropic-format answers; none on Gemini answers
 * and none when no limit applies. A manual clock makes the resets exact.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const T0 = Date.UTC(2026, 2, 10, 12);
const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
const USAGE = { prompt_tokens: 30, completion_tokens: 30, total_tokens: 60 };

let upstream: MockUpstream;
let router: TestRouter;
let clock: ReturnType<typeof createManualClock>;

beforeAll(() => {
  upstream = startMockUpstream();
});
afterAll(async () => {
  await upstream.stop();
});
beforeEach(async () => {
  upstream.reset();
  upstream.route("POST", "/v1/chat/completions", (req) =>
    req.json.stream
      ? sse(
          [
            { id: "c", object: "chat.completion.chunk", created: 1, model: req.json.model, choices: [{ index: 0, delta: { content: "ok" }, finish_reason: null }] },
            { id: "c", object: "chat.completion.chunk", created: 1, model: req.json.model, choices: [], usage: USAGE },
          ],
          { done: true },
        )
      : json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: USAGE }),
  );
  upstream.route("POST", "/v1/messages", (req) =>
    json({ id: "m", type: "message", role: "assistant", model: req.json.model, content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 30, output_tokens: 30 } }),
  );
  upstream.route("POST", /:generateContent$/, () =>
    json({ candidates: [{ content: { role: "model", parts: [{ text: "ok" }] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 30, totalTokenCount: 60 } }),
  );
  clock = createManualClock(T0);
  router = await startRouter({ clock, pricing: PRICING });
  await addKey(router, { provider: upstream.url });
});
afterEach(async () => {
  await router.stop();
});

let emails = 0;
async function account(fields: Record<string, unknown>): Promise<string> {
  const res = await router.fetch("/x-users", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ Email: `rl${++emails}@example.com`, CreditGranted: 100, ...fields }) });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(body)}`);
  return body.APIKey as string;
}

async function chat(key: string, options: { model?: string; stream?: boolean; maxTokens?: number } = {}) {
  const res = await router.fetch("/v1/chat/completions", {
    method: "POST",
    key,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: options.model ?? "acme-chat", max_tokens: options.maxTokens ?? 100, stream: options.stream, messages: [{ role: "user", content: "hi" }] }),
  });
  await res.text();
  return res;
}

/** The six OpenAI headers of an answer (null where absent). */
function openai(res: Response) {
  const h = (name: string) => res.headers.get(name);
  return {
    limitRequests: h("x-ratelimit-limit-requests"),
    remainingRequests: h("x-ratelimit-remaining-requests"),
    resetRequests: h("x-ratelimit-reset-requests"),
    limitTokens: h("x-ratelimit-limit-tokens"),
    remainingTokens: h("x-ratelimit-remaining-tokens"),
    resetTokens: h("x-ratelimit-reset-tokens"),
  };
}

const NONE = { limitRequests: null, remainingRequests: null, resetRequests: null, limitTokens: null, remainingTokens: null, resetTokens: null };

describe("OpenAI's duration format", () => {
  test("milliseconds under a second, then seconds, minutes and hours", () => {
    expect(openAiDuration(0)).toBe("0ms");
    expect(openAiDuration(250)).toBe("250ms");
    expect(openAiDuration(999.2)).toBe("1000ms");
    expect(openAiDuration(1000)).toBe("1s");
    expect(openAiDuration(1001)).toBe("2s");
    expect(openAiDuration(360_000)).toBe("6m0s");
    expect(openAiDuration(3_723_000)).toBe("1h2m3s");
    expect(rfc3339Seconds(Date.UTC(2026, 2, 10, 12, 0, 59, 1))).toBe("2026-03-10T12:01:00Z");
  });
});

describe("rate-limit headers", () => {
  test("count down across calls, reset as the oldest call leaves the minute, and start over after it; the 429 says 0 left", async () => {
    const key = await account({ RPM: 3 });
    const first = await chat(key);
    expect(first.status).toBe(200);
    expect(openai(first)).toEqual({ ...NONE, limitRequests: "3", remainingRequests: "2", resetRequests: "1m0s" });
    clock.advance(10 * SECOND);
    expect(openai(await chat(key))).toEqual({ ...NONE, limitRequests: "3", remainingRequests: "1", resetRequests: "50s" });
    clock.advance(10 * SECOND);
    expect(openai(await chat(key))).toEqual({ ...NONE, limitRequests: "3", remainingRequests: "0", resetRequests: "40s" });
    const refused = await chat(key);
    expect(refused.status).toBe(429);
    expect(openai(refused)).toEqual({ ...NONE, limitRequests: "3", remainingRequests: "0", resetRequests: "40s" });
    expect(refused.headers.get("retry-after")).toBe("40");
    // A minute after the first call it has left the window: one more is free.
    clock.advance(40 * SECOND);
    expect(openai(await chat(key))).toMatchObject({ limitRequests: "3", remainingRequests: "0", resetRequests: "10s" });
    // Past every call's minute, the window starts over.
    clock.advance(2 * MINUTE);
    expect(openai(await chat(key))).toMatchObject({ limitRequests: "3", remainingRequests: "2", resetRequests: "1m0s" });
  });

  test("the tightest window wins: among the account's, its ModelLimits and MODEL_LIMITS, the one with the least left", async () => {
    const key = await account({ RPM: 10, RPD: 100, TPM: 100_000, ModelLimits: { "acme-lim*": { rpm: 4 } } });
    expect(openai(await chat(key))).toMatchObject({ limitRequests: "10", remainingRequests: "9" });
    // The account's model limit has less left for its models.
    expect(openai(await chat(key, { model: "acme-limited" }))).toMatchObject({ limitRequests: "4", remainingRequests: "3" });
    // A system limit tighter still.
    const config = await router.fetch("/x-config", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ MODEL_LIMITS: { "acme-limited": { rpm: 2, tpm: 500 } } }) });
    expect(config.status).toBe(200);
    const tight = openai(await chat(key, { model: "acme-limited" }));
    expect(tight).toMatchObject({ limitRequests: "2", remainingRequests: "1", limitTokens: "500", resetTokens: "1m0s" });
    // A day quota with less left than any window: its reset runs to the next business day (UTC midnight here).
    const daily = await account({ RPM: 10, RPD: 3 });
    expect(openai(await chat(daily))).toMatchObject({ limitRequests: "3", remainingRequests: "2", resetRequests: "12h0m0s" });
  });

  test("remaining tokens: the limit less settled tokens and reservations, this call's included", async () => {
    const key = await account({ TPM: 10_000 });
    const first = openai(await chat(key));
    expect(first.limitTokens).toBe("10000");
    const reservation = 10_000 - Number(first.remainingTokens);
    // The reservation covers the call's worst case: at least its max_tokens.
    expect(reservation).toBeGreaterThanOrEqual(100);
    expect(first.limitRequests).toBeNull();
    // The first call settled at 60 tokens; the second reserves the same again.
    const second = openai(await chat(key));
    expect(Number(second.remainingTokens)).toBe(10_000 - 60 - reservation);
  });

  test("streams carry them too", async () => {
    const key = await account({ RPM: 5 });
    const res = await chat(key, { stream: true });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    expect(openai(res)).toMatchObject({ limitRequests: "5", remainingRequests: "4", resetRequests: "1m0s" });
  });

  test("Anthropic-format answers use Anthropic's names, the reset as an RFC 3339 time; Gemini answers carry none", async () => {
    const key = await account({ RPM: 5, TPM: 50_000 });
    const res = await router.fetch("/v1/messages", {
      method: "POST",
      key,
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "acme-claude", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    expect(res.headers.get("anthropic-ratelimit-requests-limit")).toBe("5");
    expect(res.headers.get("anthropic-ratelimit-requests-remaining")).toBe("4");
    expect(res.headers.get("anthropic-ratelimit-requests-reset")).toBe("2026-03-10T12:01:00Z");
    expect(res.headers.get("anthropic-ratelimit-tokens-limit")).toBe("50000");
    expect(Number(res.headers.get("anthropic-ratelimit-tokens-remaining"))).toBeLessThan(50_000 - 100);
    expect(res.headers.get("anthropic-ratelimit-tokens-reset")).toBe("2026-03-10T12:01:00Z");
    expect(res.headers.get("x-ratelimit-limit-requests")).toBeNull();

    const gemini = await router.fetch("/v1beta/models/acme-gem:generateContent", {
      method: "POST",
      key,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
    });
    expect(gemini.status).toBe(200);
    await gemini.text();
    const names = [...gemini.headers.keys()].filter((name) => name.includes("ratelimit"));
    expect(names).toEqual([]);
  });

  test("no limit, no headers", async () => {
    const key = await account({});
    const res = await chat(key);
    expect(res.status).toBe(200);
    expect(openai(res)).toEqual(NONE);
    expect([...res.headers.keys()].filter((name) => name.includes("ratelimit"))).toEqual([]);
  });
});

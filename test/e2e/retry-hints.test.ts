import { describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { json, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Issue 13, item 17: a refusal that waiting cannot cure says so (`x-should-retry:
 * false`), so the official SDKs stop at once; one that only calls in flight cause is a
 * retryable 429 with `Retry-After: 1`.
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
const completion = { id: "c", object: "chat.completion", created: 1, model: "acme-chat", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 } };
const BODY = { model: "acme-chat", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };

const scope = perTest();

async function start(): Promise<{ router: TestRouter; upstream: MockUpstream }> {
  const { router, upstream } = await scope.gateway();
  expect((await api(router, "/x-config", { method: "PUT", body: { PRICING } })).status).toBe(200);
  return { router, upstream };
}

/** A fetch that counts what an SDK sends to the router. */
function counting() {
  const calls = { n: 0 };
  const fetchImpl = ((input: RequestInfo | URL, init?: RequestInit) => {
    calls.n++;
    return fetch(input, init);
  }) as typeof fetch;
  return { calls, fetchImpl };
}

describe("refusals waiting cannot cure: x-should-retry false, the SDKs stop at once", () => {
  test("no credit: the openai SDK with its default retries sends one request", async () => {
    const { router, upstream } = await start();
    const broke = await createAccount(router);
    const { calls, fetchImpl } = counting();
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: broke.key, fetch: fetchImpl, maxRetries: 3 });
    const error = (await client.chat.completions.create({ model: "acme-chat", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)) as { status: number; code: string };
    expect(error.status).toBe(429);
    expect(error.code).toBe("insufficient_credit");
    expect(calls.n).toBe(1);
    expect(upstream.requests).toHaveLength(0);
  });

  test("no credit: the Anthropic SDK with its default retries sends one request", async () => {
    const { router } = await start();
    const broke = await createAccount(router);
    const { calls, fetchImpl } = counting();
    const client = new Anthropic({ baseURL: router.url, apiKey: broke.key, fetch: fetchImpl, maxRetries: 3 });
    const error = (await client.messages.create({ model: "acme-claude", max_tokens: 10, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)) as { status: number };
    expect(error.status).toBe(429);
    expect(calls.n).toBe(1);
  });

  test("HardLimit spent: x-should-retry false", async () => {
    const { router, upstream } = await start();
    upstream.route("POST", "/v1/chat/completions", () => json(completion));
    // The first call spends exactly the limit (10 × 2 + 10 × 8 = 100,000 nano-credits).
    const capped = await createAccount(router, { CreditGranted: 100, HardLimit: 0.0001 });
    expect((await api(router, "/v1/chat/completions", { key: capped.key, body: BODY })).status).toBe(200);
    const res = await api(router, "/v1/chat/completions", { key: capped.key, body: BODY });
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe("hard_limit_reached");
    expect(res.headers.get("x-should-retry")).toBe("false");
  });

  test("a model the account may not use (403): x-should-retry false", async () => {
    const { router } = await start();
    const limited = await createAccount(router, { CreditGranted: 100, AllowModels: "other-*" });
    const res = await api(router, "/v1/chat/completions", { key: limited.key, body: BODY });
    expect(res.status).toBe(403);
    expect(res.headers.get("x-should-retry")).toBe("false");
  });
});

describe("refusals only calls in flight cause: retryable, Retry-After 1", () => {
  test("credit held by a call in flight: 429 with Retry-After 1 and no x-should-retry; after it ends the next call passes", async () => {
    const { router, upstream } = await start();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let first = true;
    upstream.route("POST", "/v1/chat/completions", async () => {
      if (first) {
        first = false;
        await held;
      }
      return json(completion);
    });
    // Less than one worst case: the first call's reservation holds more than the balance.
    const account = await createAccount(router, { CreditGranted: 0.0015 });
    const slow = api(router, "/v1/chat/completions", { key: account.key, body: BODY });
    await waitFor(() => upstream.requests.length === 1);
    const refused = await api(router, "/v1/chat/completions", { key: account.key, body: BODY });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("insufficient_credit");
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("x-should-retry")).toBeNull();
    release();
    expect((await slow).status).toBe(200);
    expect((await api(router, "/v1/chat/completions", { key: account.key, body: BODY })).status).toBe(200);
  });
});

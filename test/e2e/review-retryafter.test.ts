import { afterEach, describe, expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream, type Script } from "../helpers/mock-upstream.ts";
import { startRouter, type StartOptions, type TestRouter } from "../helpers/router.ts";

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
    expect(refused.headers.get("x-should-retry")).toBeNull();
    const wait = Number(refused.headers.get("retry-after"));
    expect(wait).toBe(80);

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

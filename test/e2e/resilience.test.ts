import { afterEach, describe, expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import { addKey, usageRows } from "../helpers/keys.ts";
import { hang, json, startMockUpstream, type MockUpstream, type Script } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type StartOptions, type TestRouter } from "../helpers/router.ts";

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
/** Nothing listens on port 1: the connection is refused at once. */
const REFUSED = "https://127.0.0.1:1/v1";

const mocks: MockUpstream[] = [];
const routers: TestRouter[] = [];
afterEach(async () => {
  // Mocks first: closing them ends any upstream call a router still waits on.
  for (const mock of mocks.splice(0)) await mock.stop();
  for (const router of routers.splice(0)) await router.stop();
});

async function router(options: StartOptions = {}): Promise<TestRouter> {
  const started = await startRouter(options);
  routers.push(started);
  return started;
}

async function manualRouter(config: StartOptions["config"] = {}) {
  const clock = createManualClock(T0, "UTC");
  return { router: await router({ clock, config }), clock };
}

/** An HTTPS upstream answering chat completions with `script`. */
function mock(script: Script): MockUpstream {
  const upstream = startMockUpstream().route("POST", "/v1/chat/completions", script);
  mocks.push(upstream);
  return upstream;
}

const completion = (content = "ok") => ({
  id: "chatcmpl-r",
  object: "chat.completion",
  created: 1,
  model: "gpt-x",
  choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
});
const ok: Script = () => json(completion());
const fail500: Script = () => json({ error: { message: "upstream exploded", type: "server_error" } }, 500);

function chat(r: TestRouter, model = "gpt-x", init: RequestInit = {}) {
  return r.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
    ...init,
  });
}

/** A promise the test settles later, to hold an upstream answer. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const lastRow = async (r: TestRouter) => (await usageRows(r)).at(-1)!;

describe("retry onto another key", () => {
  test.each([
    ["500", fail500],
    ["429", () => json({ error: { message: "slow down" } }, 429, { "retry-after": "1" })],
    ["503", () => json({ error: { message: "overloaded" } }, 503)],
    ["a refused connection", undefined],
  ] as Array<[string, Script | undefined]>)("the first key fails with %s: the second key serves the call", async (_name, script) => {
    const r = await router();
    const bad = script ? mock(script) : undefined;
    const good = mock(ok);
    const first = await addKey(r, { provider: bad ? `${bad.url}/v1` : REFUSED });
    const second = await addKey(r, { provider: `${good.url}/v1` });

    const res = await chat(r);
    expect(res.status).toBe(200);
    expect((await res.json()).choices[0].message.content).toBe("ok");
    if (bad) {
      expect(bad.requests).toHaveLength(1);
      expect(bad.requests[0]!.headers.get("authorization")).toBe(`Bearer ${first.secret}`);
    } else {
      expect(r.logs.some((line) => line.includes("failure=refused") && line.includes(`key=${first.id}`))).toBe(true);
    }
    expect(good.requests).toHaveLength(1);
    expect(good.requests[0]!.headers.get("authorization")).toBe(`Bearer ${second.secret}`);
    const rows = await usageRows(r);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 200, key_id: second.id, level: 1, prompt_tokens: 3, completion_tokens: 2, source: "upstream" });
  });
});

describe("upstream 401/403", () => {
  test.each([401, 403])("%d: the key sleeps with reason auth and another key serves the call", async (status) => {
    const r = await router();
    const bad = mock(() => json({ error: { message: "Incorrect API key provided", code: "invalid_api_key" } }, status));
    const good = mock(ok);
    const first = await addKey(r, { provider: `${bad.url}/v1` });
    const second = await addKey(r, { provider: `${good.url}/v1` });

    const res = await chat(r);
    expect(res.status).toBe(200);
    expect(bad.requests).toHaveLength(1);
    expect(r.deps.pool.get(first.id)).toMatchObject({ sleeping: true, sleepReason: "auth", sleepUntil: null });
    expect(await r.deps.providerKeys.get(first.id)).toMatchObject({ sleeping: true, sleepReason: "auth", sleepUntil: null });
    expect(await lastRow(r)).toMatchObject({ status: 200, key_id: second.id });

    // The sleeping key gets no more traffic.
    for (let i = 0; i < 3; i++) expect((await chat(r)).status).toBe(200);
    expect(bad.requests).toHaveLength(1);
    expect(good.requests).toHaveLength(4);
  });

  test("with only that key the client gets 502 then 503 in its envelope, never 401", async () => {
    const r = await router();
    const bad = mock(() => json({ error: { message: "Incorrect API key provided", code: "invalid_api_key" } }, 401));
    const only = await addKey(r, { provider: `${bad.url}/v1` });

    const first = await chat(r);
    expect(first.status).toBe(502);
    const body = await first.json();
    expect(body.error).toMatchObject({ type: "api_error", code: "upstream_error" });
    expect(JSON.stringify(body)).not.toContain("Incorrect API key");
    expect(r.deps.pool.get(only.id)!.sleepReason).toBe("auth");

    const second = await chat(r);
    expect(second.status).toBe(503);
    expect((await second.json()).error.code).toBe("no_available_key");
    expect(bad.requests).toHaveLength(1);
  });
});

describe("exhaustion", () => {
  test("every key 500: 502 in the OpenAI envelope without any upstream secret or message", async () => {
    const r = await router();
    const upstream = mock((req) =>
      json({ error: { message: `key ${req.headers.get("authorization")} is broken`, type: "server_error" } }, 500),
    );
    const a = await addKey(r, { provider: `${upstream.url}/v1` });
    const b = await addKey(r, { provider: `${upstream.url}/v1` });

    const res = await chat(r);
    expect(res.status).toBe(502);
    expect(res.headers.get("content-type")).toContain("application/json");
    const text = await res.text();
    const body = JSON.parse(text);
    expect(body).toEqual({ error: { message: expect.any(String), type: "api_error", param: null, code: "upstream_error" } });
    for (const secret of [a.secret, b.secret]) {
      expect(text).not.toContain(secret);
      expect(r.logs.join("\n")).not.toContain(secret);
    }
    expect(text).not.toContain("is broken");
    expect(upstream.requests).toHaveLength(2);
    expect(await lastRow(r)).toMatchObject({ status: 502, key_id: null });
  });

  test("every key 429 with Retry-After: 7: the client gets 429 with Retry-After", async () => {
    const r = await router();
    const upstream = mock(() => json({ error: { message: "rate limited" } }, 429, { "retry-after": "7" }));
    await addKey(r, { provider: `${upstream.url}/v1` });
    await addKey(r, { provider: `${upstream.url}/v1` });

    const res = await chat(r);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("7");
    expect((await res.json()).error).toMatchObject({ type: "rate_limit_error", code: "upstream_rate_limited" });
    expect(upstream.requests).toHaveLength(2);
  });

  test("maxAttempts bounds the upstream calls: 3 failing keys, maxAttempts 2, exactly 2 requests", async () => {
    const r = await router({ config: { maxAttempts: 2 } });
    const upstream = mock(fail500);
    const keys = [];
    for (let i = 0; i < 3; i++) keys.push(await addKey(r, { provider: `${upstream.url}/v1` }));

    const res = await chat(r);
    expect(res.status).toBe(502);
    expect(upstream.requests).toHaveLength(2);
    const used = upstream.requests.map((req) => req.headers.get("authorization"));
    expect(new Set(used).size).toBe(2);
    expect(keys.map((k) => `Bearer ${k.secret}`)).toEqual(expect.arrayContaining(used));
  });

  test("the default of 3 attempts also spans keys of the backup Level", async () => {
    const r = await router();
    await r.deps.settings.update({ SWITCH_OVER: "1=2" });
    const l1 = mock(fail500);
    const l2 = mock(fail500);
    await addKey(r, { provider: `${l1.url}/v1`, level: 1 });
    await addKey(r, { provider: `${l1.url}/v1`, level: 1 });
    await addKey(r, { provider: `${l2.url}/v1`, level: 2 });
    await addKey(r, { provider: `${l2.url}/v1`, level: 2 });

    expect((await chat(r)).status).toBe(502);
    expect(l1.requests).toHaveLength(2);
    expect(l2.requests).toHaveLength(1);
  });
});

describe("SWITCH_OVER", () => {
  /** Level 1 (NoSleep, scripted by `mode`) backed by Level 2 (always fine). */
  async function setup(switchOver = "1=2") {
    // A client that leaves lets the upstream run on for the drain time: short here.
    const { router: r, clock } = await manualRouter({ drainTimeoutMs: 200 });
    await r.deps.settings.update({ LEVEL_MAPPER: "gpt-x=1", SWITCH_OVER: switchOver });
    const state = { mode: "fail" as "fail" | "ok" | "hold" | "hang" | "client-error", held: deferred<void>() };
    const primary = mock(async () => {
      if (state.mode === "hang") return hang();
      if (state.mode === "hold") await state.held.promise;
      if (state.mode === "client-error") return json({ error: { message: "bad request" } }, 400);
      return state.mode === "fail" ? fail500({} as never) : json(completion("from level 1"));
    });
    const backup = mock(() => json(completion("from level 2")));
    const k1 = await addKey(r, { provider: `${primary.url}/v1`, level: 1, noSleep: true });
    const k2 = await addKey(r, { provider: `${backup.url}/v1`, level: 2 });
    const servedBy = async (init?: RequestInit) => {
      const res = await chat(r, "gpt-x", init);
      expect(res.status).toBe(200);
      return (await res.json()).choices[0].message.content as string;
    };
    return { r, clock, state, primary, backup, k1, k2, servedBy };
  }

  test("the sixth error in a minute sends calls straight to the backup", async () => {
    const { r, primary, backup, servedBy } = await setup();
    for (let i = 1; i <= 5; i++) {
      expect(await servedBy()).toBe("from level 2");
      expect(primary.requests).toHaveLength(i);
    }
    expect(r.deps.switchOver.isSwitched(1)).toBe(false);
    // The sixth call still tries Level 1: its error is the sixth.
    expect(await servedBy()).toBe("from level 2");
    expect(primary.requests).toHaveLength(6);
    expect(r.deps.switchOver.isSwitched(1)).toBe(true);

    for (let i = 0; i < 3; i++) expect(await servedBy()).toBe("from level 2");
    expect(primary.requests).toHaveLength(6);
    expect(backup.requests).toHaveLength(9);
    expect(await lastRow(r)).toMatchObject({ level: 2, status: 200 });
  });

  test("client errors (4xx) on the primary never switch it", async () => {
    const { r, state, primary } = await setup();
    state.mode = "client-error";
    for (let i = 0; i < 8; i++) expect((await chat(r)).status).toBe(400);
    expect(primary.requests).toHaveLength(8);
    expect(r.deps.switchOver.isSwitched(1)).toBe(false);
  });

  test("errors spread over more than a minute do not switch", async () => {
    const { r, clock, primary, servedBy } = await setup();
    for (let i = 0; i < 5; i++) await servedBy();
    clock.advance(61_000);
    for (let i = 0; i < 5; i++) await servedBy();
    expect(r.deps.switchOver.isSwitched(1)).toBe(false);
    expect(primary.requests).toHaveLength(10);
  });

  test("after a quiet minute one probe goes to Level 1; its failure keeps traffic on Level 2", async () => {
    const { r, clock, primary, servedBy } = await setup();
    for (let i = 0; i < 6; i++) await servedBy();
    expect(r.deps.switchOver.isSwitched(1)).toBe(true);

    clock.advance(MINUTE - 1);
    expect(await servedBy()).toBe("from level 2");
    expect(primary.requests).toHaveLength(6);

    clock.advance(1);
    // The probe fails (500) and is retried on Level 2: the client does not notice.
    expect(await servedBy()).toBe("from level 2");
    expect(primary.requests).toHaveLength(7);
    for (let i = 0; i < 3; i++) expect(await servedBy()).toBe("from level 2");
    expect(primary.requests).toHaveLength(7);
    expect(r.deps.switchOver.isSwitched(1)).toBe(true);

    // Another quiet minute, another single probe.
    clock.advance(MINUTE);
    await servedBy();
    await servedBy();
    expect(primary.requests).toHaveLength(8);
  });

  test("a successful probe returns traffic to Level 1; only one probe is out at a time", async () => {
    const { r, clock, state, primary, backup, k1, servedBy } = await setup();
    for (let i = 0; i < 6; i++) await servedBy();
    clock.advance(MINUTE);

    state.mode = "hold";
    const probe = servedBy();
    await waitFor(() => primary.requests.length === 7, 5000, "the probe");
    // While the probe is out, other calls stay on Level 2.
    const backupBefore = backup.requests.length;
    expect(await servedBy()).toBe("from level 2");
    expect(await servedBy()).toBe("from level 2");
    expect(primary.requests).toHaveLength(7);
    expect(backup.requests).toHaveLength(backupBefore + 2);

    state.mode = "ok";
    state.held.resolve();
    expect(await probe).toBe("from level 1");
    expect(r.deps.switchOver.isSwitched(1)).toBe(false);

    for (let i = 0; i < 3; i++) expect(await servedBy()).toBe("from level 1");
    expect(primary.requests).toHaveLength(10);
    expect(backup.requests).toHaveLength(backupBefore + 2);
    expect(await lastRow(r)).toMatchObject({ level: 1, key_id: k1.id, status: 200 });
  });

  test("a probe whose client went away does not block the next probe", async () => {
    const { r, clock, state, primary, servedBy } = await setup();
    for (let i = 0; i < 6; i++) await servedBy();
    clock.advance(MINUTE);

    state.mode = "hang";
    const controller = new AbortController();
    const abandoned = chat(r, "gpt-x", { signal: controller.signal }).catch((error: Error) => error);
    await waitFor(() => primary.requests.length === 7, 5000, "the probe");
    controller.abort();
    await abandoned;
    await waitFor(async () => (await usageRows(r)).some((row) => row.status === 499), 5000, "the 499 row");

    state.mode = "ok";
    expect(await servedBy()).toBe("from level 1");
    expect(primary.requests).toHaveLength(8);
    expect(r.deps.switchOver.isSwitched(1)).toBe(false);
  });

  test("chains 1=2,2=3: with Levels 1 and 2 both failing, calls go straight to Level 3", async () => {
    const { router: r, clock } = await manualRouter();
    await r.deps.settings.update({ SWITCH_OVER: "1=2,2=3" });
    let primariesFail = true;
    const l1 = mock(() => (primariesFail ? fail500({} as never) : json(completion("from level 1"))));
    const l2 = mock(() => (primariesFail ? fail500({} as never) : json(completion("from level 2"))));
    const l3 = mock(() => json(completion("from level 3")));
    await addKey(r, { provider: `${l1.url}/v1`, level: 1, noSleep: true });
    await addKey(r, { provider: `${l2.url}/v1`, level: 2, noSleep: true });
    await addKey(r, { provider: `${l3.url}/v1`, level: 3 });
    const content = async () => (await (await chat(r)).json()).choices[0].message.content;

    for (let i = 0; i < 6; i++) expect(await content()).toBe("from level 3");
    expect(l1.requests).toHaveLength(6);
    expect(l2.requests).toHaveLength(6);
    expect(r.deps.switchOver.isSwitched(1)).toBe(true);
    expect(r.deps.switchOver.isSwitched(2)).toBe(true);

    for (let i = 0; i < 3; i++) expect(await content()).toBe("from level 3");
    expect(l1.requests).toHaveLength(6);
    expect(l2.requests).toHaveLength(6);
    expect(await lastRow(r)).toMatchObject({ level: 3 });

    // Both recover; after a quiet minute Level 1's probe brings its traffic home.
    primariesFail = false;
    clock.advance(MINUTE);
    expect(await content()).toBe("from level 1");
    expect(await content()).toBe("from level 1");
    expect(l1.requests).toHaveLength(8);
    expect(l2.requests).toHaveLength(6);
  });
});

describe("auto-sleep", () => {
  test("three 500s in a row sleep a key for a minute; its probe fails (2 min), then succeeds and wakes it", async () => {
    const { router: r, clock } = await manualRouter();
    const state = { status: 500, held: deferred<void>(), hold: false };
    const upstream = mock(async () => {
      if (state.hold) await state.held.promise;
      return state.status === 200 ? json(completion()) : json({ error: { message: "boom" } }, state.status);
    });
    const key = await addKey(r, { provider: `${upstream.url}/v1` });

    expect((await chat(r)).status).toBe(502);
    expect((await chat(r)).status).toBe(502);
    expect(r.deps.pool.get(key.id)!.sleeping).toBe(false);
    expect((await chat(r)).status).toBe(502);
    expect(r.deps.pool.get(key.id)).toMatchObject({ sleeping: true, sleepReason: "errors", sleepUntil: T0 + MINUTE, sleepCount: 1 });
    expect(await r.deps.providerKeys.get(key.id)).toMatchObject({ sleeping: true, sleepReason: "errors", sleepUntil: T0 + MINUTE, sleepCount: 1 });

    // Asleep: no key for the call, the upstream is left alone.
    expect((await chat(r)).status).toBe(503);
    clock.advance(MINUTE - 1);
    expect((await chat(r)).status).toBe(503);
    expect(upstream.requests).toHaveLength(3);

    // Cool-down over: exactly one probe; it fails, the cool-down doubles.
    clock.advance(1);
    state.hold = true;
    const probe = chat(r);
    await waitFor(() => upstream.requests.length === 4, 5000, "the probe");
    expect((await chat(r)).status).toBe(503);
    expect(upstream.requests).toHaveLength(4);
    state.hold = false;
    state.held.resolve();
    expect((await probe).status).toBe(502);
    const probeAt = T0 + MINUTE;
    expect(r.deps.pool.get(key.id)).toMatchObject({ sleeping: true, sleepReason: "errors", sleepUntil: probeAt + 2 * MINUTE, sleepCount: 2 });

    clock.advance(2 * MINUTE - 1);
    expect((await chat(r)).status).toBe(503);
    expect(upstream.requests).toHaveLength(4);

    // The next probe succeeds, even though a key was added (pool reloaded) while it was out.
    clock.advance(1);
    state.status = 200;
    state.hold = true;
    state.held = deferred<void>();
    const wake = chat(r);
    await waitFor(() => upstream.requests.length === 5, 5000, "the second probe");
    await addKey(r, { provider: REFUSED, level: 9 });
    state.hold = false;
    state.held.resolve();
    expect((await wake).status).toBe(200);
    expect(r.deps.pool.get(key.id)).toMatchObject({ sleeping: false, sleepReason: null, sleepUntil: null, sleepCount: 0 });
    expect(await r.deps.providerKeys.get(key.id)).toMatchObject({ sleeping: false, sleepReason: null, sleepUntil: null, sleepCount: 0 });
    expect((await chat(r)).status).toBe(200);
    expect(upstream.requests).toHaveLength(6);
  });

  test("a Retry-After longer than the cool-down extends the sleep", async () => {
    const { router: r } = await manualRouter();
    const upstream = mock(() => json({ error: { message: "quota" } }, 429, { "retry-after": "600" }));
    const key = await addKey(r, { provider: `${upstream.url}/v1` });
    for (let i = 0; i < 3; i++) expect((await chat(r)).status).toBe(429);
    expect(r.deps.pool.get(key.id)).toMatchObject({ sleeping: true, sleepReason: "errors", sleepUntil: T0 + 600_000 });
  });

  test("one key's Retry-After does not lengthen another key's sleep", async () => {
    const { router: r } = await manualRouter();
    const limited = mock(() => json({ error: { message: "quota" } }, 429, { "retry-after": "600" }));
    await addKey(r, { provider: `${limited.url}/v1`, noSleep: true });
    const refused = await addKey(r, { provider: REFUSED });
    for (let i = 0; i < 3; i++) expect((await chat(r)).status).toBeGreaterThanOrEqual(429);
    expect(limited.requests).toHaveLength(3);
    expect(r.deps.pool.get(refused.id)).toMatchObject({ sleeping: true, sleepReason: "errors", sleepUntil: T0 + MINUTE });
  });

  test("NoSleep keys never sleep automatically", async () => {
    const { router: r } = await manualRouter();
    const upstream = mock(fail500);
    const key = await addKey(r, { provider: `${upstream.url}/v1`, noSleep: true });
    for (let i = 0; i < 6; i++) expect((await chat(r)).status).toBe(502);
    expect(upstream.requests).toHaveLength(6);
    expect(r.deps.pool.get(key.id)!.sleeping).toBe(false);
    expect((await r.deps.providerKeys.get(key.id))!.sleeping).toBe(false);
  });

  test("manual sleep lasts until woken, however far the clock moves", async () => {
    const { router: r, clock } = await manualRouter();
    const upstream = mock(ok);
    const key = await addKey(r, { provider: `${upstream.url}/v1` });
    await r.deps.pool.setManualSleep(key.id, true);
    expect(await r.deps.providerKeys.get(key.id)).toMatchObject({ sleeping: true, sleepReason: "manual" });
    for (const step of [MINUTE, 3600 * 1000, 365 * 24 * 3600 * 1000]) {
      clock.advance(step);
      expect((await chat(r)).status).toBe(503);
    }
    expect(upstream.requests).toHaveLength(0);
    await r.deps.pool.setManualSleep(key.id, false);
    expect((await chat(r)).status).toBe(200);
    expect(upstream.requests).toHaveLength(1);
  });
});

describe("a Level with no usable key", () => {
  async function setup() {
    const r = await router();
    await r.deps.settings.update({ LEVEL_MAPPER: "gpt-x=3,claude-*=3" });
    const upstream = mock(ok);
    const keys = [
      await addKey(r, { provider: `${upstream.url}/v1`, level: 1 }),
      await addKey(r, { provider: `${upstream.url}/v1`, level: 3, status: false }),
      await addKey(r, { provider: `${upstream.url}/v1`, level: 3 }),
    ];
    await r.deps.pool.setManualSleep(keys[2]!.id, true);
    return { r, upstream, keys };
  }

  const noKeyMaterial = (text: string, keys: Array<{ secret: string }>) => {
    for (const key of keys) {
      expect(text).not.toContain(key.secret);
      expect(text).not.toContain(key.secret.slice(-20));
    }
    expect(text).not.toMatch(/sk-upstream/);
  };

  test("OpenAI path: 503 in the OpenAI envelope naming the model", async () => {
    const { r, upstream, keys } = await setup();
    const res = await chat(r, "gpt-x");
    expect(res.status).toBe(503);
    const text = await res.text();
    const body = JSON.parse(text);
    expect(body.error).toMatchObject({ type: "overloaded_error", code: "no_available_key", param: null });
    expect(body.error.message).toContain("gpt-x");
    noKeyMaterial(text, keys);
    expect(upstream.requests).toHaveLength(0);
    expect(await lastRow(r)).toMatchObject({ status: 503, level: 3 });
  });

  test("Anthropic path: 503 in the Anthropic envelope naming the model", async () => {
    const { r, upstream, keys } = await setup();
    const res = await r.fetch("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-x", max_tokens: 5, messages: [] }),
    });
    expect(res.status).toBe(503);
    const text = await res.text();
    const body = JSON.parse(text);
    expect(body).toEqual({ type: "error", error: { type: "overloaded_error", message: expect.stringContaining("claude-x") } });
    noKeyMaterial(text, keys);
    expect(upstream.requests).toHaveLength(0);
  });
});

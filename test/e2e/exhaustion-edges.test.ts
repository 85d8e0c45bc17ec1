import { describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { addKey, usageRows } from "../helpers/keys.ts";
import { chatCompletion, json, sse } from "../helpers/mock-upstream.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { waitFor } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * One client or one upstream must not take the process down or starve everyone else:
 * each gets a bounded, clear error in its family's envelope while the router keeps
 * serving the others (docs/api.md, "Bounds on what one caller or upstream can hold").
 */

const scope = perTest();
const encoder = new TextEncoder();

const chatBody = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }], ...extra });

/** A chat call with the owner's key (or `key`), its status and parsed body. */
async function chat(router: { fetch: (path: string, init?: RequestInit & { key?: string | null }) => Promise<Response> }, key?: string, body = chatBody()) {
  const res = await router.fetch("/v1/chat/completions", { key, method: "POST", headers: { "content-type": "application/json" }, body });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed, text };
}

/** An upstream answer whose headers come at once and whose body starts, then never goes on. */
const stalled = (status: number, first: string) =>
  new Response(
    new ReadableStream({
      start(controller) {
        controller.enqueue(encoder.encode(first));
      },
    }),
    { status, headers: { "content-type": "application/json" } },
  );

describe("bodies nested too deeply to walk", () => {
  const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

  test("a model call nested 100,000 levels deep is a 400 in each family's envelope, not a 500; nothing goes upstream and others are served", async () => {
    const { router, upstream } = await scope.gateway();
    upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model));
    const deep = nested(100_000);
    const post = (path: string, body: string) => router.fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body });
    const openai = await post("/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":${deep}}]}`);
    expect(openai.status).toBe(400);
    expect((await openai.json()).error).toMatchObject({ type: "invalid_request_error", code: "nesting_too_deep" });
    const responses = await post("/v1/responses", `{"model":"gpt-4o","input":${deep}}`);
    expect(responses.status).toBe(400);
    const anthropic = await post("/v1/messages", `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":${deep}}]}`);
    expect(anthropic.status).toBe(400);
    expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    const gemini = await post("/v1beta/models/gemini-x:generateContent", `{"contents":[{"role":"user","parts":${deep}}]}`);
    expect(gemini.status).toBe(400);
    expect((await gemini.json()).error).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
    expect(upstream.requests).toHaveLength(0);
    expect((await chat(router)).status).toBe(200);
  });

  test("a management body nested 100,000 levels deep is a 400, not a 500; nothing is written", async () => {
    const router = await scope.router();
    const deep = nested(100_000);
    const post = (path: string, method: string, body: string) => router.fetch(path, { method, headers: { "content-type": "application/json" }, body });
    const user = await post("/x-users", "POST", `{"Email":"deep@example.com","Name":${deep}}`);
    expect(user.status).toBe(400);
    expect((await user.json()).error).toMatchObject({ type: "invalid_request_error", code: "nesting_too_deep" });
    const config = await post("/x-config", "PUT", `{"PRICING":${"{\"a\":".repeat(100_000)}1${"}".repeat(100_000)}}`);
    expect(config.status).toBe(400);
    const listed = await api(router, "/x-users");
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).not.toContain("deep@example.com");
  });
});

describe("an upstream that stalls or floods a JSON answer", () => {
  const config = { firstByteTimeoutMs: 10_000, streamIdleTimeoutMs: 300, drainTimeoutMs: 1000, maxAnswerBytes: 64 * 1024 };

  test("headers, then silence: the attempt fails after --stream-idle-timeout and the next key answers; when every key stalls, 502", async () => {
    const { router, upstream } = await scope.gateway({ config });
    const healthy = scope.upstream();
    healthy.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model));
    upstream.route("POST", "/v1/chat/completions", () => stalled(200, '{"id":'));
    await addKey(router, { provider: healthy.url, noSleep: true });
    // Whichever key is tried first, the call ends answered by the healthy one.
    const served = await chat(router);
    expect(served.status).toBe(200);
    expect(healthy.requests).toHaveLength(1);
    // Both keys stall: 502 upstream_timeout in the caller's envelope (spec 7: upstream unavailable).
    healthy.reset();
    healthy.route("POST", "/v1/chat/completions", () => stalled(200, '{"id":'));
    const timedOut = await chat(router);
    expect(timedOut.status).toBe(502);
    expect(timedOut.body.error).toMatchObject({ type: "api_error", code: "upstream_timeout" });
    // The keys were let go each time: an ordinary call goes through at once.
    healthy.reset();
    healthy.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model));
    upstream.reset();
    upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model));
    expect((await chat(router)).status).toBe(200);
  });

  test("a 4xx whose error body stalls: the client gets that status in its envelope after --stream-idle-timeout, not a wait without end", async () => {
    const { router, upstream } = await scope.gateway({ config });
    upstream.once(() => stalled(400, '{"error":'));
    const res = await chat(router);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe("invalid_request_error");
    expect(res.body.error.message).toContain("400");
  });

  test("a JSON answer past maxAnswerBytes is not read whole: 502 upstream_error; one at the bound is an answer", async () => {
    const { router, upstream } = await scope.gateway({ config });
    const answer = (bytes: number) => {
      const base = JSON.stringify({ id: "c", object: "chat.completion", created: 1, model: "gpt-4o", choices: [{ index: 0, message: { role: "assistant", content: "" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
      const text = base.replace('"content":""', `"content":"${"x".repeat(bytes - base.length)}"`);
      expect(text.length).toBe(bytes);
      return new Response(text, { headers: { "content-type": "application/json" } });
    };
    upstream.once(() => answer(config.maxAnswerBytes));
    expect((await chat(router)).status).toBe(200);
    upstream.route("POST", "/v1/chat/completions", () => answer(config.maxAnswerBytes + 1));
    const over = await chat(router);
    expect(over.status).toBe(502);
    expect(over.body.error.code).toBe("upstream_error");
    // Nothing was charged for it.
    const rows = await usageRows(router);
    expect(rows.at(-1)).toMatchObject({ status: 502, prompt_tokens: 0, completion_tokens: 0 });
  });

  test("a gzip bomb (a few KB expanding past maxAnswerBytes) is refused as it expands, never held whole", async () => {
    const { router, upstream } = await scope.gateway({ config });
    const expanded = `{"id":"c","pad":"${" ".repeat(4 * config.maxAnswerBytes)}"}`;
    const bomb = Bun.gzipSync(encoder.encode(expanded));
    expect(bomb.byteLength).toBeLessThan(config.maxAnswerBytes / 8);
    upstream.route("POST", "/v1/chat/completions", () => new Response(bomb, { headers: { "content-type": "application/json", "content-encoding": "gzip" } }));
    const res = await chat(router);
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe("upstream_error");
  });

  test("a 4xx error body past 1 MiB is not relayed whole: the status with the router's own message", async () => {
    const { router, upstream } = await scope.gateway({ config });
    const huge = JSON.stringify({ error: { message: "x".repeat(1024 * 1024), type: "invalid_request_error" } });
    upstream.route("POST", "/v1/chat/completions", () => new Response(huge, { status: 400, headers: { "content-type": "application/json" } }));
    const res = await chat(router);
    expect(res.status).toBe(400);
    expect(res.text.length).toBeLessThan(4096);
    expect(res.body.error.message).toContain("1 MiB");
    // One just under the bound is relayed as it came.
    const fits = JSON.stringify({ error: { message: "y".repeat(1000), type: "invalid_request_error" } });
    upstream.reset();
    upstream.route("POST", "/v1/chat/completions", () => new Response(fits, { status: 400, headers: { "content-type": "application/json" } }));
    const relayed = await chat(router);
    expect(relayed.status).toBe(400);
    expect(relayed.text).toBe(fits);
  });
});

describe("an upstream stream that floods one event", () => {
  const config = { firstByteTimeoutMs: 600_000, streamIdleTimeoutMs: 2000, drainTimeoutMs: 1000, maxAnswerBytes: 64 * 1024, maxAttempts: 1 };

  test("a first event that never ends within maxAnswerBytes: judged no answer at the bound (502), not held until the first-byte timeout", async () => {
    const { router, upstream } = await scope.gateway({ config });
    let sent = 0;
    upstream.route("POST", "/v1/chat/completions", () =>
      new Response(
        new ReadableStream({
          async pull(controller) {
            // An endless `data:` line, a KiB at a time: no blank line ever ends the event.
            if (sent === 0) controller.enqueue(encoder.encode("data: "));
            controller.enqueue(encoder.encode("x".repeat(1024)));
            sent += 1024;
            await Bun.sleep(0);
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      ),
    );
    // Refused at the bound: the first-byte timeout (10 minutes) is not waited for.
    const res = await chat(router, undefined, chatBody({ stream: true }));
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe("upstream_error");
    expect(sent).toBeLessThan(64 * config.maxAnswerBytes);
  });

  test("after the first event, an event of a line longer than maxAnswerBytes still reaches the client; the usage after it is read", async () => {
    const { router, upstream } = await scope.gateway({ config });
    const chunk = (content: string) => ({ id: "s", object: "chat.completion.chunk", created: 1, model: "gpt-4o", choices: [{ index: 0, delta: { content }, finish_reason: null }] });
    const long = "z".repeat(2 * config.maxAnswerBytes);
    upstream.route("POST", "/v1/chat/completions", () =>
      sse([chunk("a"), chunk(long), { id: "s", object: "chat.completion.chunk", created: 1, model: "gpt-4o", choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }], { done: true }),
    );
    const res = await chat(router, undefined, chatBody({ stream: true, stream_options: { include_usage: true } }));
    expect(res.status).toBe(200);
    expect(res.text).toContain(long);
    const row = await waitFor(async () => (await usageRows(router)).find((r) => r.prompt_tokens === 7));
    expect(row).toMatchObject({ completion_tokens: 3, source: "upstream", status: 200 });
  });

  test("when the router hides the usage chunk it asked for, an event past the bound ends the stream with an error event, never a silent hole", async () => {
    const { router, upstream } = await scope.gateway({ config });
    const chunk = (content: string) => ({ id: "s", object: "chat.completion.chunk", created: 1, model: "gpt-4o", choices: [{ index: 0, delta: { content }, finish_reason: null }] });
    const long = "z".repeat(2 * config.maxAnswerBytes);
    // The long event comes in pieces, so the relay must decode (and re-encode) it: were it
    // to come in one read ending its event, that read would pass whole, decoded by no one.
    upstream.route("POST", "/v1/chat/completions", () =>
      sse([chunk("a"), `data: ${JSON.stringify(chunk(long)).slice(0, 1000)}`, long, "\n\n", { id: "s", object: "chat.completion.chunk", created: 1, model: "gpt-4o", choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }], { done: true, delayMs: 20 }),
    );
    const res = await chat(router, undefined, chatBody({ stream: true }));
    expect(res.status).toBe(200);
    expect(res.text).toContain('"content":"a"');
    const whole = res.text.includes(long);
    const ended = res.text.includes("upstream_stream_error");
    // Either the event reached the client whole, or the stream ended with an error event: never a hole.
    expect([whole, ended].filter(Boolean)).toHaveLength(1);
    const row = await waitFor(async () => (await usageRows(router)).at(-1));
    expect(row!.status).toBe(ended ? 502 : 200);
  });
});

describe("a translated stream with an event past the bound", () => {
  const config = { firstByteTimeoutMs: 10_000, streamIdleTimeoutMs: 1000, drainTimeoutMs: 1000, maxAnswerBytes: 64 * 1024 };

  test("an Anthropic client on a Chat key: the stream ends with the client's error event, never a silent hole, and is logged 502", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ config });
    await addKey(router, { provider: upstream.url, noSleep: true, config: { provider_type: "standard", formats: ["openai"] } });
    const chunk = (content: string) => ({ id: "s", object: "chat.completion.chunk", created: 1, model: "gpt-4o", choices: [{ index: 0, delta: { content }, finish_reason: null }] });
    const long = "z".repeat(2 * config.maxAnswerBytes);
    // The long event comes in pieces, so the translator's decoder holds it as it grows.
    upstream.route("POST", "/v1/chat/completions", () =>
      sse([chunk("a"), `data: ${JSON.stringify(chunk(long)).slice(0, 1000)}`, long, "\n\n", { id: "s", object: "chat.completion.chunk", created: 1, model: "gpt-4o", choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }], { done: true, delayMs: 20 }),
    );
    const res = await router.fetch("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", max_tokens: 50, stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('"text":"a"');
    expect(text).not.toContain(long);
    // Anthropic's mid-stream error event ends it.
    expect(text).toContain("event: error");
    const row = await waitFor(async () => (await usageRows(router)).at(-1));
    expect(row!.status).toBe(502);
  });
});

describe("usage an upstream reports that cannot be true", () => {
  const pricing = { ChatPricing: { "gpt-4o": { InputText: 1, OutputText: 1, ContextWindow: 100_000, MaxOutput: 1000 } } };

  test("1e308 tokens, counts past 2^53 written as strings, fractions: charged within the call's reservation, marked estimated; the balance stays a number", async () => {
    const { router, upstream } = await scope.gateway({ pricing });
    const account = await createAccount(router, { CreditGranted: 100 });
    const absurd = [{ prompt_tokens: 1e308, completion_tokens: 1 }, { prompt_tokens: "99999999999999999999999999", completion_tokens: 1 }, { prompt_tokens: 1.5, completion_tokens: 2 }];
    for (const usage of absurd) {
      upstream.once(() => json({ id: "c", object: "chat.completion", created: 1, model: "gpt-4o", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage }));
      expect((await chat(router, account.key, chatBody({ max_tokens: 10 }))).status).toBe(200);
    }
    const rows = (await usageRows(router)).filter((r) => r.account_id === account.id);
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(Number.isSafeInteger(row.cost_nanos)).toBe(true);
      expect(Number.isSafeInteger(row.prompt_tokens)).toBe(true);
      expect(row.prompt_tokens).toBeLessThanOrEqual(100_000);
      expect(row.source).toBe("estimated");
    }
    const credit = await api(router, "/dashboard/credit", { key: account.key });
    expect(typeof credit.body.balance).toBe("number");
    // An ordinary call of the same account is still admitted and charged.
    upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model, { prompt: 5, completion: 5 }));
    expect((await chat(router, account.key, chatBody({ max_tokens: 10 }))).status).toBe(200);
  });
});

describe("a client that sends its body slowly or never", () => {
  test("a model call whose body stops arriving is cut after the body deadline, holding nothing; others are served meanwhile", async () => {
    const { router, upstream } = await scope.gateway({ config: { bodyTimeoutSeconds: 1 } });
    upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model));
    const port = Number(new URL(router.url).port);
    const socket = connect(port, "127.0.0.1");
    let closed = false;
    socket.on("close", () => (closed = true));
    socket.on("error", () => {});
    socket.on("data", () => {});
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${router.ownerKey}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"model":`);
    scope.later(() => void socket.destroy());
    // Meanwhile, everyone else is served.
    expect((await chat(router)).status).toBe(200);
    await waitFor(() => closed, 15_000, "the router to close the stalled connection");
    expect(upstream.requests).toHaveLength(1);
  });

  test("once the body is read the deadline is lifted: an upstream slower than it still answers", async () => {
    const { router, upstream } = await scope.gateway({ config: { bodyTimeoutSeconds: 1 } });
    upstream.route("POST", "/v1/chat/completions", async (req) => {
      await Bun.sleep(3500);
      return chatCompletion(req.json.model);
    });
    expect((await chat(router)).status).toBe(200);
  });
});

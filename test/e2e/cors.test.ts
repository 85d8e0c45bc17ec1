import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { parseCorsOrigins } from "../../src/http/cors.ts";
import { launchChromium } from "../helpers/browser.ts";
import { addKey } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";

/**
 * Browser apps call the router from their own origin: the OpenAI and Anthropic SDKs with
 * their browser switches, a chat front end running in the page. The browser asks with a
 * preflight first and lets the page read only answers that allow its origin. These tests
 * drive a real Chromium on a page of another origin (another port), with the official
 * SDKs bundled for the browser.
 */

const USAGE = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };

let upstream: MockUpstream;
let browser: Browser;
let page: Bun.Server<unknown>;
let sdkBundle: string;

beforeAll(async () => {
  upstream = startMockUpstream();
  upstream.route("POST", "/v1/chat/completions", (req) =>
    req.json.stream
      ? sse(
          [
            { id: "c", object: "chat.completion.chunk", created: 1, model: req.json.model, choices: [{ index: 0, delta: { content: "hi" }, finish_reason: null }] },
            { id: "c", object: "chat.completion.chunk", created: 1, model: req.json.model, choices: [{ index: 0, delta: { content: " there" }, finish_reason: "stop" }] },
            { id: "c", object: "chat.completion.chunk", created: 1, model: req.json.model, choices: [], usage: USAGE },
          ],
          { done: true },
        )
      : json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }], usage: USAGE }),
  );
  upstream.route("POST", "/v1/messages", (req) =>
    json({ id: "m", type: "message", role: "assistant", model: req.json.model, content: [{ type: "text", text: "bonjour" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 3, output_tokens: 2 } }),
  );
  // Both SDKs bundled for the browser, as a web app ships them.
  const entry = `${import.meta.dir}/../fixtures/browser-sdks.ts`;
  const built = await Bun.build({ entrypoints: [entry], target: "browser", format: "esm" });
  if (!built.success) throw new Error(built.logs.join("\n"));
  sdkBundle = await built.outputs[0]!.text();
  // The app's own origin: another port than the router's is another origin.
  page = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/sdks.js") return new Response(sdkBundle, { headers: { "content-type": "text/javascript" } });
      return new Response("<!doctype html><title>app</title><script type=module>import * as sdks from '/sdks.js'; window.sdks = sdks; window.ready = true;</script>", {
        headers: { "content-type": "text/html" },
      });
    },
  });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  page?.stop(true);
  await upstream.stop();
});

/** A page of the app's origin with the SDKs loaded. */
async function appPage() {
  const context = await browser.newContext();
  const tab = await context.newPage();
  await tab.goto(`http://127.0.0.1:${page.port}/`);
  await tab.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
  return { tab, close: () => context.close() };
}

describe("with the default --cors-origins (*)", () => {
  let router: TestRouter;
  let key: string;
  beforeAll(async () => {
    router = await startRouter();
    await addKey(router, { provider: upstream.url });
    await addKey(router, { provider: upstream.url });
    key = router.ownerKey;
  });
  afterAll(() => router.stop());

  test("the OpenAI SDK in a page of another origin gets its answer, streamed and not, and reads the request id", async () => {
    const { tab, close } = await appPage();
    try {
      const result = await tab.evaluate(
        async ({ base, key }) => {
          const { OpenAI } = (window as unknown as { sdks: typeof import("../fixtures/browser-sdks.ts") }).sdks;
          const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, dangerouslyAllowBrowser: true, maxRetries: 0 });
          const { data, response } = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }).withResponse();
          let streamed = "";
          const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], stream: true });
          for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? "";
          return { text: data.choices[0]!.message.content, requestId: response.headers.get("x-request-id"), streamed };
        },
        { base: router.url, key },
      );
      expect(result).toEqual({ text: "hello", requestId: expect.stringMatching(/.+/), streamed: "hi there" });
      // The id the page read is the one the request log files the call under.
      // (Request-log rows are written in batches: waited for.)
      await waitFor(async () => (await router.fetch(`/x-requests/${result.requestId}`)).status === 200, 5000, "the call in the request log");
    } finally {
      await close();
    }
  });

  test("the Anthropic SDK in a page (its browser header included) gets its answer and its request id", async () => {
    const { tab, close } = await appPage();
    try {
      const result = await tab.evaluate(
        async ({ base, key }) => {
          const { Anthropic } = (window as unknown as { sdks: typeof import("../fixtures/browser-sdks.ts") }).sdks;
          const client = new Anthropic({ baseURL: base, apiKey: key, dangerouslyAllowBrowser: true, maxRetries: 0 });
          const { data, request_id } = await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }).withResponse();
          return { text: data.content[0]?.type === "text" ? data.content[0].text : "", requestId: request_id };
        },
        { base: router.url, key },
      );
      expect(result.text).toBe("bonjour");
      expect(result.requestId).toMatch(/.+/);
    } finally {
      await close();
    }
  });

  test("a page reads the router's refusals (a wrong key's 401 and its message) instead of a network error", async () => {
    const { tab, close } = await appPage();
    try {
      const result = await tab.evaluate(async (base) => {
        const res = await fetch(`${base}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: "Bearer sk-not-a-key-of-this-router-000000", "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
        });
        return { status: res.status, body: await res.json(), requestId: res.headers.get("x-request-id") };
      }, router.url);
      expect(result.status).toBe(401);
      expect(result.body.error.message).toBeString();
      expect(result.requestId).toMatch(/.+/);
    } finally {
      await close();
    }
  });

  test("the management API is not opened to pages of other origins: no preflight answer, no readable answer", async () => {
    // The console calls it from the router's own origin; no other page has a reason to hold an owner's key.
    for (const path of ["/x-users", "/x-keys", "/dashboard/status", "/x-pricing", "/metrics"]) {
      const preflight = await fetch(`${router.url}${path}`, {
        method: "OPTIONS",
        headers: { origin: "https://chat.example.com", "access-control-request-method": "GET", "access-control-request-headers": "authorization" },
      });
      expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
      const read = await router.fetch(path, { headers: { origin: "https://chat.example.com" } });
      expect(read.headers.get("access-control-allow-origin")).toBeNull();
    }
    const { tab, close } = await appPage();
    try {
      const outcome = await tab.evaluate(
        async ({ base, key }) =>
          fetch(`${base}/x-keys`, { headers: { authorization: `Bearer ${key}` } }).then(
            (res) => `answered ${res.status}`,
            (error: Error) => `refused: ${error.name}`,
          ),
        { base: router.url, key },
      );
      expect(outcome).toBe("refused: TypeError");
    } finally {
      await close();
    }
  });

  test("a preflight is answered before any key check, echoing the headers the page asked for", async () => {
    const res = await fetch(`${router.url}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: { origin: "https://chat.example.com", "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type, x-stainless-os" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-headers")).toBe("authorization, content-type, x-stainless-os");
    expect(res.headers.get("access-control-allow-methods")).toContain("POST");
    // Keys are headers, never cookies: credentials are never allowed.
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();
  });

  test("a header list that is not one (a line break, a value) is not echoed", async () => {
    const res = await fetch(`${router.url}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: { origin: "https://chat.example.com", "access-control-request-method": "POST", "access-control-request-headers": "authorization: x" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-headers")).toBeNull();
  });

  test("calls without an Origin (servers, SDKs, CLIs) carry no CORS headers", async () => {
    const res = await router.fetch("/v1/models");
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("with --cors-origins naming the app", () => {
  let router: TestRouter;
  beforeAll(async () => {
    router = await startRouter({ config: { corsOrigins: [`http://127.0.0.1:${page.port}`] } });
    await addKey(router, { provider: upstream.url });
  });
  afterAll(() => router.stop());

  test("the named app is answered with its own origin echoed and Vary: Origin", async () => {
    const { tab, close } = await appPage();
    try {
      const text = await tab.evaluate(
        async ({ base, key }) => {
          const { OpenAI } = (window as unknown as { sdks: typeof import("../fixtures/browser-sdks.ts") }).sdks;
          const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, dangerouslyAllowBrowser: true, maxRetries: 0 });
          const answer = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
          return answer.choices[0]!.message.content;
        },
        { base: router.url, key: router.ownerKey },
      );
      expect(text).toBe("hello");
      const res = await router.fetch("/v1/models", { headers: { origin: `http://127.0.0.1:${page.port}` } });
      expect(res.headers.get("access-control-allow-origin")).toBe(`http://127.0.0.1:${page.port}`);
      expect(res.headers.get("vary")).toContain("Origin");
    } finally {
      await close();
    }
  });

  test("a page of another origin is refused at the preflight, and its call never reaches the upstream", async () => {
    const calls = upstream.requests.length;
    const preflight = await fetch(`${router.url}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization" },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    expect((await preflight.json()).error.code).toBe("origin_not_allowed");
    // In a browser: the page's own origin differs from the one allowed, so the call fails before it is sent.
    const other = await browser.newContext();
    const tab = await other.newPage();
    try {
      await tab.goto(`http://localhost:${page.port}/`);
      await tab.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
      const outcome = await tab.evaluate(
        async ({ base, key }) =>
          fetch(`${base}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
          }).then(
            (res) => `answered ${res.status}`,
            (error: Error) => `refused: ${error.name}`,
          ),
        { base: router.url, key: router.ownerKey },
      );
      expect(outcome).toBe("refused: TypeError");
      expect(upstream.requests.length).toBe(calls);
    } finally {
      await other.close();
    }
  });
});

describe("with --cors-origins off", () => {
  test("preflights are routed as any OPTIONS request (404) and answers carry no CORS headers", async () => {
    const router = await startRouter({ config: { corsOrigins: "off" } });
    try {
      const preflight = await fetch(`${router.url}/v1/chat/completions`, { method: "OPTIONS", headers: { origin: "https://chat.example.com", "access-control-request-method": "POST" } });
      expect(preflight.status).toBe(404);
      expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
      const res = await router.fetch("/v1/models", { headers: { origin: "https://chat.example.com" } });
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
    } finally {
      await router.stop();
    }
  });
});

describe("parseCorsOrigins (the --cors-origins value)", () => {
  test("reads *, off and lists of origins", () => {
    expect(parseCorsOrigins("*")).toBe("*");
    expect(parseCorsOrigins("OFF")).toBe("off");
    expect(parseCorsOrigins("https://chat.example.com, http://localhost:3000/")).toEqual(["https://chat.example.com", "http://localhost:3000"]);
  });
  test("refuses what a browser never sends as an origin", () => {
    expect(() => parseCorsOrigins("https://chat.example.com/app")).toThrow(/not an origin/);
    expect(() => parseCorsOrigins("chat.example.com")).toThrow(/not an origin/);
    expect(() => parseCorsOrigins("ftp://files.example.com")).toThrow(/not an origin/);
    expect(() => parseCorsOrigins(" , ")).toThrow(/give \*, off/);
  });
});

import { afterEach, describe, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { openaiClient } from "../helpers/sdk.ts";
import { api } from "../helpers/owner-ops.ts";
import { perTest } from "../helpers/scoped.ts";

const mocks: MockUpstream[] = [];
const routers: TestRouter[] = [];
afterEach(async () => {
  for (const mock of mocks.splice(0)) await mock.stop();
  for (const router of routers.splice(0)) await router.stop();
});

test("an upstream 400 that echoes the key's secret, plain, base64 or URL-encoded, reaches the client without any of them", async () => {
  const router = await startRouter();
  routers.push(router);
  // A secret no generic key pattern would catch.
  const secret = "corp-gw/Q+9x7Yz!Kq2mLw8vR4tPn";
  const upstream = startMockUpstream().route("POST", "/v1/chat/completions", () =>
    json(
      {
        error: {
          message: `Invalid credential ${secret}; header was ${Buffer.from(`Bearer ${secret}`).toString("base64")}; query key=${encodeURIComponent(secret)}; basic ${Buffer.from(`${secret}:`).toString("base64url")}`,
          type: "invalid_request_error",
        },
      },
      400,
    ),
  );
  mocks.push(upstream);
  await addKey(router, { provider: `${upstream.url}/v1`, secret });
  const error = (await openaiClient(router.url, router.ownerKey)
    .chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] })
    .catch((e: unknown) => e)) as { status: number; message: string };
  expect(error.status).toBe(400);
  expect(error.message).toContain("[redacted]");
  for (const form of [secret, encodeURIComponent(secret), Buffer.from(secret).toString("base64").slice(0, 20), Buffer.from(`Bearer ${secret}`).toString("base64").slice(0, 20), Buffer.from(`${secret}:`).toString("base64url").slice(0, 20)]) {
    expect(error.message).not.toContain(form);
  }
});

const scope = perTest();
const router = () => scope.router();
const upstream = () => scope.upstream();
const chat = (r: TestRouter, model = "gpt-x") =>
  r.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });

describe("an upstream that writes the secret as other JSON writers do (PHP's \\/, Go's and .NET's \\u escapes)", () => {
  // A secret with a '/', as base64-style provider secrets have. PHP's json_encode (and
  // other encoders) write '/' as '\/' by default: same JSON string, other bytes.
  const SECRET = "corp-gw/Q+9x7Yz!Kq2mLw8vR4tPn";
  const escapedBody = (secret: string) =>
    `{"error":{"message":"Invalid credential ${secret.replaceAll("/", "\\/")} for this project","type":"invalid_request_error","code":"invalid_api_key"}}`;

  test("a relayed 400 whose JSON writes the secret as a\\/b reaches the client without it, parsed or not", async () => {
    const r = await router();
    const up = upstream().route("POST", "/v1/chat/completions", () => new Response(escapedBody(SECRET), { status: 400, headers: { "content-type": "application/json" } }));
    await addKey(r, { provider: `${up.url}/v1`, secret: SECRET });
    const res = await chat(r);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string } };
    // The client's SDK reads error.message: the key's secret, in clear.
    expect(body.error.message).not.toContain(SECRET);
  });

  test("a translated call (Anthropic client, OpenAI-format key) does not turn the escaped echo back into the plain secret", async () => {
    const r = await router();
    const up = upstream().route("POST", "/v1/chat/completions", () => new Response(escapedBody(SECRET), { status: 400, headers: { "content-type": "application/json" } }));
    await addKey(r, { provider: `${up.url}/v1`, secret: SECRET, config: { provider_type: "standard", formats: ["openai"] } });
    const res = await r.fetch("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "gpt-x", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(up.requests.length).toBe(1);
    const text = await res.text();
    expect(res.status).toBe(400);
    // Not even an escape left: the raw answer bytes hold the secret.
    expect(text).not.toContain(SECRET);
  });

  test("the request log keeps a failed attempt's message without the escaped echo (a\\/b)", async () => {
    const r = await router();
    const up = upstream();
    up.route("POST", "/v1/chat/completions", () => new Response(escapedBody(SECRET), { status: 500, headers: { "content-type": "application/json" } }));
    await addKey(r, { provider: `${up.url}/v1`, secret: SECRET, noSleep: true });
    const res = await chat(r);
    // The client itself gets the generic 502 (fine): the record keeps the upstream's words.
    expect(res.status).toBe(502);
    expect(await res.text()).not.toContain("Invalid credential");
    await r.deps.usageRecorder.flush();
    const record = (await api(r, `/x-requests/${res.headers.get("x-request-id")}`)).body;
    const failed = record.attempts.find((a: { status: number }) => a.status === 500);
    expect(failed.message).toContain("Invalid credential");
    // What a reader (the owner, a manager, the calling account) gets once the JSON escape is read as JSON reads it.
    expect(String(failed.message).replaceAll("\\/", "/")).not.toContain(SECRET);
  });
});

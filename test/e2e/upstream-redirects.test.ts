import { afterEach, describe, expect, test } from "bun:test";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { anthropicClient } from "../helpers/sdk.ts";

const mocks: MockUpstream[] = [];
const routers: TestRouter[] = [];
const plain: Array<{ stop(): void }> = [];
afterEach(async () => {
  for (const mock of mocks.splice(0)) await mock.stop();
  for (const server of plain.splice(0)) server.stop();
  for (const router of routers.splice(0)) await router.stop();
});

const completion = { id: "c", object: "chat.completion", created: 1, model: "gpt-x", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } };

function mock(): MockUpstream {
  const upstream = startMockUpstream();
  mocks.push(upstream);
  return upstream;
}

/** A plain-http server that records every request it gets (the host a redirect points at). */
function plainCatcher() {
  const seen: Headers[] = [];
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => (seen.push(request.headers), Response.json(completion)) });
  plain.push(server);
  return { url: `http://127.0.0.1:${server.port}`, seen };
}

const chat = (r: TestRouter) =>
  r.fetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }) });

describe("upstream redirects are never followed", () => {
  test.each([301, 302, 303, 307, 308])("%d to another host: nothing reaches it, the client gets 502 in the OpenAI envelope", async (status) => {
    const r = await startRouter();
    routers.push(r);
    const elsewhere = mock().route("POST", /.*/, () => json(completion));
    const catcher = plainCatcher();
    for (const target of [`${elsewhere.url}/steal`, `${catcher.url}/steal`]) {
      const redirecting = mock().route("POST", "/v1/chat/completions", () => new Response(null, { status, headers: { location: target } }));
      const key = await addKey(r, { provider: `${redirecting.url}/v1` });
      const res = await chat(r);
      expect(res.status).toBe(502);
      const body = await res.json();
      expect(body.error.code).toBe("upstream_error");
      expect(JSON.stringify(body)).not.toContain(key.secret);
      expect(JSON.stringify(body)).not.toContain("steal");
      expect(redirecting.requests.length).toBeGreaterThanOrEqual(1);
      await r.deps.providerKeys.delete(key.id);
      await r.deps.pool.reload();
      redirecting.reset();
    }
    expect(elsewhere.requests).toHaveLength(0);
    expect(catcher.seen).toHaveLength(0);
    expect(r.logs.join("\n")).not.toContain("steal");
  });

  test("a redirect is a failure of that key: another key serves the call, and the failure counts in the key's health", async () => {
    const r = await startRouter();
    routers.push(r);
    const catcher = plainCatcher();
    const redirecting = mock().route("POST", "/v1/chat/completions", () => new Response(null, { status: 307, headers: { location: `${catcher.url}/v1/chat/completions` } }));
    const good = mock().route("POST", "/v1/chat/completions", () => json(completion));
    const bad = await addKey(r, { provider: `${redirecting.url}/v1` });
    const ok = await addKey(r, { provider: `${good.url}/v1` });
    const res = await chat(r);
    expect(res.status).toBe(200);
    expect(catcher.seen).toHaveLength(0);
    expect(good.requests).toHaveLength(1);
    expect(r.deps.pool.get(bad.id)!.failures).toBe(1);
    expect((await usageRows(r)).at(-1)).toMatchObject({ status: 200, key_id: ok.id });
  });

  test("Anthropic SDK: x-api-key never follows a 307; the SDK gets an Anthropic-shaped 502", async () => {
    const r = await startRouter();
    routers.push(r);
    const catcher = plainCatcher();
    const redirecting = mock().route("POST", "/v1/messages", () => new Response(null, { status: 307, headers: { location: `${catcher.url}/v1/messages` } }));
    await addKey(r, { provider: redirecting.url });
    const client = anthropicClient(r.url, r.ownerKey);
    const error = await client.messages.create({ model: "claude-x", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect((error as { status?: number }).status).toBe(502);
    expect((error as { error?: { type?: string } }).error?.type).toBe("error");
    expect(catcher.seen).toHaveLength(0);
    expect((await usageRows(r)).at(-1)).toMatchObject({ status: 502, prompt_tokens: 0, completion_tokens: 0, cost_nanos: 0 });
  });
});

import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { testCertificates } from "../helpers/tls.ts";
import { addKey } from "../helpers/keys.ts";
import { json, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api } from "../helpers/owner-ops.ts";
import type { StartOptions, TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Secrets at the edges that a review checked and found to hold (docs/api.md,
 * docs/architecture.md): Vertex URLs are https only, a realtime upgrade redirected to
 * another host gets nothing, and a secret of no known shape echoed by an upstream stays
 * out of every log, record and answer. The review's findings went to the suites of what
 * they fixed (redaction, provider keys, idempotency, the console).
 */

setDefaultTimeout(30_000);

const scope = perTest();
const router = (options: StartOptions = {}): Promise<TestRouter> => scope.router(options);
const upstream = (): MockUpstream => scope.upstream();

function rsaPem(): string {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
  return privateKey;
}

function serviceAccountFile(tokenUri: string, projectId = "proj-review"): string {
  return JSON.stringify({
    type: "service_account",
    project_id: projectId,
    private_key_id: "kid-review",
    private_key: rsaPem(),
    client_email: "router@proj-review.iam.gserviceaccount.com",
    token_uri: tokenUri,
  });
}

const chat = (r: TestRouter, model = "gpt-x") =>
  r.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });

describe("Vertex: where the signed assertion goes", () => {
  test("config.token_uri and config.base_url must be https://", async () => {
    const r = await router();
    for (const config of [
      { provider_type: "vertex", token_uri: "http://127.0.0.1:9/token" },
      { provider_type: "vertex", base_url: "http://127.0.0.1:9" },
    ]) {
      const res = await api(r, "/x-keys", { body: { Provider: "https://aiplatform.googleapis.com", SecretKey: serviceAccountFile("https://oauth2.googleapis.com/token"), Level: 1, Status: true, config } });
      expect(res.status).toBe(400);
    }
  });
});

describe("a secret echoed or redirected", () => {
  test("a realtime upstream answering the upgrade with a 307 to another host: the secret is not sent there", async () => {
    const r = await router();
    const caught: Headers[] = [];
    const catcher = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => (caught.push(request.headers), new Response("caught")) });
    scope.later(() => catcher.stop(true));
    const certs = testCertificates();
    const seen: Headers[] = [];
    const redirecting = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: certs.certPem, key: certs.keyPem },
      fetch: (request) => (seen.push(request.headers), new Response(null, { status: 307, headers: { location: `http://127.0.0.1:${catcher.port}/v1/realtime?model=m` } })),
    });
    scope.later(() => redirecting.stop(true));
    const SECRET = "sk-realtime-redirect-0123456789abcdef";
    await addKey(r, { provider: `https://127.0.0.1:${redirecting.port}/v1`, secret: SECRET });
    const ws = new WebSocket(`${r.url.replace("http", "ws")}/v1/realtime?model=gpt-realtime-x`, { headers: { authorization: `Bearer ${r.ownerKey}` } } as unknown as string[]);
    await new Promise<void>((resolve) => {
      ws.onclose = () => resolve();
      ws.onerror = () => resolve();
      setTimeout(resolve, 5000);
    });
    ws.close();
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[0]!.get("authorization")).toBe(`Bearer ${SECRET}`);
    expect(caught).toHaveLength(0);
    expect(r.logs.join("\n")).not.toContain(SECRET);
  });

  test("a secret of no known shape echoed plainly (500, 401, 400, model list 401) stays out of the logs, the request log, the operation log and the answers", async () => {
    const r = await router();
    const SECRET = "Zt84kPq0vW2xYb7nLc5mRd3s"; // no sk-/AIza/bearer shape for the generic patterns
    const echo = (status: number) => () => json({ error: { message: `bad credential ${SECRET}` } }, status);
    const up = upstream();
    up.once(echo(500)).once(echo(401));
    up.route("GET", "/v1/models", echo(401));
    up.route("POST", "/v1/chat/completions", echo(400));
    const { id } = await addKey(r, { provider: `${up.url}/v1`, secret: SECRET, noSleep: true });
    const texts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await chat(r);
      texts.push(await res.text(), res.headers.get("x-request-id") ?? "");
    }
    texts.push(await (await r.fetch("/v1/models")).text());
    texts.push(await (await r.fetch(`/x-keys/${id}/test`, { method: "POST" })).text());
    await r.deps.usageRecorder.flush();
    texts.push(JSON.stringify((await api(r, "/x-requests?size=100")).body));
    for (const requestId of texts.filter((t) => t.startsWith("req_"))) texts.push(JSON.stringify((await api(r, `/x-requests/${requestId}`)).body));
    texts.push(JSON.stringify((await api(r, "/dashboard/logs")).body));
    texts.push(JSON.stringify((await api(r, `/x-keys?fields=overview`)).body));
    texts.push(await (await r.fetch("/metrics")).text());
    expect(up.requests.length).toBeGreaterThanOrEqual(3);
    for (const text of [...texts, r.logs.join("\n")]) expect(text).not.toContain(SECRET);
  });
});

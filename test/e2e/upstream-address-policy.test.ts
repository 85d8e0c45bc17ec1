import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { createManualClock } from "../../src/core/clock.ts";
import { json, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api } from "../helpers/owner-ops.ts";
import type { StartOptions, TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Issue 13, item 2: provider URLs whose host is or resolves to a metadata, link-local or
 * unspecified address are refused always; private and loopback ones in the BYOK style
 * unless --allow-private-upstreams. Checked when saved and again before each upstream
 * connection, where a refusal fails the call over and takes the key out of rotation.
 */

const scope = perTest();

const router = (options: StartOptions = {}): Promise<TestRouter> => scope.router(options);
const upstream = (): MockUpstream => scope.upstream();

const SECRET = "sk-address-policy-test-0123456789abcdef";
const key = (Provider: string, extra: Record<string, unknown> = {}) => ({ Provider, SecretKey: SECRET, Level: 1, Status: true, ...extra });
const completion = { id: "c", object: "chat.completion", created: 1, model: "gpt-x", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };

/** A Google service-account key file whose token endpoint is `tokenUri`. */
function serviceAccountFile(tokenUri: string): string {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
  return JSON.stringify({ type: "service_account", project_id: "proj-review", private_key_id: "kid-review", private_key: privateKey, client_email: "router@proj-review.iam.gserviceaccount.com", token_uri: tokenUri });
}

async function keyCount(r: TestRouter): Promise<number> {
  return (await api(r, "/x-keys")).body.length;
}

describe("checked when a URL is saved", () => {
  test.each([
    ["https://169.254.169.254/v1", "metadata"],
    ["https://169.254.10.10/v1", "link-local"],
    ["https://[fe80::1]/v1", "link-local"],
    ["https://[::ffff:169.254.169.254]/v1", "metadata"],
    ["https://[64:ff9b::a9fe:a9fe]/v1", "metadata"],
    ["https://0.0.0.0:8443/v1", "unspecified"],
    ["https://metadata.google.internal/v1", "metadata"],
  ])("%s is refused with 400 naming Provider, nothing written", async (url, why) => {
    const r = await router();
    const before = await keyCount(r);
    const res = await api(r, "/x-keys", { body: key(url) });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe("Provider");
    expect(res.body.error.message).toContain(why);
    expect(res.body.error.message).not.toContain(SECRET);
    expect(await keyCount(r)).toBe(before);
  });

  test("a single-tenant owner may point keys at its own private network", async () => {
    const r = await router();
    expect((await api(r, "/x-keys", { body: key("https://10.20.30.40/v1") })).status).toBe(201);
    expect((await api(r, "/x-keys", { body: key("https://[fd12::5]/v1") })).status).toBe(201);
  });

  test("an update to a refused URL is refused and changes nothing", async () => {
    const r = await router();
    const created = await api(r, "/x-keys", { body: key("https://10.20.30.40/v1") });
    const res = await api(r, `/x-keys/${created.body.ID}`, { method: "PUT", body: { Provider: "https://169.254.169.254/v1" } });
    expect(res.status).toBe(400);
    expect((await api(r, `/x-keys/${created.body.ID}`)).body.Provider).toBe("https://10.20.30.40/v1");
  });

  test("a Vertex key's token_uri, in config or in its key file, is checked too", async () => {
    const r = await router();
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
    const file = (tokenUri: string) =>
      JSON.stringify({ type: "service_account", project_id: "p", private_key_id: "k", private_key: privateKey, client_email: "r@p.iam.gserviceaccount.com", token_uri: tokenUri });
    const vertex = { Provider: "https://us-central1-aiplatform.googleapis.com", Level: 1, Status: true };
    const inConfig = await api(r, "/x-keys", { body: { ...vertex, SecretKey: file("https://oauth2.googleapis.com/token"), config: { provider_type: "vertex", location: "us-central1", token_uri: "https://169.254.169.254/token" } } });
    expect(inConfig.status).toBe(400);
    expect(inConfig.body.error.param).toBe("config.token_uri");
    const inFile = await api(r, "/x-keys", { body: { ...vertex, SecretKey: file("https://169.254.169.254/token"), config: { provider_type: "vertex", location: "us-central1" } } });
    expect(inFile.status).toBe(400);
    expect(inFile.body.error.param).toBe("SecretKey");
    expect(inFile.body.error.message).not.toContain("PRIVATE KEY");
  });

  test("a Vertex key file whose token_uri is plain http:// is refused with 400 naming SecretKey: the signed JWT assertion never travels in cleartext", async () => {
    const r = await router();
    // A plain-HTTP listener standing for the token endpoint (or anything on the path to it).
    const bodies: string[] = [];
    const plain = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(request) {
        bodies.push(await request.text());
        return Response.json({ access_token: "ya29.cleartext-token-0123456789", expires_in: 3600, token_type: "Bearer" });
      },
    });
    scope.later(() => plain.stop(true));
    const vertex = upstream().route("POST", /:generateContent$/, () => json({ candidates: [{ content: { role: "model", parts: [{ text: "ok" }] }, finishReason: "STOP" }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 } }));
    const created = await api(r, "/x-keys", {
      body: {
        Provider: vertex.url,
        SecretKey: serviceAccountFile(`http://127.0.0.1:${plain.port}/token`),
        Level: 1,
        Status: true,
        config: { provider_type: "vertex", location: "us-east5", base_url: vertex.url },
      },
    });
    if (created.status === 201) {
      // The key is live: one call makes the router exchange its service account.
      await (
        await r.fetch("/v1beta/models/gemini-x:generateContent", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
        })
      ).text();
    }
    // Refused like config.token_uri (https only, docs/api.md "checked the same way"); nothing sent over http.
    expect(bodies.filter((b) => b.includes("assertion="))).toEqual([]);
    expect(created.status).toBe(400);
    expect(created.body.error?.param).toBe("SecretKey");
    expect(created.body.error.type).toBe("invalid_request_error");
    expect(created.body.error.message).toContain("token_uri");
    expect(created.body.error.message).not.toContain("PRIVATE KEY");
    expect(await keyCount(r)).toBe(0);
  });

  test("a key whose type becomes vertex while its secret stays: the stored key file's token_uri is checked (https, address policy)", async () => {
    const r = await router();
    // Key files kept as a standard key's secret (a single line of JSON is a valid header value).
    const plainFile = serviceAccountFile("http://oauth2.googleapis.com/token");
    const metadataFile = serviceAccountFile("https://169.254.169.254/token");
    for (const [file, why] of [
      [plainFile, "https://"],
      [metadataFile, "metadata"],
    ] as const) {
      const created = await api(r, "/x-keys", { body: { Provider: "https://us-central1-aiplatform.googleapis.com", SecretKey: file, Level: 1, Status: true } });
      expect(created.status).toBe(201);
      const res = await api(r, `/x-keys/${created.body.ID}`, { method: "PUT", body: { config: { provider_type: "vertex", location: "us-central1" } } });
      expect(res.status).toBe(400);
      expect(res.body.error.param).toBe("SecretKey");
      expect(res.body.error.message).toContain(why);
      expect(res.body.error.message).not.toContain("PRIVATE KEY");
      // Nothing written: the key is still a standard one.
      expect((await api(r, `/x-keys/${created.body.ID}`)).body.config.provider_type).toBe("standard");
      // With a new key file whose token_uri is Google's, the change goes through.
      const fixed = await api(r, `/x-keys/${created.body.ID}`, { method: "PUT", body: { SecretKey: serviceAccountFile("https://oauth2.googleapis.com/token"), config: { provider_type: "vertex", location: "us-central1" } } });
      expect(fixed.status).toBe(200);
    }
  });

  test("BYOK: private and loopback addresses are refused unless the operator allows them", async () => {
    const strict = await router({ config: { byok: true } });
    for (const url of ["https://127.0.0.1:9443/v1", "https://10.0.0.8/v1", "https://[::1]/v1", "https://localhost/v1"]) {
      const res = await api(strict, "/x-keys", { body: key(url) });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toContain("--allow-private-upstreams");
    }
    const allowing = await router({ config: { byok: true, allowPrivateUpstreams: true } });
    expect((await api(allowing, "/x-keys", { body: key("https://10.0.0.8/v1") })).status).toBe(201);
    // Metadata stays refused even then.
    expect((await api(allowing, "/x-keys", { body: key("https://169.254.169.254/v1") })).status).toBe(400);
  });
});

describe("checked again before each upstream connection", () => {
  test("a name that starts resolving to a metadata address: the call fails over, the key leaves rotation (NoSleep notwithstanding) until its URL changes", async () => {
    const clock = createManualClock(Date.UTC(2026, 5, 1, 12));
    const table: Record<string, string[]> = { "flaky.example.com": ["8.8.8.8"] };
    const r = await router({ clock, resolve: async (host) => table[host] ?? [] });
    const good = upstream().route("POST", "/v1/chat/completions", () => json(completion));
    const flaky = await api(r, "/x-keys", { body: key("https://flaky.example.com/v1", { NoSleep: true, Name: "flaky" }) });
    expect(flaky.status).toBe(201);
    expect((await api(r, "/x-keys", { body: key(`${good.url}/v1`, { SecretKey: "sk-good-key-0123456789abcdef0000" }) })).status).toBe(201);

    // The name moves; once the saved resolution is older than 30 s the router sees it.
    table["flaky.example.com"] = ["169.254.169.254"];
    clock.advance(31_000);
    for (let i = 0; i < 3; i++) {
      const res = await api(r, "/v1/chat/completions", { body: { model: "gpt-x", messages: [{ role: "user", content: "hi" }] } });
      expect(res.status).toBe(200);
    }
    expect(good.requests).toHaveLength(3);
    const record = (await api(r, `/x-keys/${flaky.body.ID}`)).body;
    expect(record).toMatchObject({ Sleeping: true, SleepReason: "address", NoSleep: true });
    expect(r.logs.some((line) => line.includes("upstream address is refused") && line.includes("169.254.169.254"))).toBe(true);
    expect(r.logs.some((line) => line.includes(SECRET))).toBe(false);

    // Fixing the URL brings it back.
    const fixed = await api(r, `/x-keys/${flaky.body.ID}`, { method: "PUT", body: { Provider: `${good.url}/v1` } });
    expect(fixed.status).toBe(200);
    expect((await api(r, `/x-keys/${flaky.body.ID}`)).body).toMatchObject({ Sleeping: false, SleepReason: null });
  });

  test("when no key may be reached: 502 in the caller's envelope, nothing sent anywhere", async () => {
    const clock = createManualClock(Date.UTC(2026, 5, 1, 12));
    const table: Record<string, string[]> = { "moving.example.com": ["8.8.8.8"] };
    const r = await router({ clock, resolve: async (host) => table[host] ?? [] });
    expect((await api(r, "/x-keys", { body: key("https://moving.example.com/v1") })).status).toBe(201);
    table["moving.example.com"] = ["fd00:ec2::254"];
    clock.advance(31_000);
    const res = await r.fetch("/v1/messages", { method: "POST", body: JSON.stringify({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }) });
    expect(res.status).toBe(502);
    expect((await res.json()).type).toBe("error");
  });
});

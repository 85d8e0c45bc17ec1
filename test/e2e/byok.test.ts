import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SMTPServer } from "smtp-server";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { openaiClient } from "../helpers/sdk.ts";

// Two tenants in one BYOK deployment: A is the first owner (started with the router),
// B registers itself. Nothing of one may be read, changed, routed through or learned
// of by the other.
let router: TestRouter;
let upstreamA: MockUpstream;
let upstreamB: MockUpstream;
let keyA: string;
let keyB: string;
let providerA: number;
let childA: { ID: number; Email: string; Name: string; APIKey: string };

const call = (key: string, path: string, init: RequestInit = {}) => router.fetch(path, { ...init, key });
const chat = (model: string) => ({ id: "c", object: "chat.completion", created: 1, model, choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });

beforeAll(async () => {
  upstreamA = startMockUpstream();
  upstreamB = startMockUpstream();
  upstreamA.route("POST", "/v1/chat/completions", (req) => json(chat(req.json.model)));
  upstreamB.route("POST", "/v1/chat/completions", (req) => json(chat(req.json.model)));
  // The mocks listen on 127.0.0.1: a BYOK router refuses loopback upstreams unless its operator allows them.
  router = await startRouter({ config: { byok: true, signup: true, metricsToken: "byok-metrics-token-000", allowPrivateUpstreams: true } });
  keyA = router.ownerKey;
  const signup = await router.fetch("/x-signup", { method: "POST", key: null, body: JSON.stringify({ Email: "b@tenant-b.example" }) });
  expect(signup.status).toBe(201);
  keyB = (await signup.json()).APIKey;
  const free = { PRICING: { ChatPricing: { "*": { InputText: 0, OutputText: 0 } } } };
  for (const [key, upstream] of [[keyA, upstreamA], [keyB, upstreamB]] as const) {
    expect((await call(key, "/x-config", { method: "PUT", body: JSON.stringify(free) })).status).toBe(200);
    const created = await call(key, "/x-keys", { method: "POST", body: JSON.stringify({ Provider: `${upstream.url}/v1`, SecretKey: `secret-of-${key.slice(-8)}-0123456789`, Level: 1, Status: true }) });
    expect(created.status).toBe(201);
    if (key === keyA) providerA = (await created.json()).ID;
  }
  const child = await call(keyA, "/x-users", { method: "POST", body: JSON.stringify({ Email: "child@tenant-a.example", CreditGranted: 5 }) });
  childA = await child.json();
});
afterAll(async () => {
  await router.stop();
  await Promise.all([upstreamA.stop(), upstreamB.stop()]);
});

describe("BYOK tenants are isolated", () => {
  test("provider keys: each owner sees and changes only its own", async () => {
    const listB = await (await call(keyB, "/x-keys?fields=summary")).json();
    expect(listB).toHaveLength(1);
    expect(listB[0].ID).not.toBe(providerA);
    for (const [method, path] of [["GET", `/x-keys/${providerA}`], ["PUT", `/x-keys/${providerA}`], ["DELETE", `/x-keys/${providerA}?force=true`], ["POST", `/x-keys/${providerA}/sleep`]]) {
      const res = await call(keyB, path!, { method, body: method === "PUT" ? JSON.stringify({ Status: false }) : undefined });
      expect(res.status).toBe(404);
    }
    expect((await (await call(keyA, "/x-keys?fields=summary")).json())[0].Status).toBe(true);
  });

  test("routing: each tenant's calls go only to its own keys", async () => {
    await openaiClient(router.url, keyA).chat.completions.create({ model: "m-a", messages: [] });
    await openaiClient(router.url, keyB).chat.completions.create({ model: "m-b", messages: [] });
    await openaiClient(router.url, childA.APIKey).chat.completions.create({ model: "m-child", messages: [] });
    expect(upstreamA.requests.map((r) => r.json.model)).toEqual(["m-a", "m-child"]);
    expect(upstreamB.requests.map((r) => r.json.model)).toEqual(["m-b"]);
  });

  test("configuration, mappers and pricing are per tenant", async () => {
    await call(keyA, "/x-config", { method: "PUT", body: JSON.stringify({ MODEL_MAPPER: "alias=real-a" }) });
    const configB = (await (await call(keyB, "/x-config")).json()).configs;
    expect(configB.MODEL_MAPPER).toBeUndefined();
    await openaiClient(router.url, keyB).chat.completions.create({ model: "alias", messages: [] });
    expect(upstreamB.requests.at(-1)!.json.model).toBe("alias");
    const pricingB = await (await call(keyB, "/x-pricing")).json();
    expect(pricingB.ChatPricing["*"]).toEqual({ InputText: 0, OutputText: 0 });
  });

  test("accounts: another tenant's accounts do not exist, by id, name or email", async () => {
    for (const id of [String(childA.ID), childA.Name, childA.Email, "1"]) {
      expect((await call(keyB, `/x-dna/${encodeURIComponent(id)}`)).status).toBe(404);
      expect((await call(keyB, `/x-users/${encodeURIComponent(id)}`, { method: "PUT", body: JSON.stringify({ Alias: "x" }) })).status).toBe(404);
    }
    expect(await (await call(keyB, "/x-dna")).json()).toEqual([]);
  });

  test("notices, logs and bills stay inside the tenant", async () => {
    await call(keyA, "/x-news", { method: "POST", body: JSON.stringify({ title: "A only", content: "for tenant A" }) });
    const newsB = await (await call(keyB, "/dashboard/news")).json();
    expect(newsB.data).toEqual([]);
    const newsChild = await (await call(childA.APIKey, "/dashboard/news")).json();
    expect(newsChild.data.map((n: { title: string }) => n.title)).toEqual(["A only"]);
    const logsB = await (await call(keyB, "/dashboard/logs?size=100")).json();
    expect(logsB.logs.length).toBeGreaterThan(0);
    expect(JSON.stringify(logsB)).not.toContain("child@tenant-a.example");
    expect(JSON.stringify(logsB)).not.toContain("A only");
    await router.deps.usageRecorder.flush();
    const billB = await (await call(keyB, "/x-bill")).json();
    expect(billB.usage_users).toEqual([]);
    const billA = await (await call(keyA, "/x-bill")).json();
    expect(billA.usage_users.map((u: { id: number }) => u.id)).toEqual([childA.ID]);
  });

  test("metrics cover every tenant, so only the metrics token reads them", async () => {
    expect((await call(keyA, "/metrics")).status).toBe(403);
    expect((await router.fetch("/metrics", { key: "byok-metrics-token-000" })).status).toBe(200);
  });
});

describe("each tenant's emails and names name its own accounts", () => {
  // Emails and names are unique per tenant: B may use what A's accounts use, and wherever
  // an account is named (the account API, /x-requests, /x-route, /x-bill), B's name finds
  // B's account and A's finds A's, never the other's nor a 404.
  test("the same email and name in two tenants resolve, in each, to that tenant's account", async () => {
    const twin = { Email: "twin@shared.example", Name: "twin-account", CreditGranted: 5 };
    const inA = await call(keyA, "/x-users", { method: "POST", body: JSON.stringify(twin) });
    const inB = await call(keyB, "/x-users", { method: "POST", body: JSON.stringify(twin) });
    expect([inA.status, inB.status]).toEqual([201, 201]);
    const twinA = await inA.json();
    const twinB = await inB.json();
    await openaiClient(router.url, twinA.APIKey).chat.completions.create({ model: "m-twin-a", messages: [] });
    await openaiClient(router.url, twinB.APIKey).chat.completions.create({ model: "m-twin-b", messages: [] });
    await router.deps.usageRecorder.flush();
    for (const [key, own, model] of [[keyA, twinA.ID, "m-twin-a"], [keyB, twinB.ID, "m-twin-b"]] as const) {
      for (const identifier of [twin.Email, twin.Name]) {
        const named = encodeURIComponent(identifier);
        expect((await (await call(key, `/x-dna/${named}`)).json()).ID).toBe(own);
        const calls = await (await call(key, `/x-requests?account=${named}`)).json();
        expect(calls.map((r: { account: { id: number }; requested_model: string }) => [r.account.id, r.requested_model])).toEqual([[own, model]]);
        expect((await (await call(key, `/x-route?model=m&account=${named}`)).json()).account.ID).toBe(own);
        expect((await (await call(key, `/x-bill?user=${named}`)).json()).usage_users.map((u: { id: number }) => u.id)).toEqual([own]);
      }
    }
    // A change by name reaches the caller's own account only.
    expect((await call(keyB, `/x-users/${twin.Name}`, { method: "PUT", body: JSON.stringify({ Alias: "b-side" }) })).status).toBe(200);
    expect((await (await call(keyA, `/x-dna/${twin.Name}`)).json()).Alias).toBeNull();
  });
});

describe("sign-up", () => {
  test("bad input is 400; a used email is 409; the sixth sign-up an hour from one address is 429", async () => {
    const post = (body: unknown) => router.fetch("/x-signup", { method: "POST", key: null, body: JSON.stringify(body) });
    expect((await post({ Email: "not-an-email" })).status).toBe(400);
    expect((await post({ Email: "c@x.example", Extra: 1 })).status).toBe(400);
    expect((await post({ Email: "b@tenant-b.example" })).status).toBe(409);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post({ Email: `flood${i}@x.example` })).status);
    expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(3);
    const limited = await post({ Email: "late@x.example" });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  test("with an SMTP server the key is issued only after the mailed token is confirmed", async () => {
    const mails: string[] = [];
    const smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      onData(stream, _session, done) {
        let text = "";
        stream.on("data", (chunk: Buffer) => (text += chunk.toString()));
        stream.on("end", () => {
          mails.push(text);
          done();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
    const port = (smtp.server.address() as { port: number }).port;
    const confirming = await startRouter({ config: { byok: true, signup: true, signupSmtp: `smtp://127.0.0.1:${port}`, signupFrom: "router@example.com" } });
    try {
      const res = await confirming.fetch("/x-signup", { method: "POST", key: null, body: JSON.stringify({ Email: "d@tenant-d.example" }) });
      expect(res.status).toBe(202);
      expect(JSON.stringify(await res.json())).not.toContain("sk-rt-");
      await waitFor(() => mails.length === 1, 5000, "the confirmation mail");
      const token = /"token":"([^"]+)"/.exec(mails[0]!.replace(/=\r\n/g, ""))?.[1];
      expect(token).toBeDefined();
      expect((await confirming.fetch("/x-signup/confirm", { method: "POST", key: null, body: JSON.stringify({ token: "wrong" }) })).status).toBe(404);
      const confirmed = await confirming.fetch("/x-signup/confirm", { method: "POST", key: null, body: JSON.stringify({ token }) });
      expect(confirmed.status).toBe(201);
      const { APIKey } = await confirmed.json();
      expect((await (await confirming.fetch("/dashboard/status", { key: APIKey })).json()).isOwner).toBe(true);
      expect((await confirming.fetch("/x-signup/confirm", { method: "POST", key: null, body: JSON.stringify({ token }) })).status).toBe(404);
    } finally {
      await confirming.stop();
      smtp.close();
    }
  });
});

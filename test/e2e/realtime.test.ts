import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Server, ServerWebSocket } from "bun";
import { join } from "node:path";
import OpenAI from "openai";
import { createRealtimeBridge, type RealtimeSession } from "../../src/gateway/realtime/bridge.ts";
import { openConnection } from "../../src/store/sqlite/connection.ts";
import { addKey, availableCredit, usageRows } from "../helpers/keys.ts";
import { startRouter, tempDir, waitFor, type TestRouter } from "../helpers/router.ts";
import { createManualClock } from "../../src/core/clock.ts";
import { testCertificates } from "../helpers/tls.ts";

/**
 * Issue 7, realtime: GET /v1/realtime bridged frame by frame to a WSS upstream with
 * the provider credential, each response.done charged as it arrives, closes
 * propagated, idle sessions cleaned up; POST /v1/realtime/client_secrets forwarded.
 */

const MODEL = "gpt-realtime-test";
const PRICE = { InputText: 4, CachedText: 0.4, OutputText: 16, InputAudio: 32, OutputAudio: 64 };
const PRICING = { ChatPricing: { "*": { InputText: 0, OutputText: 0 }, [MODEL]: PRICE } };
const RATES = 1.5;
const USAGE = {
  total_tokens: 1500,
  input_tokens: 1000,
  output_tokens: 500,
  input_token_details: { cached_tokens: 200, text_tokens: 300, audio_tokens: 700, cached_tokens_details: { text_tokens: 100, audio_tokens: 100 } },
  output_token_details: { text_tokens: 100, audio_tokens: 400 },
};
// Uncached: 200 text and 600 audio in, 200 cached; out: 100 text, 400 audio.
const COST_NANOS = Math.round((200 * 4 + 200 * 0.4 + 600 * 32 + 100 * 16 + 400 * 64) * 1000 * RATES);
/** The reservation of one response: 4096 output tokens at the dearest output price. */
const RESERVE_CREDITS = (4096 * 64 * 1000 * RATES) / 1e9;

// ---- a WSS realtime upstream -------------------------------------------------------

interface UpstreamConn {
  path: string;
  query: URLSearchParams;
  headers: Headers;
  received: Array<string | Uint8Array>;
  closed?: { code: number; reason: string };
}

function startRealtimeUpstream() {
  const certs = testCertificates();
  const state = {
    conns: [] as UpstreamConn[],
    http: [] as Array<{ path: string; headers: Headers; json: any }>,
    secrets: 0,
    refuseStatus: undefined as number | undefined,
    upgradeDelayMs: 0,
  };
  const send = (ws: ServerWebSocket<UpstreamConn>, event: unknown) => ws.send(JSON.stringify(event));
  const server = Bun.serve<UpstreamConn>({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: certs.certPem, key: certs.keyPem },
    idleTimeout: 0,
    async fetch(request, srv) {
      const url = new URL(request.url);
      if ((request.headers.get("upgrade") ?? "").toLowerCase() === "websocket") {
        if (state.refuseStatus) return new Response("refused", { status: state.refuseStatus });
        if (state.upgradeDelayMs) await Bun.sleep(state.upgradeDelayMs);
        const conn: UpstreamConn = { path: url.pathname, query: url.searchParams, headers: request.headers, received: [] };
        return srv.upgrade(request, { data: conn }) ? undefined : new Response("bad upgrade", { status: 400 });
      }
      const json = await request.json().catch(() => undefined);
      state.http.push({ path: url.pathname, headers: request.headers, json });
      if (request.method === "POST" && url.pathname === "/v1/realtime/client_secrets") {
        // A new secret each time, as the provider makes them (one given twice is refused by the router: affinity.ts).
        return Response.json({ value: `ek_test_${++state.secrets}`, expires_at: 1_900_000_000, session: json?.session });
      }
      return Response.json({ error: { message: "mock: no route" } }, { status: 404 });
    },
    websocket: {
      open(ws) {
        // Recorded once open: a delayed upgrade whose client already left never counts.
        state.conns.push(ws.data);
        send(ws, { type: "session.created", event_id: "ev_0", session: { model: ws.data.query.get("model") } });
      },
      message(ws, message) {
        ws.data.received.push(typeof message === "string" ? message : new Uint8Array(message));
        if (typeof message !== "string") {
          ws.send(message);
          return;
        }
        const event = JSON.parse(message);
        if (event.type === "response.create") {
          send(ws, { type: "response.created", event_id: "ev_1", response: { id: "resp_1", status: "in_progress" } });
          send(ws, { type: "response.output_audio.delta", event_id: "ev_2", delta: "AAAA" });
          send(ws, { type: "response.done", event_id: "ev_3", response: { id: "resp_1", status: "completed", usage: USAGE } });
        } else if (event.type === "test.response") {
          // A long response: its text streams out at once; its response.done (with usage)
          // comes `doneAfterMs` later, or never when that is absent.
          send(ws, { type: "response.created", response: { id: "resp_long", status: "in_progress" } });
          for (let i = 0; i < event.deltas; i++) send(ws, { type: "response.output_text.delta", response_id: "resp_long", delta: "z".repeat(2000) });
          if (event.doneAfterMs !== undefined) {
            setTimeout(() => {
              if (ws.readyState === WebSocket.OPEN) send(ws, { type: "response.done", response: { id: "resp_long", status: "completed", usage: USAGE } });
            }, event.doneAfterMs);
          }
        } else if (event.type === "test.close") ws.close(event.code, event.reason);
        else if (event.type === "test.drop") ws.terminate();
        else send(ws, { type: "echo", event });
      },
      close(ws, code, reason) {
        ws.data.closed = { code, reason };
      },
    },
  });
  return { state, url: `https://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

// ---- a client ---------------------------------------------------------------------

interface Client {
  ws: WebSocket;
  messages: Array<string | ArrayBuffer>;
  events: () => any[];
  opened: boolean;
  closed?: { code: number; reason: string };
  failed: boolean;
}

function connect(url: string, init: { headers?: Record<string, string>; protocols?: string[]; ca?: string } = {}): Client {
  const options = { headers: init.headers, protocols: init.protocols, ...(init.ca ? { tls: { ca: [init.ca] } } : {}) };
  const ws = new WebSocket(url, options as unknown as string[]);
  ws.binaryType = "arraybuffer";
  const client: Client = {
    ws,
    messages: [],
    events: () => client.messages.filter((m): m is string => typeof m === "string").map((m) => JSON.parse(m)),
    opened: false,
    failed: false,
  };
  ws.onopen = () => (client.opened = true);
  ws.onmessage = (event) => client.messages.push(event.data as string | ArrayBuffer);
  ws.onerror = () => (client.failed = true);
  ws.onclose = (event) => (client.closed = { code: event.code, reason: event.reason });
  return client;
}

const wsUrl = (router: TestRouter, query = `model=${MODEL}`) => `${router.url.replace(/^http/, "ws")}/v1/realtime?${query}`;
const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
const eventOf = (client: Client, type: string) => waitFor(() => client.events().find((e) => e.type === type), 5000, type);

let upstream: ReturnType<typeof startRealtimeUpstream>;
let router: TestRouter;
let secret: string;
let keyId: number;

async function createAccount(credit: number, on: TestRouter = router, fields: Record<string, unknown> = {}): Promise<{ id: number; key: string }> {
  const res = await on.fetch("/x-users", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ Email: `rt${Math.random().toString(36).slice(2)}@example.com`, Rates: RATES, CreditGranted: credit, ...fields }),
  });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`create account: ${res.status} ${JSON.stringify(body)}`);
  return { id: body.ID, key: body.APIKey };
}

beforeAll(async () => {
  upstream = startRealtimeUpstream();
  router = await startRouter({ pricing: PRICING });
  ({ id: keyId, secret } = await addKey(router, { provider: `${upstream.url}/v1` }));
});
afterAll(async () => {
  await router.stop();
  await upstream.stop();
});
beforeEach(() => {
  upstream.state.refuseStatus = undefined;
  upstream.state.upgradeDelayMs = 0;
});

const lastConn = () => upstream.state.conns.at(-1)!;

describe("the realtime WebSocket bridge", () => {
  test("events flow both ways, text and binary, with the provider credential; the client's key stays home", async () => {
    const before = upstream.state.conns.length;
    const client = connect(wsUrl(router), bearer(router.ownerKey));
    expect((await eventOf(client, "session.created")).session.model).toBe(MODEL);
    client.ws.send(JSON.stringify({ type: "conversation.item.create", item: { type: "message" } }));
    expect((await eventOf(client, "echo")).event.type).toBe("conversation.item.create");
    client.ws.send(new Uint8Array([1, 2, 3]));
    const binary = await waitFor(() => client.messages.find((m): m is ArrayBuffer => m instanceof ArrayBuffer));
    expect([...new Uint8Array(binary!)]).toEqual([1, 2, 3]);

    expect(upstream.state.conns.length).toBe(before + 1);
    const conn = lastConn();
    expect(conn.path).toBe("/v1/realtime");
    expect(conn.query.get("model")).toBe(MODEL);
    expect(conn.headers.get("authorization")).toBe(`Bearer ${secret}`);
    conn.headers.forEach((value) => expect(value).not.toContain(router.ownerKey));
    expect(conn.headers.get("openai-beta")).toBeNull();
    client.ws.close(1000, "done");
    await waitFor(() => conn.closed);
    expect(conn.closed).toEqual({ code: 1000, reason: "done" });
  });

  test("the browser subprotocol form authenticates; only `realtime` is echoed and nothing of it goes upstream", async () => {
    const client = connect(wsUrl(router), {
      protocols: ["realtime", `openai-insecure-api-key.${router.ownerKey}`, "openai-beta.realtime-v1"],
    });
    await eventOf(client, "session.created");
    expect(client.ws.protocol).toBe("realtime");
    const conn = lastConn();
    expect(conn.headers.get("openai-beta")).toBe("realtime=v1");
    expect(conn.headers.get("sec-websocket-protocol")).toBeNull();
    conn.headers.forEach((value) => expect(value).not.toContain(router.ownerKey));
    client.ws.close();
    await waitFor(() => conn.closed);
  });

  test("refusals come before any upgrade: wrong key 401, key in the URL 401, no model 400, plain GET 426", async () => {
    const before = upstream.state.conns.length;
    const wrong = await router.fetch(`/v1/realtime?model=${MODEL}`, { key: "sk-wrong" });
    expect(wrong.status).toBe(401);
    expect((await wrong.json()).error.code).toBe("invalid_api_key");
    const inUrl = await router.fetch(`/v1/realtime?model=${MODEL}&key=${router.ownerKey}`, { key: null });
    expect(inUrl.status).toBe(401);
    expect((await inUrl.json()).error.code).toBe("key_in_url");
    const noModel = await router.fetch("/v1/realtime");
    expect(noModel.status).toBe(400);
    const plain = await router.fetch(`/v1/realtime?model=${MODEL}`);
    expect(plain.status).toBe(426);

    const refused = connect(wsUrl(router), bearer("sk-wrong"));
    const viaUrl = connect(wsUrl(router, `model=${MODEL}&key=${router.ownerKey}`));
    await waitFor(() => refused.closed && viaUrl.closed);
    expect(refused.opened || viaUrl.opened).toBe(false);
    expect(upstream.state.conns.length).toBe(before);
  });

  test("each response.done is charged as it arrives: one usage row per response, at the account's Rates", async () => {
    const account = await createAccount(100);
    const client = connect(wsUrl(router), bearer(account.key));
    await eventOf(client, "session.created");
    client.ws.send(JSON.stringify({ type: "response.create" }));
    await waitFor(() => client.events().filter((e) => e.type === "response.done").length === 1);
    const first = await waitFor(async () => (await usageRows(router)).filter((r) => r.account_id === account.id));
    expect(first).toHaveLength(1);
    client.ws.send(JSON.stringify({ type: "response.create" }));
    await waitFor(() => client.events().filter((e) => e.type === "response.done").length === 2);
    expect(client.events().some((e) => e.type === "response.output_audio.delta")).toBe(true);

    const rows = (await waitFor(async () => {
      const found = (await usageRows(router)).filter((r) => r.account_id === account.id);
      return found.length === 2 ? found : undefined;
    }))!;
    for (const row of rows) {
      expect(row).toMatchObject({
        endpoint: "/v1/realtime",
        requested_model: MODEL,
        effective_model: MODEL,
        key_id: keyId,
        status: 200,
        prompt_tokens: 1000,
        completion_tokens: 500,
        cache_read_tokens: 200,
        source: "upstream",
        cost_nanos: COST_NANOS,
      });
    }
    expect(rows[0]!.request_id).toBe(rows[1]!.request_id);

    client.ws.close(1000);
    // The close releases the reservation held for a third response, with no row: Requests
    // counts one per response.done, never the close (issue 13, item 16).
    await waitFor(async () => (await availableCredit(router, account.id)) === 100e9 - 2 * COST_NANOS);
    expect((await usageRows(router)).filter((r) => r.account_id === account.id)).toHaveLength(2);
    const daily = await router.deps.store.usage.rollups({ accountId: account.id }, { start: "0000-01-01", end: "9999-12-31" });
    expect(daily.reduce((n, row) => n + row.requests, 0)).toBe(2);
  });

  test("running out of credit mid-session: the response is delivered, then an error event and close 1008", async () => {
    // Less than one response costs (and far less than its reservation): the first runs,
    // since something is left; once it is charged nothing is, and the next is refused.
    expect(RESERVE_CREDITS * 1e9).toBeGreaterThan(COST_NANOS);
    const account = await createAccount(Math.ceil(COST_NANOS / 2e3) / 1e6);
    const client = connect(wsUrl(router), bearer(account.key));
    await eventOf(client, "session.created");
    const conn = lastConn();
    client.ws.send(JSON.stringify({ type: "response.create" }));
    await waitFor(() => client.closed);
    const events = client.events();
    const done = events.findIndex((e) => e.type === "response.done");
    const error = events.findIndex((e) => e.type === "error");
    expect(done).toBeGreaterThanOrEqual(0);
    expect(error).toBeGreaterThan(done);
    expect(events[error].error).toMatchObject({ type: "insufficient_credit", code: "insufficient_credit" });
    expect(client.closed).toEqual({ code: 1008, reason: "insufficient credit" });
    await waitFor(() => conn.closed);
    const rows = (await usageRows(router)).filter((r) => r.account_id === account.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 200, cost_nanos: COST_NANOS });
  });

  test("close codes propagate: upstream → client, client → upstream, and a dropped upstream is 1011", async () => {
    const a = connect(wsUrl(router), bearer(router.ownerKey));
    await eventOf(a, "session.created");
    a.ws.send(JSON.stringify({ type: "test.close", code: 4001, reason: "upstream bye" }));
    await waitFor(() => a.closed);
    expect(a.closed).toEqual({ code: 4001, reason: "upstream bye" });

    const b = connect(wsUrl(router), bearer(router.ownerKey));
    await eventOf(b, "session.created");
    const conn = lastConn();
    b.ws.close(4002, "client bye");
    await waitFor(() => conn.closed);
    expect(conn.closed).toEqual({ code: 4002, reason: "client bye" });

    const c = connect(wsUrl(router), bearer(router.ownerKey));
    await eventOf(c, "session.created");
    c.ws.send(JSON.stringify({ type: "test.drop" }));
    await waitFor(() => c.closed);
    expect(c.closed!.code).toBe(1011);
  });

  test("frames sent before the upstream is open are held and delivered in order; too many close with 1009", async () => {
    upstream.state.upgradeDelayMs = 150;
    const client = connect(wsUrl(router), bearer(router.ownerKey));
    await waitFor(() => client.opened);
    client.ws.send(JSON.stringify({ type: "first" }));
    client.ws.send(new Uint8Array([9, 9]));
    client.ws.send(JSON.stringify({ type: "second" }));
    await waitFor(() => client.events().filter((e) => e.type === "echo").length === 2);
    const conn = lastConn();
    expect(conn.received.map((m) => (typeof m === "string" ? JSON.parse(m).type : [...m]))).toEqual(["first", [9, 9], "second"]);
    client.ws.close();

    const flood = connect(wsUrl(router), bearer(router.ownerKey));
    await waitFor(() => flood.opened);
    flood.ws.send("x".repeat(1024 * 1024 + 1));
    await waitFor(() => flood.closed);
    expect(flood.closed).toEqual({ code: 1009, reason: "too much data before the upstream connected" });
  });

  test("an upstream that refuses the session (404) ends it with an error event and 1008, without blaming the key", async () => {
    upstream.state.refuseStatus = 404;
    const client = connect(wsUrl(router), bearer(router.ownerKey));
    await waitFor(() => client.closed);
    expect(client.events().find((e) => e.type === "error").error.code).toBe("upstream_refused");
    expect(client.closed!.code).toBe(1008);
    expect(router.deps.pool.get(keyId)!.failures).toBe(0);
    const row = await waitFor(async () => (await usageRows(router)).find((r) => r.endpoint === "/v1/realtime" && r.status === 404));
    expect(row).toMatchObject({ prompt_tokens: 0, cost_nanos: 0 });
  });

  test("50 concurrent sessions open, exchange and close cleanly; nothing stays behind", async () => {
    const before = upstream.state.conns.length;
    const clients = Array.from({ length: 50 }, () => connect(wsUrl(router), bearer(router.ownerKey)));
    await waitFor(() => clients.every((c) => c.events().some((e) => e.type === "session.created")), 10_000, "50 sessions");
    clients.forEach((c, i) => c.ws.send(JSON.stringify({ type: "ping.test", i })));
    await waitFor(() => clients.every((c, i) => c.events().some((e) => e.type === "echo" && e.event.i === i)), 10_000, "50 echoes");
    expect(router.deps.pool.get(keyId)!.inFlight).toBe(50);
    clients.forEach((c) => c.ws.close(1000));
    await waitFor(() => upstream.state.conns.slice(before).every((c) => c.closed), 10_000, "upstream closes");
    await waitFor(() => router.deps.pool.get(keyId)!.inFlight === 0 && router.server.server.pendingWebSockets === 0, 10_000, "cleanup");
  });
});

describe("client secrets", () => {
  test("a client secret the router issued opens a session on its key, charged to its account; others are refused", async () => {
    const created = await router.fetch("/v1/realtime/client_secrets", {
      method: "POST",
      body: JSON.stringify({ session: { type: "realtime", model: MODEL } }),
    });
    const secret: string = (await created.json()).value;
    expect(secret).toMatch(/^ek_test_\d+$/);
    const before = upstream.state.conns.length;
    const client = connect(wsUrl(router), { protocols: ["realtime", `openai-insecure-api-key.${secret}`] });
    await eventOf(client, "session.created");
    expect(upstream.state.conns.length).toBe(before + 1);
    // The secret itself goes upstream: it carries the session settings it was made with.
    expect(lastConn().headers.get("authorization")).toBe(`Bearer ${secret}`);
    client.ws.send(JSON.stringify({ type: "response.create" }));
    await eventOf(client, "response.done");
    client.ws.close(1000, "done");
    const row = await waitFor(async () => (await usageRows(router)).find((r) => r.endpoint === "/v1/realtime" && r.prompt_tokens === 1000 && r.account_id === 1));
    expect(row!.key_id).toBeGreaterThan(0);
    // Nothing about the secret is stored in clear.
    const stored = await router.deps.store.objects.ownedBy(1, "client_secret");
    expect(stored.length).toBe(1);
    expect(stored[0]!.objectId).not.toContain(secret);

    const unknown = connect(wsUrl(router), bearer("ek_never_issued"));
    await waitFor(() => unknown.failed || unknown.closed);
    expect(unknown.opened).toBe(false);
  });
});

describe("idle sessions and failover", () => {
  test("a session without frames either way is closed with 1000 idle", async () => {
    const bridge = createRealtimeBridge(router.deps, { idleMs: 200 });
    const server: Server<RealtimeSession> = Bun.serve<RealtimeSession>({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (request, srv) => bridge.upgrade(request, srv),
      websocket: bridge.websocket,
    });
    try {
      const client = connect(`ws://127.0.0.1:${server.port}/v1/realtime?model=${MODEL}`, bearer(router.ownerKey));
      await eventOf(client, "session.created");
      const conn = lastConn();
      await waitFor(() => client.closed, 5000, "idle close");
      expect(client.closed).toEqual({ code: 1000, reason: "idle" });
      await waitFor(() => conn.closed);
      expect(bridge.size()).toBe(0);
    } finally {
      await server.stop(true);
    }
  });

  test("an Azure key connects to /openai/realtime with api-version, the mapped model's deployment and api-key", async () => {
    const azure = await startRouter({ pricing: PRICING });
    try {
      await azure.deps.settings.update({ MODEL_MAPPER: `rt-alias=${MODEL}` });
      const { secret: azureSecret } = await addKey(azure, {
        provider: upstream.url,
        config: { provider_type: "azure", deployments: { [MODEL]: "rt-deployment" }, api_versions: { [MODEL]: "2025-08-28" } },
      });
      const client = connect(wsUrl(azure, "model=rt-alias"), bearer(azure.ownerKey));
      await eventOf(client, "session.created");
      const conn = lastConn();
      expect(conn.path).toBe("/openai/realtime");
      expect(conn.query.get("api-version")).toBe("2025-08-28");
      expect(conn.query.get("deployment")).toBe("rt-deployment");
      expect(conn.headers.get("api-key")).toBe(azureSecret);
      expect(conn.headers.get("authorization")).toBeNull();
      client.ws.send(JSON.stringify({ type: "response.create" }));
      const row = await waitFor(async () => (await usageRows(azure)).find((r) => r.endpoint === "/v1/realtime" && r.prompt_tokens === 1000));
      expect(row).toMatchObject({ requested_model: "rt-alias", effective_model: MODEL });
      client.ws.close();
      await waitFor(() => conn.closed);
    } finally {
      await azure.stop();
    }
  });

  test("a key whose upstream cannot be reached is skipped for another before the session starts", async () => {
    const other = await startRouter({ pricing: PRICING });
    try {
      await addKey(other, { provider: "https://127.0.0.1:1/v1", noSleep: true });
      await addKey(other, { provider: `${upstream.url}/v1` });
      for (let i = 0; i < 2; i++) {
        const client = connect(wsUrl(other), bearer(other.ownerKey));
        await eventOf(client, "session.created");
        client.ws.close();
        await waitFor(() => client.closed);
      }
      expect(other.logs.some((line) => line.includes("realtime upstream did not connect"))).toBe(true);
    } finally {
      await other.stop();
    }
  });
});

describe("the official SDK", () => {
  let tlsRouter: TestRouter;
  beforeAll(async () => {
    const certs = testCertificates();
    tlsRouter = await startRouter({ pricing: PRICING, config: { tlsCert: certs.certFile, tlsKey: certs.keyFile } });
    await addKey(tlsRouter, { provider: `${upstream.url}/v1`, secret: secret });
  });
  afterAll(() => tlsRouter.stop());

  test("OpenAIRealtimeWS (the `ws` package) exchanges events over wss:// with usage charged", async () => {
    const { OpenAIRealtimeWS } = await import("openai/realtime/ws");
    const client = new OpenAI({ baseURL: `${tlsRouter.url}/v1`, apiKey: tlsRouter.ownerKey, maxRetries: 0 });
    const rt = new OpenAIRealtimeWS({ model: MODEL, options: { ca: testCertificates().caPem } }, client);
    const seen: string[] = [];
    let usage: any;
    rt.on("event", (event) => seen.push(event.type));
    rt.on("response.done", (event) => (usage = event.response.usage));
    rt.on("error", () => {});
    rt.socket.on("open", () => rt.send({ type: "response.create" }));
    await waitFor(() => usage, 5000, "response.done");
    expect(usage.output_token_details.audio_tokens).toBe(400);
    expect(seen).toContain("session.created");
    rt.close();
    const row = await waitFor(async () => (await usageRows(tlsRouter)).find((r) => r.endpoint === "/v1/realtime" && r.prompt_tokens === 1000));
    expect(row).toMatchObject({ status: 200, completion_tokens: 500 });
  });

  test("client_secrets is forwarded with session.model as the only routing input", async () => {
    const certs = testCertificates();
    const sdk = new OpenAI({
      baseURL: `${tlsRouter.url}/v1`,
      apiKey: tlsRouter.ownerKey,
      maxRetries: 0,
      // Bun's fetch option: trust the test CA for the router's own certificate.
      fetchOptions: { tls: { ca: certs.caPem } } as NonNullable<ConstructorParameters<typeof OpenAI>[0]>["fetchOptions"],
    });
    const answer = await sdk.realtime.clientSecrets.create({ session: { type: "realtime", model: MODEL } });
    expect(answer.value).toMatch(/^ek_test_\d+$/);
    const seen = upstream.state.http.at(-1)!;
    expect(seen.path).toBe("/v1/realtime/client_secrets");
    expect(seen.headers.get("authorization")).toBe(`Bearer ${secret}`);
    expect(seen.json.session.model).toBe(MODEL);
    expect(seen.json.model).toBeUndefined();
    const row = await waitFor(async () => (await usageRows(tlsRouter)).find((r) => r.endpoint === "/v1/realtime/client_secrets"));
    expect(row).toMatchObject({ status: 200, requested_model: MODEL, cost_nanos: 0 });
  });
});

describe("a live session dies with its key and its access", () => {
  const api = async (path: string, init: { method?: string; body?: unknown; key?: string } = {}) => {
    const res = await router.fetch(path, { method: init.method ?? "POST", key: init.key, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
    return { status: res.status, body: await res.json().catch(() => undefined) };
  };

  /** An account with an open session, ready for the change under test. */
  async function openSession(credit = 100) {
    const account = await createAccount(credit);
    const client = connect(wsUrl(router), bearer(account.key));
    await eventOf(client, "session.created");
    return { account, client, conn: lastConn() };
  }

  /** The session got a realtime `error` event saying why, then close 1008; the upstream socket closed too. */
  async function expectRevoked(opened: Awaited<ReturnType<typeof openSession>>, why: string) {
    await waitFor(() => opened.client.closed, 5000, "the revoked session to close");
    expect(opened.client.closed!.code).toBe(1008);
    const error = opened.client.events().find((e) => e.type === "error");
    expect(error.error).toMatchObject({ type: "invalid_request_error", code: "session_revoked" });
    expect(error.error.message).toContain(why);
    await waitFor(() => opened.conn.closed, 5000, "the upstream socket to close");
  }

  test("rotating the key (POST /x-self) closes the session opened with it at once", async () => {
    const opened = await openSession();
    const confirm = `${router.deps.clock.businessDate()}-ROTATE-SELF`;
    expect((await api("/x-self", { key: opened.account.key, body: { confirm } })).status).toBe(200);
    await expectRevoked(opened, "rotated");
  });

  test("deleting the account closes its session; a response in progress is still metered", async () => {
    const opened = await openSession();
    opened.client.ws.send(JSON.stringify({ type: "response.create" }));
    await eventOf(opened.client, "response.done");
    expect((await api(`/x-users/${opened.account.id}`, { method: "DELETE" })).status).toBe(200);
    await expectRevoked(opened, "deleted");
    const rows = await waitFor(async () => {
      const mine = (await usageRows(router)).filter((r) => r.account_id === opened.account.id);
      return mine.length > 0 ? mine : undefined;
    });
    expect(rows!.map((r) => [r.status, r.cost_nanos])).toEqual([[200, COST_NANOS]]);
  });

  test.each([
    ["Resources", { Resources: "/v1/chat/completions,/dashboard/*" }, "Resources"],
    ["AllowModels", { AllowModels: "gpt-4o*" }, "AllowModels"],
    ["AllowIPs", { AllowIPs: "10.0.0.0/8" }, "AllowIPs"],
  ])("an update of %s that no longer allows the session closes it", async (_name, change, why) => {
    const opened = await openSession();
    expect((await api(`/x-users/${opened.account.id}`, { method: "PUT", body: change })).status).toBe(200);
    await expectRevoked(opened, why);
  });

  test("a system RESOURCES change that no longer allows realtime closes non-owner sessions", async () => {
    const opened = await openSession();
    const owner = connect(wsUrl(router), bearer(router.ownerKey));
    await eventOf(owner, "session.created");
    try {
      expect((await api("/x-config", { method: "PUT", body: { RESOURCES: "/v1/chat/*,/dashboard/*,/x-*" } })).status).toBe(200);
      await expectRevoked(opened, "RESOURCES");
    } finally {
      expect((await api("/x-config", { method: "DELETE", body: { keys: ["RESOURCES"] } })).status).toBe(200);
    }
    owner.ws.close(1000);
  });

  test("a session opened with a client secret dies when the key of the account that minted it is rotated", async () => {
    const account = await createAccount(100);
    const minted = await api("/v1/realtime/client_secrets", { key: account.key, body: { session: { type: "realtime", model: MODEL } } });
    const client = connect(wsUrl(router), { protocols: ["realtime", `openai-insecure-api-key.${minted.body.value}`] });
    await eventOf(client, "session.created");
    const conn = lastConn();
    const confirm = `${router.deps.clock.businessDate()}-ROTATE-SELF`;
    expect((await api("/x-self", { key: account.key, body: { confirm } })).status).toBe(200);
    await expectRevoked({ account, client, conn }, "rotated");
  });

  test("a change made by another process (the CLI, another instance on the file) reaches live sessions too", async () => {
    const opened = await openSession();
    // Another connection to the same database, opened as the CLI opens it: what it changed is not known, so every session is checked.
    const other = openConnection(join(router.dataDir, "router.db"));
    try {
      other.sqlite.run("UPDATE accounts SET allow_models = 'gpt-4o*' WHERE id = ?", [opened.account.id]);
    } finally {
      other.close();
    }
    await expectRevoked(opened, "AllowModels");
  });

  test("a change that still allows the session, or another account's change, leaves it alone", async () => {
    const opened = await openSession();
    const other = await createAccount(1);
    expect((await api(`/x-users/${other.id}`, { method: "PUT", body: { AllowModels: "nothing-*" } })).status).toBe(200);
    expect((await api(`/x-users/${opened.account.id}`, { method: "PUT", body: { AllowModels: "gpt-realtime*", RPM: 100 } })).status).toBe(200);
    opened.client.ws.send(JSON.stringify({ type: "ping.test" }));
    expect((await eventOf(opened.client, "echo")).event.type).toBe("ping.test");
    expect(opened.client.closed).toBeUndefined();
    opened.client.ws.close(1000);
  });
});

describe("realtime responses and day quotas", () => {
  /**
   * Opens a session at 23:59 UTC (its first reservation taken then), moves the clock by
   * `advanceMs`, runs one response, and reports how the account's DailyLimit treats what
   * follows: the session's next response, and an ordinary call of the account.
   */
  async function dayLimitAfter(advanceMs: number) {
    const clock = createManualClock(Date.UTC(2030, 0, 10, 23, 59, 0));
    const own = await startRouter({ pricing: PRICING, clock });
    try {
      await addKey(own, { provider: `${upstream.url}/v1` });
      // DailyLimit below one response's cost: once one is charged on a day, nothing more is admitted that day.
      expect(COST_NANOS).toBeGreaterThan(0.05e9);
      const account = await createAccount(100, own, { DailyLimit: 0.05 });
      const client = connect(wsUrl(own), bearer(account.key));
      await eventOf(client, "session.created");
      clock.advance(advanceMs);
      client.ws.send(JSON.stringify({ type: "response.create" }));
      await eventOf(client, "response.done");
      const rows = await waitFor(async () => {
        const mine = (await usageRows(own)).filter((r) => r.account_id === account.id);
        return mine.length === 1 ? mine : undefined;
      });
      expect(rows![0]!.cost_nanos).toBe(COST_NANOS);
      // The day of the response spent more than its DailyLimit: the next response is refused (an error event, then 1008).
      await waitFor(() => client.closed, 1000, "the refusal of the next response").catch(() => undefined);
      const refusal = client.events().find((e) => e.type === "error")?.error?.code;
      client.ws.close(1000);
      await waitFor(() => client.closed, 5000, "close");
      // And so is an ordinary call of the account that day.
      const call = await own.fetch("/v1/chat/completions", {
        method: "POST",
        key: account.key,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
      });
      const body = (await call.json()) as { error?: { code?: string } };
      return { refusal, status: call.status, code: body.error?.code };
    } finally {
      await own.stop();
    }
  }

  // The control for the next test: within one business day the limit holds.
  test("a response run on the day it was admitted: DailyLimit refuses what follows", async () => {
    expect(await dayLimitAfter(10_000)).toEqual({ refusal: "daily_limit_reached", status: 429, code: "daily_limit_reached" });
  });

  test("a response admitted before midnight and run after it: the new day's DailyLimit counts its whole cost and refuses what follows", async () => {
    // Midnight passes between the reservation (Jan 10) and the response (Jan 11): the
    // reservation leaves Jan 10, the cost counts in Jan 11 (not cost − reservation there).
    expect(await dayLimitAfter(2 * 60_000)).toEqual({ refusal: "daily_limit_reached", status: 429, code: "daily_limit_reached" });
  });
});

describe("a client that leaves mid-response", () => {
  /** The client receives a long response's text, then leaves before its response.done. */
  async function leaveMidResponse(on: TestRouter, response: { deltas: number; doneAfterMs?: number }) {
    const account = await createAccount(100, on);
    const client = connect(wsUrl(on), bearer(account.key));
    await eventOf(client, "session.created");
    const conn = lastConn();
    client.ws.send(JSON.stringify({ type: "test.response", ...response }));
    if (response.deltas > 0) await waitFor(() => client.events().filter((e) => e.type === "response.output_text.delta").length === response.deltas, 5000, "the deltas");
    else await eventOf(client, "response.created");
    client.ws.close(1000);
    return { account, client, conn };
  }
  const rowOf = async (on: TestRouter, accountId: number) =>
    (await waitFor(async () => {
      const mine = (await usageRows(on)).filter((r) => r.account_id === accountId);
      return mine.length === 1 ? mine : undefined;
    }, 5000, "the response's row"))![0]!;

  test("the upstream is read on to the response's response.done: its reported usage is charged (status 499), not zero", async () => {
    const { account, conn } = await leaveMidResponse(router, { deltas: 5, doneAfterMs: 300 });
    const row = await rowOf(router, account.id);
    expect(row).toMatchObject({ status: 499, source: "upstream", prompt_tokens: 1000, completion_tokens: 500, cost_nanos: COST_NANOS });
    // Then the upstream is closed with the client's own code, and nothing stays reserved.
    await waitFor(() => conn.closed, 5000, "the upstream to close");
    expect(conn.closed!.code).toBe(1000);
    await waitFor(async () => (await availableCredit(router, account.id)) === 100e9 - COST_NANOS, 5000, "the reservation released");
  });

  test("no response.done by the drain deadline: charged an estimate of the text it generated, capped by the response's MaxOutput, marked estimated", async () => {
    const capped = { ChatPricing: { ...PRICING.ChatPricing, [MODEL]: { ...PRICE, MaxOutput: 4096 } } };
    const own = await startRouter({ pricing: capped, config: { drainTimeoutMs: 300 } });
    try {
      await addKey(own, { provider: `${upstream.url}/v1` });
      // 10 × 2000 characters: about 5000 tokens at 4 bytes a token, more than the model's MaxOutput (4096).
      const { account, conn } = await leaveMidResponse(own, { deltas: 10 });
      const row = await rowOf(own, account.id);
      expect(row).toMatchObject({ status: 499, source: "estimated", prompt_tokens: 0, completion_tokens: 4096 });
      expect(row.cost_nanos).toBe(Math.round(4096 * PRICE.OutputText * 1000 * RATES));
      await waitFor(() => conn.closed, 5000, "the upstream cut at the deadline");
      await waitFor(async () => (await availableCredit(own, account.id)) === 100e9 - row.cost_nanos, 5000, "the reservation released");
    } finally {
      await own.stop();
    }
  });

  test("a response that produced nothing before the deadline is not charged", async () => {
    const own = await startRouter({ pricing: PRICING, config: { drainTimeoutMs: 300 } });
    try {
      await addKey(own, { provider: `${upstream.url}/v1` });
      const { account } = await leaveMidResponse(own, { deltas: 0 });
      const row = await rowOf(own, account.id);
      expect(row).toMatchObject({ status: 499, prompt_tokens: 0, completion_tokens: 0, cost_nanos: 0 });
      await waitFor(async () => (await availableCredit(own, account.id)) === 100e9, 5000, "the reservation released");
    } finally {
      await own.stop();
    }
  });
});

describe("a stop with a response under way", () => {
  /**
   * A router on a data directory of its own (so its rows can be read after the stop),
   * with one session whose response is under way when the router is stopped.
   */
  async function stopMidResponse(drainTimeoutMs: number, response: { deltas: number; doneAfterMs?: number }) {
    const dataDir = tempDir();
    const own = await startRouter({ dataDir, config: { drainTimeoutMs } });
    await own.deps.settings.update({ PRICING });
    await addKey(own, { provider: `${upstream.url}/v1` });
    const account = await createAccount(100, own);
    const client = connect(wsUrl(own), bearer(account.key));
    await eventOf(client, "session.created");
    client.ws.send(JSON.stringify({ type: "test.response", ...response }));
    await waitFor(() => client.events().filter((e) => e.type === "response.output_text.delta").length === response.deltas, 5000, "the deltas");
    const stopping = Date.now();
    await own.stop();
    const stopMs = Date.now() - stopping;
    // The rows the stop wrote, read by the next start on the same data.
    const next = await startRouter({ dataDir });
    try {
      const rows = (await usageRows(next)).filter((r) => r.account_id === account.id);
      return { rows, stopMs, closed: client.closed };
    } finally {
      await next.stop();
    }
  }

  test("the stop waits for the response's response.done and charges its usage", async () => {
    const { rows, stopMs, closed } = await stopMidResponse(5000, { deltas: 2, doneAfterMs: 300 });
    expect(closed?.code).toBe(1001);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 502, source: "upstream", cost_nanos: COST_NANOS });
    expect(stopMs).toBeLessThan(5000);
  });

  test("an upstream that never finishes: the stop ends within the drain timeout, the response charged an estimate", async () => {
    const { rows, stopMs } = await stopMidResponse(400, { deltas: 2 });
    expect(rows).toHaveLength(1);
    // 2 × 2000 characters: 1000 tokens.
    expect(rows[0]).toMatchObject({ status: 502, source: "estimated", completion_tokens: 1000, cost_nanos: Math.round(1000 * PRICE.OutputText * 1000 * RATES) });
    // The drain timeout, and the grace and bookkeeping around it, no more.
    expect(stopMs).toBeLessThan(400 + 3000);
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server, ServerWebSocket } from "bun";
import { createRealtimeBridge, type RealtimeSession } from "../../src/gateway/realtime/bridge.ts";
import { addKey, usageRows } from "../helpers/keys.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { testCertificates } from "../helpers/tls.ts";

/**
 * Review of the realtime bridge when the upstream fails: a refused upgrade or a failed
 * response that says the key's account is dead puts the key aside, as the HTTP path does
 * (src/routing/provider-errors.ts), and the session goes to another key.
 */

const MODEL = "gpt-realtime-review";
const PRICING = { ChatPricing: { "*": { InputText: 0, OutputText: 0 }, [MODEL]: { InputText: 4, OutputText: 16 } } };
const USAGE = { total_tokens: 150, input_tokens: 100, output_tokens: 50 };
const QUOTA_ERROR = { type: "insufficient_quota", code: "insufficient_quota", message: "You exceeded your current quota, please check your plan and billing details." };

/** A WSS realtime upstream that refuses upgrades with `refuse` when set, and answers `response.create` with `done`. */
function startUpstream(behaviour: { refuse?: number; hangMs?: number; done?: (usage: unknown) => unknown }) {
  const certs = testCertificates();
  const state = { upgrades: 0, opened: 0, secrets: 0 };
  const send = (ws: ServerWebSocket<unknown>, event: unknown) => ws.send(JSON.stringify(event));
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: certs.certPem, key: certs.keyPem },
    async fetch(request, srv) {
      if (request.method === "POST") return Response.json({ value: `ek_review_${++state.secrets}`, expires_at: 1_900_000_000 });
      state.upgrades++;
      if (behaviour.hangMs) await Bun.sleep(behaviour.hangMs);
      if (behaviour.refuse) return new Response(JSON.stringify({ error: QUOTA_ERROR }), { status: behaviour.refuse });
      return srv.upgrade(request, { data: undefined }) ? undefined : new Response("bad upgrade", { status: 400 });
    },
    websocket: {
      open(ws) {
        state.opened++;
        send(ws, { type: "session.created", session: { model: MODEL } });
      },
      message(ws, message) {
        if (typeof message !== "string" || JSON.parse(message).type !== "response.create") return;
        send(ws, { type: "response.created", response: { id: "resp_1", status: "in_progress" } });
        const done = behaviour.done ?? ((usage: unknown) => ({ type: "response.done", response: { id: "resp_1", status: "completed", usage } }));
        send(ws, done(USAGE));
      },
    },
  });
  return { state, url: `https://127.0.0.1:${server.port}/v1`, stop: () => server.stop(true) };
}

interface Client {
  ws: WebSocket;
  events: any[];
  closed?: { code: number; reason: string };
}

function connect(router: TestRouter, base = router.url, credential = router.ownerKey): Client {
  const ws = new WebSocket(`${base.replace(/^http/, "ws")}/v1/realtime?model=${MODEL}`, {
    headers: { authorization: `Bearer ${credential}` },
  } as unknown as string[]);
  const client: Client = { ws, events: [] };
  ws.onmessage = (event) => typeof event.data === "string" && client.events.push(JSON.parse(event.data));
  ws.onclose = (event) => (client.closed = { code: event.code, reason: event.reason });
  return client;
}

const eventOf = (client: Client, type: string) => waitFor(() => client.events.find((e) => e.type === type) ?? (client.closed && Promise.reject(new Error(`closed ${JSON.stringify(client.closed)} before ${type}: ${JSON.stringify(client.events)}`))), 5000, type);

let good: ReturnType<typeof startUpstream>;
beforeAll(() => {
  good = startUpstream({});
});
afterAll(() => good.stop());

describe("a refused upgrade that says the account is dead", () => {
  let dead: ReturnType<typeof startUpstream>;
  let router: TestRouter;
  let deadKey: number;
  beforeAll(async () => {
    dead = startUpstream({ refuse: 402 });
    router = await startRouter({ pricing: PRICING });
    ({ id: deadKey } = await addKey(router, { provider: dead.url }));
    await addKey(router, { provider: good.url });
  });
  afterAll(async () => {
    await router.stop();
    dead.stop();
  });

  test("402 Payment Required: the key is put aside like a 401 and the session opens on another key", async () => {
    // Two sessions in turn: the pool's rotation tries the dead key for one of them.
    for (let i = 0; i < 2; i++) {
      const client = connect(router);
      await eventOf(client, "session.created");
      client.ws.close(1000);
      await waitFor(() => client.closed);
    }
    expect(dead.state.upgrades).toBe(1);
    const key = router.deps.pool.get(deadKey)!;
    expect({ sleeping: key.sleeping, reason: key.sleepReason }).toEqual({ sleeping: true, reason: "auth" });
    // No response ran: no usage row, nothing charged.
    const rows = (await usageRows(router)).filter((r) => r.endpoint === "/v1/realtime");
    expect(rows).toEqual([]);
  }, 15_000);
});

describe("a response that fails because the account's quota is spent", () => {
  let spent: ReturnType<typeof startUpstream>;
  let router: TestRouter;
  let spentKey: number;
  beforeAll(async () => {
    // As OpenAI reports it: the response fails with the error in status_details.
    spent = startUpstream({
      done: () => ({ type: "response.done", response: { id: "resp_1", status: "failed", status_details: { type: "failed", error: QUOTA_ERROR }, usage: null } }),
    });
    router = await startRouter({ pricing: PRICING });
    ({ id: spentKey } = await addKey(router, { provider: spent.url }));
    await addKey(router, { provider: good.url, level: 2 });
    await router.deps.settings.update({ SWITCH_OVER: "1=2" });
  });
  afterAll(async () => {
    await router.stop();
    spent.stop();
  });

  test("the client sees the failure as sent; the key is put aside, so the next session goes to another key", async () => {
    const first = connect(router);
    await eventOf(first, "session.created");
    first.ws.send(JSON.stringify({ type: "response.create" }));
    const done = await eventOf(first, "response.done");
    expect(done.response.status_details.error.code).toBe("insufficient_quota");
    const key = router.deps.pool.get(spentKey)!;
    await waitFor(() => key.sleeping, 5000, "the spent key put aside");
    expect(key.sleepReason).toBe("auth");
    first.ws.close(1000);
    await waitFor(() => first.closed);

    const opened = good.state.opened;
    const second = connect(router);
    await eventOf(second, "session.created");
    expect(good.state.opened).toBe(opened + 1);
    second.ws.send(JSON.stringify({ type: "response.create" }));
    await eventOf(second, "response.done");
    second.ws.close(1000);
    // The failed response generated nothing and is not charged; the good one is.
    const rows = await waitFor(async () => {
      const all = (await usageRows(router)).filter((r) => r.endpoint === "/v1/realtime");
      return all.length === 2 ? all : undefined;
    });
    expect(rows!.map((r) => [r.status, r.cost_nanos > 0])).toEqual([
      [502, false],
      [200, true],
    ]);
  }, 15_000);
});

describe("an upstream whose handshake never answers", () => {
  let slow: ReturnType<typeof startUpstream>;
  let router: TestRouter;
  let slowKey: number;
  let bridged: Server<RealtimeSession>;
  beforeAll(async () => {
    slow = startUpstream({ hangMs: 3000 });
    router = await startRouter({ pricing: PRICING });
    ({ id: slowKey } = await addKey(router, { provider: slow.url }));
    const bridge = createRealtimeBridge(router.deps, { connectTimeoutMs: 200 });
    bridged = Bun.serve<RealtimeSession>({ hostname: "127.0.0.1", port: 0, fetch: (request, srv) => bridge.upgrade(request, srv), websocket: bridge.websocket });
  });
  afterAll(async () => {
    await bridged.stop(true);
    await router.stop();
    slow.stop();
  });

  test("alone: the client gets upstream_unavailable and 1011, the key one failure, a 502 row charged nothing", async () => {
    const client = connect(router, `http://127.0.0.1:${bridged.port}`);
    await waitFor(() => client.closed, 5000, "close");
    expect(client.closed).toEqual({ code: 1011, reason: "upstream unavailable" });
    expect(client.events.map((e) => [e.type, e.error?.type, e.error?.code])).toEqual([["error", "server_error", "upstream_unavailable"]]);
    expect(router.deps.pool.get(slowKey)!.failures).toBe(1);
    const row = await waitFor(async () => (await usageRows(router)).find((r) => r.endpoint === "/v1/realtime"));
    expect(row).toMatchObject({ status: 502, cost_nanos: 0, key_id: null });
    await waitFor(() => router.deps.pool.get(slowKey)!.inFlight === 0, 5000, "key released");
  }, 15_000);

  test("with another key: the session opens there before it starts", async () => {
    await addKey(router, { provider: good.url });
    for (let i = 0; i < 2; i++) {
      const client = connect(router, `http://127.0.0.1:${bridged.port}`);
      await eventOf(client, "session.created");
      client.ws.close(1000);
      await waitFor(() => client.closed);
    }
  }, 15_000);
});

describe("a client secret the upstream no longer takes (expired)", () => {
  const behaviour: { refuse?: number } = {};
  let upstream: ReturnType<typeof startUpstream>;
  let router: TestRouter;
  let keyId: number;
  beforeAll(async () => {
    upstream = startUpstream(behaviour);
    router = await startRouter({ pricing: PRICING });
    ({ id: keyId } = await addKey(router, { provider: upstream.url }));
  });
  afterAll(async () => {
    await router.stop();
    upstream.stop();
  });

  test("its 401 says nothing of the key: the key stays in rotation, the client is told to get a new secret", async () => {
    const created = await router.fetch("/v1/realtime/client_secrets", { method: "POST", body: JSON.stringify({ session: { type: "realtime", model: MODEL } }) });
    const secret: string = (await created.json()).value;
    behaviour.refuse = 401;
    const client = connect(router, router.url, secret);
    await waitFor(() => client.closed, 5000, "close");
    expect(client.closed!.code).toBe(1008);
    expect(client.events.map((e) => [e.type, e.error?.type, e.error?.code])).toEqual([["error", "invalid_request_error", "client_secret_refused"]]);
    const key = router.deps.pool.get(keyId)!;
    expect({ sleeping: key.sleeping, failures: key.failures }).toEqual({ sleeping: false, failures: 0 });
    // The owner's own sessions still go to the key.
    behaviour.refuse = undefined;
    const other = connect(router);
    await eventOf(other, "session.created");
    other.ws.close(1000);
    await waitFor(() => other.closed);
  }, 15_000);
});

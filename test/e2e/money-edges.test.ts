import { describe, expect, test } from "bun:test";
import type { ServerWebSocket } from "bun";
import { testCertificates } from "../helpers/tls.ts";
import { addKey, availableCredit, usageRows } from "../helpers/keys.ts";
import { createAccount } from "../helpers/owner-ops.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";
import { chatCompletion } from "../helpers/mock-upstream.ts";

/**
 * Money at the edges of a model call that a review checked and found to hold: a client
 * that leaves while its socket is backed up, and realtime responses whose ends arrive
 * together. The review's findings went to the suites of what they fixed (reservation
 * bounds, usage estimates, realtime).
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8, ContextWindow: 8000, MaxOutput: 2000 } } };
const GRANT = 10; // credits

const scope = perTest();
const encoder = new TextEncoder();

const rowsOf = async (router: TestRouter, accountId: number) => (await usageRows(router)).filter((r) => r.account_id === accountId);

// ---- realtime ----------------------------------------------------------------------

/** A WSS realtime upstream: each `response.create` gets response.created, then response.done with `usage`. */
function realtimeUpstream(usage: Record<string, unknown>, responsesPerCreate = 1) {
  const certs = testCertificates();
  const send = (ws: ServerWebSocket<Record<string, never>>, event: unknown) => ws.send(JSON.stringify(event));
  let n = 0;
  const server = Bun.serve<Record<string, never>>({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: certs.certPem, key: certs.keyPem },
    idleTimeout: 0,
    fetch(request, srv) {
      if (request.headers.get("upgrade")?.toLowerCase() === "websocket") return srv.upgrade(request, { data: {} }) ? undefined : new Response("no", { status: 400 });
      // Ordinary chat calls of the same key.
      return chatCompletion("acme-chat");
    },
    websocket: {
      open(ws) {
        send(ws, { type: "session.created", event_id: "ev_0", session: {} });
      },
      message(ws, message) {
        const event = JSON.parse(String(message));
        if (event.type !== "response.create") return;
        // Several responses at once (out-of-band responses run side by side), each created, then each done.
        const ids = Array.from({ length: responsesPerCreate }, () => `resp_${++n}`);
        for (const id of ids) send(ws, { type: "response.created", response: { id, status: "in_progress" } });
        for (const id of ids) send(ws, { type: "response.done", response: { id, status: "completed", usage } });
      },
    },
  });
  scope.later(() => server.stop(true));
  return `https://127.0.0.1:${server.port}`;
}

interface RtClient {
  ws: WebSocket;
  events: any[];
  closed?: { code: number; reason: string };
}

function rtConnect(router: TestRouter, key: string, model: string): RtClient {
  const ws = new WebSocket(`${router.url.replace(/^http/, "ws")}/v1/realtime?model=${model}`, { headers: { authorization: `Bearer ${key}` } } as unknown as string[]);
  const client: RtClient = { ws, events: [] };
  ws.onmessage = (event) => client.events.push(JSON.parse(String(event.data)));
  ws.onclose = (event) => (client.closed = { code: event.code, reason: event.reason });
  scope.later(() => ws.close());
  return client;
}

describe("client abort while the socket is backed up", () => {
  // a write pending on a backed-up socket is settled when the client leaves, so the relay
  // loop drains the upstream and the call is recorded and its reservation released.
  test("a client that stops reading a large stream, then leaves: the call still ends, is recorded, and releases its reservation", async () => {
    const upstream = scope.upstream();
    const router = await scope.router({ pricing: PRICING, config: { drainTimeoutMs: 500 } });
    await addKey(router, { provider: upstream.url });
    const chunk = (content: string) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "acme-chat", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
    const big = chunk("y".repeat(16_000));
    let upstreamDone = false;
    upstream.route("POST", "/v1/chat/completions", () => {
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          try {
            controller.enqueue(encoder.encode(chunk("first")));
            for (let i = 0; i < 1500; i++) {
              controller.enqueue(encoder.encode(big));
              if (i % 50 === 0) await Bun.sleep(1);
            }
            controller.enqueue(encoder.encode(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "acme-chat", choices: [], usage: { prompt_tokens: 10, completion_tokens: 1000, total_tokens: 1010 } })}\n\n`));
            controller.enqueue(encoder.encode("data: [DONE]\n\n"));
            controller.close();
            upstreamDone = true;
          } catch {
            // cut by the router
          }
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream" } });
    });
    const account = await createAccount(router, { CreditGranted: GRANT });
    const client = new AbortController();
    const res = await router.fetch("/v1/chat/completions", {
      method: "POST",
      key: account.key,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "acme-chat", max_tokens: 1000, stream: true, messages: [{ role: "user", content: "hi" }] }),
      signal: client.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    // Stop reading: the router's writes to this socket back up.
    await Bun.sleep(1000);
    client.abort();
    await reader.read().catch(() => {});
    const rows = await waitFor(async () => {
      const mine = await rowsOf(router, account.id);
      return mine.length === 1 ? mine : undefined;
    }, 5000, "the call's usage row").catch(() => undefined);
    expect({ recorded: rows?.length ?? 0, held: GRANT * 1e9 - (await availableCredit(router, account.id)) - (rows?.[0]?.cost_nanos ?? 0), upstreamDone }).toMatchObject({ recorded: 1, held: 0 });
  });
});

describe("realtime: every response.done is charged", () => {
  // the readmission after a response.done completes before the next frame is handled
  // (in-memory State), so a second response.done arriving back to back still finds an admission to settle.
  test("two responses running side by side: both response.done events become usage rows", async () => {
    const router = await scope.router({ pricing: PRICING });
    const upstreamUrl = realtimeUpstream({ input_tokens: 1000, output_tokens: 500, total_tokens: 1500 }, 2);
    await addKey(router, { provider: `${upstreamUrl}/v1` });
    const account = await createAccount(router, { CreditGranted: GRANT });
    const client = rtConnect(router, account.key, "acme-rt");
    await waitFor(() => client.events.find((e) => e.type === "session.created"), 5000, "session.created");
    client.ws.send(JSON.stringify({ type: "response.create" }));
    await waitFor(() => client.events.filter((e) => e.type === "response.done").length === 2, 5000, "two response.done");
    await Bun.sleep(200);
    client.ws.close(1000);
    await waitFor(() => client.closed, 5000, "close");
    await Bun.sleep(100);
    const rows = await rowsOf(router, account.id);
    expect(rows.map((r) => r.cost_nanos)).toEqual([6_000_000, 6_000_000]);
    expect(await availableCredit(router, account.id)).toBe(GRANT * 1e9 - 12_000_000);
  });
});

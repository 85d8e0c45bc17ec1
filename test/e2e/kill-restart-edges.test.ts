import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, serveBinary, type ServingBinary } from "../helpers/binary.ts";
import { chatCompletion, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { tempDir, waitFor } from "../helpers/router.ts";

/**
 * Faults, kills and restarts of the compiled executable on its embedded SQLite file:
 * "never lose a billable call on abort, restart or failover". Each router is
 * `dist/router serve` in a process of its own, driven over HTTP and signalled; what it
 * wrote is read back over HTTP after a restart, and from the files at rest once it ended.
 */

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
/** (10 × 2 + 10 × 8) × 1000 nano-credits per call (Rates 1). */
const CALL_COST = (10 * 2 + 10 * 8) * 1000;
const GRANTED = 1000;

const { dir, bin } = isolatedBinary();
const running: ServingBinary[] = [];
let upstream: MockUpstream;

beforeAll(() => {
  upstream = startMockUpstream();
  // acme-slow: a JSON answer after 300 ms; a stream: six chunks 100 ms apart, the counts last.
  upstream.route("POST", "/v1/chat/completions", async (req) => {
    const model = req.json.model as string;
    const delay = model === "acme-slow" ? 300 : model === "acme-late" ? 2000 : 0;
    if (req.json.stream === true) {
      const gap = model === "acme-long" ? 400 : 100;
      const chunk = (content: string) => ({ id: "s", object: "chat.completion.chunk", created: 1, model, choices: [{ index: 0, delta: { content }, finish_reason: null }] });
      return sse(
        [chunk("one "), chunk("two "), chunk("three "), chunk("four "), chunk("five"), { id: "s", object: "chat.completion.chunk", created: 1, model, choices: [], usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 } }],
        { delayMs: gap, done: true },
      );
    }
    if (delay > 0) await Bun.sleep(delay);
    return chatCompletion(model, { prompt: 10, completion: 10 });
  });
});

afterAll(async () => {
  for (const server of running) server.kill("SIGKILL");
  await upstream?.stop();
});

interface Booted {
  server: ServingBinary;
  data: string;
  owner: string;
  call(path: string, init?: { method?: string; body?: unknown; key?: string }): Promise<Response>;
}

/** `router serve` on `data` (fresh when omitted), with its owner key. */
async function boot(data = tempDir("router-kill-"), args: string[] = []): Promise<Booted> {
  const server = await serveBinary(bin, ["--port", "0", "--data", data, "--timezone", "UTC", ...args], { cwd: dir });
  running.push(server);
  const owner = readFileSync(join(data, "initial-owner-key"), "utf8").trim();
  return {
    server,
    data,
    owner,
    call: (path, init = {}) =>
      fetch(`${server.url}${path}`, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers: { authorization: `Bearer ${init.key ?? owner}`, "content-type": "application/json" },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      }),
  };
}

/** A priced deployment with one provider key on the mock upstream and one funded account: its key. */
async function provision(router: Booted, credit = GRANTED): Promise<{ id: number; key: string }> {
  expect((await router.call("/x-config", { method: "PUT", body: { PRICING } })).status).toBe(200);
  expect((await router.call("/x-keys", { body: { Provider: `${upstream.url}/v1`, SecretKey: "sk-kill-0123456789abcdef", Level: 1, Status: true } })).status).toBe(201);
  const created = await router.call("/x-users", { body: { Email: `kill-${Math.random().toString(36).slice(2, 8)}@example.com`, CreditGranted: credit } });
  expect(created.status).toBe(201);
  const body = (await created.json()) as { ID: number; APIKey: string };
  return { id: body.ID, key: body.APIKey };
}

const chatBody = (model: string, stream = false) => ({ model, max_tokens: 20, stream, messages: [{ role: "user", content: "hi" }] });

/** A chat call read to its end: its status, request id and body text (a cut stream's text as far as it came). */
async function chat(router: Booted, key: string, model: string, stream = false): Promise<{ status: number; id: string; text: string; cut: boolean }> {
  const res = await router.call("/v1/chat/completions", { key, body: chatBody(model, stream) }).catch(() => undefined);
  // Cut before its answer's headers: no status, no id.
  if (res === undefined) return { status: 0, id: "", text: "", cut: true };
  let text = "";
  let cut = false;
  try {
    text = await res.text();
  } catch {
    cut = true;
  }
  return { status: res.status, id: res.headers.get("x-request-id") ?? "", text, cut };
}

/** The account's balance in nano-credits as the router reports it. */
async function balanceOf(router: Booted, key: string): Promise<number> {
  const status = (await (await router.call("/dashboard/status", { key })).json()) as { balance: number };
  return Math.round(status.balance * 1e9);
}

/** Usage rows of the embedded file at rest (the router stopped), by request id. */
function usageRows(data: string, accountId: number): Array<{ request_id: string; status: number; cost_nanos: number; completion_tokens: number }> {
  const db = new Database(join(data, "router.db"), { readonly: true });
  try {
    return db.query("SELECT request_id, status, cost_nanos, completion_tokens FROM usage_events WHERE account_id = ?").all(accountId) as never;
  } finally {
    db.close();
  }
}

describe("SIGTERM with calls in flight (embedded SQLite)", () => {
  test("calls and streams in flight finish; each has one usage row, its charge and its log record after a restart; no hold survives", async () => {
    const first = await boot(undefined, ["--grace", "10"]);
    const account = await provision(first);
    const before = upstream.requests.length;
    const calls = [
      ...Array.from({ length: 6 }, () => chat(first, account.key, "acme-slow")),
      ...Array.from({ length: 4 }, () => chat(first, account.key, "acme-chat", true)),
    ];
    await waitFor(() => upstream.requests.length - before >= calls.length, 5000, "every call to reach the upstream");
    first.server.kill("SIGTERM");
    const results = await Promise.all(calls);
    expect(await first.server.exited).toBe(0);
    for (const result of results) {
      expect(result.status).toBe(200);
      expect(result.cut).toBe(false);
    }
    for (const stream of results.slice(6)) expect(stream.text).toContain("data: [DONE]");

    const rows = usageRows(first.data, account.id);
    expect(rows.map((row) => row.request_id).sort()).toEqual(results.map((result) => result.id).sort());
    expect(rows.every((row) => row.status === 200 && row.cost_nanos === CALL_COST)).toBe(true);

    const again = await boot(first.data);
    expect(await balanceOf(again, account.key)).toBe(GRANTED * 1e9 - results.length * CALL_COST);
    for (const result of results) {
      const logged = await again.call(`/x-requests/${result.id}`);
      expect(logged.status).toBe(200);
      expect(((await logged.json()) as { status: number }).status).toBe(200);
    }
    again.server.kill("SIGTERM");
    expect(await again.server.exited).toBe(0);
  }, 30_000);

  test("a JSON call still waiting for its upstream when the grace period ends is read on and charged once (499), and logged", async () => {
    const first = await boot(undefined, ["--grace", "1"]);
    const account = await provision(first);
    const before = upstream.requests.length;
    // The upstream answers after 2 s: past a grace of 1 s, and no stream keeps the stop waiting.
    const call = chat(first, account.key, "acme-late");
    await waitFor(() => upstream.requests.length > before, 5000, "the call to reach the upstream");
    first.server.kill("SIGTERM");
    expect((await call).cut).toBe(true);
    expect(await first.server.exited).toBe(0);
    // The upstream answered (and billed the deployment): the call is metered as one whose client left.
    const rows = usageRows(first.data, account.id);
    expect(rows).toEqual([expect.objectContaining({ status: 499, cost_nanos: CALL_COST })]);
    const again = await boot(first.data);
    expect(await balanceOf(again, account.key)).toBe(GRANTED * 1e9 - CALL_COST);
    const logged = await again.call(`/x-requests/${rows[0]!.request_id}`);
    expect(logged.status).toBe(200);
    expect(((await logged.json()) as { status: number }).status).toBe(499);
    again.server.kill("SIGTERM");
    expect(await again.server.exited).toBe(0);
  }, 30_000);

  test("a stream still running when the grace period ends loses its client; its upstream is read on and it is charged once", async () => {
    const first = await boot(undefined, ["--grace", "1"]);
    const account = await provision(first);
    const before = upstream.requests.length;
    // Six chunks 400 ms apart: 2.4 s, past a grace of 1 s.
    const call = chat(first, account.key, "acme-long", true);
    await waitFor(() => upstream.requests.length > before, 5000, "the stream to reach the upstream");
    first.server.kill("SIGTERM");
    const result = await call;
    expect(result.status).toBe(200);
    expect(result.text).not.toContain("[DONE]");
    expect(await first.server.exited).toBe(0);
    expect(usageRows(first.data, account.id)).toEqual([expect.objectContaining({ request_id: result.id, status: 499, cost_nanos: CALL_COST, completion_tokens: 10 })]);
  }, 30_000);
});

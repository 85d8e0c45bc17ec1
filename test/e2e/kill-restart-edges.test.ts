import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync } from "node:fs";
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

/** `count` chat calls made one after another, each once the one before it was answered. */
async function inTurn(router: Booted, key: string, count: number): Promise<Array<Awaited<ReturnType<typeof chat>>>> {
  const results = [];
  for (let i = 0; i < count; i++) results.push(await chat(router, key, "acme-chat"));
  return results;
}

/** What `work` resolves with, waited for as a condition (at most `timeoutMs`). */
async function within<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  const done = work.then((value) => ({ value }));
  return (await waitFor(() => Promise.race([done, Bun.sleep(100).then(() => undefined)]), timeoutMs, what))!.value;
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

describe("SIGKILL on the embedded SQLite file", () => {
  test("killed while another process holds the database's write lock: the rows kept on disk are written once at the next start, past a torn last line; nothing is charged twice", async () => {
    const first = await boot();
    const account = await provision(first);
    expect((await chat(first, account.key, "acme-chat")).status).toBe(200);
    await waitFor(async () => (await balanceOf(first, account.key)) === GRANTED * 1e9 - CALL_COST, 5000, "the first call to be charged");
    const spool = join(first.data, "usage-spool.jsonl");
    // Another process (a tool, a backup) holds the write lock: calls are served, their rows wait.
    const locker = new Database(join(first.data, "router.db"));
    locker.run("BEGIN IMMEDIATE");
    const served: string[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const result = await chat(first, account.key, "acme-chat");
        expect(result.status).toBe(200);
        served.push(result.id);
      }
      // Their write waits for the lock (busy_timeout, 5 s) and fails; the rows are kept on disk.
      await waitFor(() => first.server.stderr().includes("usage rows could not be written"), 15_000, "the write to fail");
      // Written again on every tick while the lock is held, on the upkeep thread: calls are
      // still served meanwhile. (Retried as writes checked on the serving thread, each waited
      // there for the lock, and no call was answered while the lock was held.)
      const answered = await within(inTurn(first, account.key, 10), 20_000, "calls to be answered while the lock is held");
      for (const result of answered) expect(result.status).toBe(200);
      served.push(...answered.map((result) => result.id));
      await waitFor(() => served.every((id) => readFileSync(spool, "utf8").includes(id)), 15_000, "the rows to be kept on disk");
      first.server.kill("SIGKILL");
      await first.server.exited;
    } finally {
      locker.run("ROLLBACK");
      locker.close();
    }
    // A crash while a row was being kept leaves its line cut short.
    appendFileSync(spool, '{"requestId":"req_torn","accountId":');
    const again = await boot(first.data);
    await waitFor(async () => (await balanceOf(again, account.key)) === GRANTED * 1e9 - (1 + served.length) * CALL_COST, 5000, "the kept rows to be charged");
    // (The log is written as it comes: the rows may be charged before its line is out.)
    await waitFor(() => (again.server.stderr() + again.server.stdout()).includes("could not be read and is skipped"), 5000, "the torn line to be reported");
    again.server.kill("SIGTERM");
    expect(await again.server.exited).toBe(0);
    const rows = usageRows(first.data, account.id);
    expect(rows).toHaveLength(1 + served.length);
    for (const id of served) expect(rows.filter((row) => row.request_id === id)).toHaveLength(1);
    expect(readFileSync(spool, "utf8")).toBe("");
    // A third start finds nothing left to write: nothing is charged twice.
    const third = await boot(first.data);
    expect(await balanceOf(third, account.key)).toBe(GRANTED * 1e9 - (1 + served.length) * CALL_COST);
    third.server.kill("SIGTERM");
    expect(await third.server.exited).toBe(0);
  }, 40_000);

  test("killed again and again under load: every row stored is charged once, none twice, and the ledger matches the rows", async () => {
    let router = await boot();
    const account = await provision(router);
    const answered = new Set<string>();
    /** Calls answered well before a kill (a second or more): past the crash window, their rows are stored. */
    const longBefore: string[] = [];
    /** When each answered call's answer came. */
    const answeredAt = new Map<string, number>();
    /** Calls whose answer began (a kill may cut one after its row was settled). */
    const begun = new Set<string>();
    /** Calls cut before their answer's headers reached the client (their id unknown here; their row may be stored). */
    let unknown = 0;
    for (let kill = 0; kill < 3; kill++) {
      let stop = false;
      const current = router;
      const loop = async () => {
        while (!stop) {
          const result = await chat(current, account.key, "acme-chat");
          if (result.id !== "") begun.add(result.id);
          else unknown++;
          if (result.status === 200 && !result.cut) {
            answered.add(result.id);
            answeredAt.set(result.id, performance.now());
          }
          if (result.status === 0) return;
        }
      };
      const loops = Array.from({ length: 8 }, loop);
      const before = answered.size;
      const phaseStart = performance.now();
      await waitFor(() => answered.size - before >= 200 && performance.now() - phaseStart > 1500, 10_000, "calls to be answered");
      const killAt = performance.now();
      for (const [id, at] of answeredAt) if (at < killAt - 1000) longBefore.push(id);
      current.server.kill("SIGKILL");
      stop = true;
      await Promise.all(loops);
      // Answers that came while the loops stopped came from the killed router (in its crash window).
      answeredAt.clear();
      await current.server.exited;
      router = await boot(current.data);
    }
    // Settled rows of the last moments before each kill are lost (the crash window); the
    // others are stored once each, and the ledger charged exactly what is stored.
    const balance = await balanceOf(router, account.key);
    router.server.kill("SIGTERM");
    expect(await router.server.exited).toBe(0);
    const rows = usageRows(router.data, account.id);
    expect(new Set(rows.map((row) => row.request_id)).size).toBe(rows.length);
    expect(rows.filter((row) => !begun.has(row.request_id)).length).toBeLessThanOrEqual(unknown);
    // The crash window is the last moments before a kill: a call answered a second before it is stored.
    const stored = new Set(rows.map((row) => row.request_id));
    expect(longBefore.length).toBeGreaterThan(0);
    expect(longBefore.filter((id) => !stored.has(id))).toEqual([]);
    expect(balance).toBe(GRANTED * 1e9 - rows.reduce((sum, row) => sum + row.cost_nanos, 0));
  }, 40_000);

  test("a torn last line left by a crash does not swallow the row kept after it at the next start", async () => {
    const first = await boot();
    const account = await provision(first);
    expect((await chat(first, account.key, "acme-chat")).status).toBe(200);
    first.server.kill("SIGTERM");
    expect(await first.server.exited).toBe(0);
    // The run before died while it appended a row: its line is cut short.
    const spool = join(first.data, "usage-spool.jsonl");
    appendFileSync(spool, '{"requestId":"req_torn","accountId":');
    // Started while another process holds the write lock: the rows it serves are kept on disk, after that line.
    const locker = new Database(join(first.data, "router.db"));
    locker.run("BEGIN IMMEDIATE");
    const served: string[] = [];
    try {
      const second = await boot(first.data);
      for (let i = 0; i < 2; i++) {
        const result = await chat(second, account.key, "acme-chat");
        expect(result.status).toBe(200);
        served.push(result.id);
      }
      await waitFor(() => served.every((id) => readFileSync(spool, "utf8").includes(id)), 15_000, "the rows to be kept on disk");
      second.server.kill("SIGKILL");
      await second.server.exited;
    } finally {
      locker.run("ROLLBACK");
      locker.close();
    }
    const third = await boot(first.data);
    await waitFor(() => readFileSync(spool, "utf8") === "", 5000, "the kept rows to be written");
    // Both rows kept after the torn line are charged. (Appended to it, the first was read back as part of one unreadable line.)
    expect(await balanceOf(third, account.key)).toBe(GRANTED * 1e9 - (1 + served.length) * CALL_COST);
    third.server.kill("SIGTERM");
    expect(await third.server.exited).toBe(0);
    const rows = usageRows(first.data, account.id);
    for (const id of served) expect(rows.filter((row) => row.request_id === id)).toHaveLength(1);
  }, 40_000);
});

describe("the embedded database locked by another process", () => {
  test("a write that meets the lock past its busy timeout fails alone; calls are served meanwhile; once the lock goes, writes and usage rows go on", async () => {
    const router = await boot();
    const account = await provision(router);
    // Locked before this run wrote any usage row: its first write also prunes old claim notes, on the serving thread.
    const locker = new Database(join(router.data, "router.db"));
    locker.run("BEGIN IMMEDIATE");
    let refused: Response;
    const served: string[] = [];
    try {
      // A management write waits for the lock (busy_timeout, 5 s) and is refused: 503, worth a retry.
      refused = await router.call("/x-users", { body: { Email: "locked@example.com", CreditGranted: 1 } });
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("database_busy");
      // Calls one after another are served while the lock is held. (Each usage write retried
      // on the serving thread, the prune with it, waited there for the lock: 5 s a tick.)
      const answered = await within(inTurn(router, account.key, 10), 20_000, "calls to be answered while the lock is held");
      for (const result of answered) expect(result.status).toBe(200);
      served.push(...answered.map((result) => result.id));
    } finally {
      locker.run("ROLLBACK");
      locker.close();
    }
    // The lock is gone: a write succeeds (a BEGIN refused for the lock left every store call
    // after it waiting for good), and the rows that waited are written and charged.
    const created = await within(router.call("/x-users", { body: { Email: "after@example.com", CreditGranted: 1 } }), 10_000, "a management write after the lock went");
    expect(created.status).toBe(201);
    await waitFor(async () => (await balanceOf(router, account.key)) === GRANTED * 1e9 - served.length * CALL_COST, 10_000, "the rows that waited to be charged");
    await waitFor(() => readFileSync(join(router.data, "usage-spool.jsonl"), "utf8") === "", 5000, "the spool to be emptied");
    router.server.kill("SIGTERM");
    expect(await router.server.exited).toBe(0);
    const rows = usageRows(router.data, account.id);
    expect(rows).toHaveLength(served.length);
    for (const id of served) expect(rows.filter((row) => row.request_id === id)).toHaveLength(1);
  }, 40_000);
});

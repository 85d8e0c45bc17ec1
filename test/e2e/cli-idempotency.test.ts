import { afterAll, beforeAll, expect, test } from "bun:test";
import { createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { runRouterCommand } from "../helpers/router-command.ts";

/**
 * The admin CLI's writes carry an Idempotency-Key: a write whose answer is lost is sent
 * again under the same key and runs once, and `--idempotency-key` makes a re-run of the
 * same command a replay (docs/api.md, "Idempotent writes").
 */

let router: TestRouter;
/** Forwards to the router; while `drops` > 0 it lets a write through and then loses its answer. */
let proxy: ReturnType<typeof Bun.serve>;
let drops = 0;
const keysSeen: string[] = [];

beforeAll(async () => {
  router = await startRouter();
  proxy = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request, server) {
      const url = new URL(request.url);
      const forwarded = await fetch(router.url + url.pathname + url.search, { method: request.method, headers: request.headers, body: request.method === "GET" ? undefined : await request.arrayBuffer() });
      const body = await forwarded.arrayBuffer();
      if (request.method !== "GET") keysSeen.push(request.headers.get("idempotency-key") ?? "");
      if (request.method !== "GET" && drops > 0) {
        drops--;
        // The write happened; the client never hears of it: the connection idles out mid-answer.
        server.timeout(request, 1);
        return new Response(new ReadableStream({ start: () => {} }), { status: 200 });
      }
      return new Response(body, { status: forwarded.status, headers: forwarded.headers });
    },
  });
});
afterAll(async () => {
  proxy.stop(true);
  await router.stop();
});

const cli = (args: string[]) => runRouterCommand(args, { env: { ROUTER_URL: `http://127.0.0.1:${proxy.port}`, ROUTER_KEY: router.ownerKey } });

const balanceOf = async (id: number) => {
  const res = await router.fetch(`/x-dna/${id}`);
  return ((await res.json()) as { Balance: number }).Balance;
};

test("a credit grant whose answer is lost is sent again under its key: granted once, and the command succeeds", async () => {
  const account = await createAccount(router);
  drops = 1;
  keysSeen.length = 0;
  const run = await cli(["accounts", "credit", String(account.id), "--amount", "7"]);
  expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: "" });
  expect(run.stdout).toContain("balance now 7");
  expect(await balanceOf(account.id)).toBe(7);
  // Two sends of one write, under one key.
  expect(keysSeen).toHaveLength(2);
  expect(keysSeen[0]).toBe(keysSeen[1]!);
  expect(keysSeen[0]).toMatch(/^[0-9a-f]{32}$/);
});

test("--idempotency-key: running the same command again is a replay, not a second grant", async () => {
  const account = await createAccount(router);
  for (let i = 0; i < 2; i++) {
    const run = await cli(["accounts", "credit", String(account.id), "--amount", "3", "--idempotency-key", `pay_${account.id}`]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain("balance now 3");
  }
  expect(await balanceOf(account.id)).toBe(3);
  const bad = await cli(["accounts", "credit", String(account.id), "--amount", "3", "--idempotency-key", "has space"]);
  expect(bad.exitCode).toBe(2);
  expect(bad.stderr).toContain("--idempotency-key");
});

test("a lost answer that held a new API key: the retry says it was carried out and not kept; one account exists", async () => {
  drops = 1;
  const run = await cli(["accounts", "create", "--email", "lost-answer@example.com"]);
  expect(run.exitCode).toBe(1);
  expect(run.stderr).toContain("shown only once");
  const list = (await (await router.fetch("/x-dna?email=lost-answer%40example.com")).json()) as unknown[];
  expect(list).toHaveLength(1);
});

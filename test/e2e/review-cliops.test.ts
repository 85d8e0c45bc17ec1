import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { runBinary } from "../helpers/binary-command.ts";
import type { CommandResult } from "../helpers/router-command.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { testCertificates } from "../helpers/tls.ts";

// The operator's experience of the built executable's admin commands: what a script
// can rely on (exit codes, stdout for data and stderr for messages, paging), and how
// a command ends when the server does not answer. Each call is a real `dist/router …`
// process against an in-process router (the build comes first: `bun scripts/build.ts`).

let router: TestRouter;

beforeAll(async () => {
  router = await startRouter();
});
afterAll(async () => {
  await router.stop();
});

/** `dist/router <args>` against the router of this file; whatever the command, the caller's key is never printed. */
async function routerBinary(args: readonly string[], env: Record<string, string> = {}): Promise<CommandResult> {
  const result = await runBinary(args, { ROUTER_URL: router.url, ROUTER_KEY: router.ownerKey, ...env });
  expect(result.stdout + result.stderr).not.toContain(router.ownerKey);
  return result;
}

describe("router config get: a script tells an item that is set from one that is not", () => {
  test("an unset item exits 1 with the default it falls back to on stderr, nothing on stdout; --json prints null, exit 1", async () => {
    await api(router, "/x-config", { method: "DELETE", body: { keys: ["LEVEL_MAPPER", "EMAIL_PORT"] } });
    const unset = await routerBinary(["config", "get", "LEVEL_MAPPER"]);
    expect({ exitCode: unset.exitCode, stdout: unset.stdout }).toEqual({ exitCode: 1, stdout: "" });
    expect(unset.stderr).toBe("router: LEVEL_MAPPER is not set (default: every model is served by Level 1)\n");
    const port = await routerBinary(["config", "get", "EMAIL_PORT"]);
    expect(port.exitCode).toBe(1);
    expect(port.stderr).toContain("EMAIL_PORT is not set (default: 587)");
    const json = await routerBinary(["config", "get", "LEVEL_MAPPER", "--json"]);
    expect({ exitCode: json.exitCode, stdout: json.stdout, stderr: json.stderr }).toEqual({ exitCode: 1, stdout: "null\n", stderr: "" });

    // Set, the same commands succeed with the value alone.
    await api(router, "/x-config", { method: "PUT", body: { LEVEL_MAPPER: "gpt-*=2" } });
    expect(await routerBinary(["config", "get", "LEVEL_MAPPER"])).toEqual({ exitCode: 0, stdout: "gpt-*=2\n", stderr: "" });
    expect(await routerBinary(["config", "get", "LEVEL_MAPPER", "--json"])).toEqual({ exitCode: 0, stdout: '"gpt-*=2"\n', stderr: "" });
    // Set to no entries is set: "" is its value.
    await api(router, "/x-config", { method: "PUT", body: { LEVEL_MAPPER: "" } });
    expect((await routerBinary(["config", "get", "LEVEL_MAPPER", "--json"])).exitCode).toBe(0);
  });

  test("a misspelt item is a usage error naming the items, not an item 'not set'", async () => {
    const typo = await routerBinary(["config", "get", "LEVEL_MAPER"]);
    expect({ exitCode: typo.exitCode, stdout: typo.stdout }).toEqual({ exitCode: 2, stdout: "" });
    expect(typo.stderr).toStartWith('router: unknown configuration item "LEVEL_MAPER"; items: MODEL_MAPPER, LEVEL_MAPPER,');
    expect(typo.stderr.trim().split("\n")).toHaveLength(1);
  });
});

describe("a server that takes the connection and never answers: the command ends in --timeout, and says so", () => {
  let silent: Server;
  let stalling: ReturnType<typeof Bun.serve>;
  const held: Socket[] = [];
  let silentUrl: string;
  const stallingWrites: string[] = [];

  beforeAll(async () => {
    // Accepts every connection and reads the request, but never writes a byte back.
    silent = createServer((socket) => void held.push(socket.on("data", () => {})));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    // Answers with headers at once, then never sends the body (a proxy stuck mid-answer).
    stalling = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      idleTimeout: 0,
      fetch(request) {
        if (request.method !== "GET") stallingWrites.push(request.headers.get("idempotency-key") ?? "");
        return new Response(new ReadableStream({ start: () => {} }), { status: 200, headers: { "content-type": "application/json" } });
      },
    });
  });
  afterAll(() => {
    for (const socket of held) socket.destroy();
    silent.close();
    stalling.stop(true);
  });

  test("a read: exit 1 after --timeout seconds, one line naming the wait and how to lengthen it", async () => {
    const read = await routerBinary(["keys", "list", "--timeout", "1"], { ROUTER_URL: silentUrl });
    expect({ exitCode: read.exitCode, stdout: read.stdout }).toEqual({ exitCode: 1, stdout: "" });
    expect(read.stderr).toBe(`router: no answer from the router at ${silentUrl} within 1 s (wait longer with --timeout SECONDS or ROUTER_TIMEOUT)\n`);
    // ROUTER_TIMEOUT does the same for every command of a script.
    const fromEnv = await routerBinary(["usage", "live"], { ROUTER_URL: silentUrl, ROUTER_TIMEOUT: "1" });
    expect(fromEnv.exitCode).toBe(1);
    expect(fromEnv.stderr).toContain("within 1 s");
  });

  test("a write: exit 1, its outcome is unknown, and the key that makes a re-run run it at most once", async () => {
    stallingWrites.length = 0;
    const url = `http://127.0.0.1:${stalling.port}`;
    const write = await routerBinary(["accounts", "credit", "7", "--amount", "5", "--timeout", "1"], { ROUTER_URL: url });
    expect({ exitCode: write.exitCode, stdout: write.stdout }).toEqual({ exitCode: 1, stdout: "" });
    const lines = write.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toStartWith(`router: no answer from the router at ${url} within 1 s: the change may or may not have been made.`);
    // One send: the time is spent, so it is not sent again within the same command.
    expect(stallingWrites).toHaveLength(1);
    expect(lines[0]).toContain(`--idempotency-key ${stallingWrites[0]}`);
    // The key the operator gave is the one to repeat.
    const given = await routerBinary(["news", "send", "--title", "t", "--content", "c", "--timeout", "1", "--idempotency-key", "notice-42"], { ROUTER_URL: url });
    expect(given.exitCode).toBe(1);
    expect(given.stderr).toContain("may or may not have been made");
    expect(given.stderr).toContain("--idempotency-key notice-42");
  });

  test("a write refused at the TLS handshake (a certificate not trusted) was never sent: said so, with how to trust a private CA", async () => {
    const tls = testCertificates();
    const https = Bun.serve({ port: 0, hostname: "127.0.0.1", tls: { cert: tls.certPem, key: tls.keyPem }, fetch: () => Response.json({ ID: 1, Sleeping: false }) });
    try {
      const url = `https://127.0.0.1:${https.port}`;
      const untrusted = await routerBinary(["keys", "wake", "1"], { ROUTER_URL: url });
      expect({ exitCode: untrusted.exitCode, stdout: untrusted.stdout }).toEqual({ exitCode: 1, stdout: "" });
      expect(untrusted.stderr).toStartWith(`router: cannot reach the router at ${url}: UNABLE_TO_VERIFY_LEAF_SIGNATURE`);
      expect(untrusted.stderr).not.toContain("may or may not");
      expect(untrusted.stderr).toContain("NODE_EXTRA_CA_CERTS");
      // The hint works: with the CA trusted the same command succeeds.
      const trusted = await routerBinary(["keys", "wake", "1"], { ROUTER_URL: url, NODE_EXTRA_CA_CERTS: tls.caFile });
      expect([trusted.exitCode, trusted.stdout]).toEqual([0, "provider key 1 is awake\n"]);
    } finally {
      https.stop(true);
    }
  });

  test("a write the router never got (connection refused) is not called unknown; a bad --timeout is a usage error", async () => {
    const refused = await routerBinary(["keys", "wake", "1", "--timeout", "5"], { ROUTER_URL: "http://127.0.0.1:1" });
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain("cannot reach the router at http://127.0.0.1:1");
    expect(refused.stderr).not.toContain("may or may not");
    for (const bad of ["0", "soon", "-1"]) {
      const usage = await routerBinary(["keys", "list", `--timeout=${bad}`]);
      expect({ exitCode: usage.exitCode, stdout: usage.stdout }).toEqual({ exitCode: 2, stdout: "" });
      expect(usage.stderr).toContain("--timeout must be");
    }
    const env = await routerBinary(["keys", "list"], { ROUTER_TIMEOUT: "soon" });
    expect(env.exitCode).toBe(2);
    expect(env.stderr).toContain("ROUTER_TIMEOUT must be");
    expect((await routerBinary(["keys", "list", "--help"])).stdout).toContain("--timeout=<s>");
  });
});

describe("list commands: --json --page-info gives a script what it needs to page", () => {
  test("accounts, keys, news and requests: {page, size, total, pages, items}; --json alone stays the array", async () => {
    for (let i = 0; i < 3; i++) await createAccount(router);
    for (let i = 0; i < 3; i++) await api(router, "/x-news", { method: "POST", body: { title: `notice ${i}`, content: "c" } });
    const accounts = (await (await router.fetch("/x-users?size=100")).json()) as Array<{ ID: number }>;
    const total = accounts.length;
    const paged = await routerBinary(["accounts", "list", "--size", "2", "--page", "2", "--json", "--page-info"]);
    expect({ exitCode: paged.exitCode, stderr: paged.stderr }).toEqual({ exitCode: 0, stderr: "" });
    const body = JSON.parse(paged.stdout);
    expect(Object.keys(body)).toEqual(["page", "size", "total", "pages", "items"]);
    expect(body).toMatchObject({ page: 2, size: 2, total, pages: Math.ceil(total / 2) });
    expect(body.items.map((a: { ID: number }) => a.ID)).toEqual(accounts.slice(2, 4).map((a) => a.ID));
    // Unchanged for the scripts that read --json as an array.
    expect(Array.isArray(JSON.parse((await routerBinary(["accounts", "list", "--size", "2", "--json"])).stdout))).toBe(true);

    const news = JSON.parse((await routerBinary(["news", "list", "--size", "1", "--json", "--page-info"])).stdout);
    expect(news).toMatchObject({ page: 1, size: 1, total: 3, pages: 3 });
    expect(news.items).toHaveLength(1);
    const keys = JSON.parse((await routerBinary(["keys", "list", "--json", "--page-info"])).stdout);
    expect(keys).toEqual({ page: 1, size: 20, total: 0, pages: 0, items: [] });
    const requests = JSON.parse((await routerBinary(["requests", "--json", "--page-info"])).stdout);
    expect(requests).toMatchObject({ page: 1, size: 20, items: [] });

    // Only with --json, and not with --follow: both are usage errors naming the flag.
    const alone = await routerBinary(["news", "list", "--page-info"]);
    expect({ exitCode: alone.exitCode, stdout: alone.stdout }).toEqual({ exitCode: 2, stdout: "" });
    expect(alone.stderr).toContain("--page-info goes with --json");
    const follow = await routerBinary(["requests", "--follow", "--json", "--page-info"]);
    expect(follow.exitCode).toBe(2);
    expect(follow.stderr).toContain("--page-info");
    // A page larger than any list gives is the command line's mistake, as --help says (at most 100).
    for (const command of [["keys", "list"], ["accounts", "list"], ["news", "list"], ["requests"], ["logs"]]) {
      const big = await routerBinary([...command, "--size", "101"]);
      expect([big.exitCode, big.stdout, big.stderr]).toEqual([2, "", 'router: --size must be at most 100, got "101"\n']);
    }
  });
});

describe("what the CLI says about a server that is not the router never holds the key", () => {
  test("an answer that echoes the Authorization header is shown without the key; a redirect names where to point --url", async () => {
    const echo = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(request) {
        if (new URL(request.url).pathname === "/x-keys") return new Response(`denied: ${request.headers.get("authorization")}`, { status: 403 });
        return new Response(null, { status: 301, headers: { location: "https://router.example.com/x-news?page=1" } });
      },
    });
    try {
      const url = `http://127.0.0.1:${echo.port}`;
      // routerBinary fails the test if the key is anywhere in what the command printed.
      const denied = await routerBinary(["keys", "list"], { ROUTER_URL: url });
      expect(denied.exitCode).toBe(1);
      expect(denied.stderr).toContain("denied: Bearer ");
      const moved = await routerBinary(["news", "list"], { ROUTER_URL: url });
      expect(moved.exitCode).toBe(1);
      expect(moved.stderr).toBe(`router: ${url} redirects to https://router.example.com: give that as --url (or ROUTER_URL); the key is not sent on a redirect (HTTP 301)\n`);
    } finally {
      echo.stop(true);
    }
  });

  test("a key put in ROUTER_URL by mistake (the two variables swapped) is not printed back", async () => {
    const swapped = await routerBinary(["keys", "list"], { ROUTER_URL: router.ownerKey, ROUTER_KEY: router.url });
    expect(swapped.exitCode).toBe(2);
    expect(swapped.stderr).toContain("ROUTER_URL is not a URL");
  });
});

describe("accounts credit --ids: exit 0 only when every account got the credit", () => {
  test("a batch with a skipped account exits 1 with the count on stderr, the table or JSON still on stdout; --dry-run the same, as git apply --check", async () => {
    const account = await createAccount(router);
    const mixed = await routerBinary(["accounts", "credit", "--ids", `${account.id},99999`, "--amount", "1"]);
    expect(mixed.exitCode).toBe(1);
    expect(mixed.stdout).toContain("1 applied, 1 skipped");
    expect(mixed.stderr).toBe("router: 1 of 2 accounts skipped (see REASON): they got no credit\n");
    const json = await routerBinary(["accounts", "credit", "--ids", "99999", "--amount", "1", "--json"]);
    expect(json.exitCode).toBe(1);
    expect(JSON.parse(json.stdout).summary).toMatchObject({ applied: 0, skipped: 1 });
    const dry = await routerBinary(["accounts", "credit", "--ids", `${account.id},99999`, "--amount", "1", "--dry-run"]);
    expect(dry.exitCode).toBe(1);
    expect(dry.stderr).toBe("router: 1 of 2 accounts would be skipped (see REASON)\n");
    // All applied: exit 0, nothing on stderr.
    expect(await routerBinary(["accounts", "credit", "--ids", String(account.id), "--amount", "1", "--dry-run"])).toMatchObject({ exitCode: 0, stderr: "" });
    expect(await routerBinary(["accounts", "credit", "--ids", String(account.id), "--amount", "1"])).toMatchObject({ exitCode: 0, stderr: "" });
    expect(((await (await router.fetch(`/x-dna/${account.id}`)).json()) as { Balance: number }).Balance).toBe(2);
    // --help shows ACCOUNT as optional: --ids takes its place.
    const help = (await routerBinary(["accounts", "credit", "--help"])).stdout;
    expect(help).toContain("USAGE router accounts credit [OPTIONS] [ACCOUNT]");
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { BINARY } from "../helpers/binary.ts";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { startRouter, tempDir, type TestRouter } from "../helpers/router.ts";
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

interface Result {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs `dist/router <args>` without blocking this event loop (the router answering it runs here). */
async function routerBinary(args: readonly string[], env: Record<string, string> = {}): Promise<Result> {
  const proc = Bun.spawn([BINARY, ...args], {
    env: { PATH: "/usr/bin:/bin", NO_COLOR: "1", ROUTER_URL: router.url, ROUTER_KEY: router.ownerKey, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  // Whatever the command, the caller's key is never printed.
  expect(stdout + stderr).not.toContain(router.ownerKey);
  return { exitCode, stdout, stderr };
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

describe("router serve on a data directory it cannot write: the path and the cause, exit 1, no stack trace", () => {
  /**
   * Runs `script` as root of a user and mount namespace of its own (`unshare -rm`, no
   * privilege needed), where it mounts what it needs: a read-only or a full file system
   * is what a real deployment meets, and one a root test user cannot fake with chmod.
   */
  async function inMountNamespace(script: string): Promise<Result> {
    const proc = Bun.spawn(["unshare", "-rm", "sh", "-ec", script], {
      env: { PATH: "/usr/bin:/bin", BIN: BINARY },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { exitCode, stdout, stderr };
  }

  function refusedAtStart(result: Result, says: string): void {
    expect(result.exitCode).toBe(1);
    expect(result.stdout).not.toContain("listening");
    expect(result.stderr.trim().split("\n")).toEqual([says]);
  }

  test("a data directory on a read-only file system: serve, migrate and owner create name it, with 'read-only file system'", async () => {
    const mount = tempDir("router-ro-");
    for (const command of ["serve --port 0", "migrate", "owner create --email ro@example.com"]) {
      // A deployment made while writable, then its file system remounted read-only.
      const result = await inMountNamespace(`
        mount -t tmpfs -o size=16m,mode=700 tmpfs ${mount}
        mkdir -m 700 ${mount}/data && echo > ${mount}/data/router.db
        mount -o remount,ro ${mount}
        exec "$BIN" ${command} --data ${mount}/data`);
      refusedAtStart(result, `router: cannot write to the data directory ${mount}/data: read-only file system (EROFS)`);
    }
  });

  test("a router.db that is not a database (damaged, or another file): serve and migrate name the data directory", async () => {
    const data = tempDir("router-notadb-");
    writeFileSync(join(data, "router.db"), Buffer.alloc(8192, 7));
    for (const command of [["serve", "--port", "0"], ["migrate"]]) {
      const result = await routerBinary([...command, "--data", data]);
      refusedAtStart(result, `router: a database file in the data directory ${data} is damaged or not a SQLite database (SQLITE_NOTADB); restore it from a backup`);
    }
  });

  test("a first start on a full disk: the data directory and 'no space left on device', whichever file met it", async () => {
    const mount = tempDir("router-full-");
    for (const size of ["8k", "64k", "256k"]) {
      const result = await inMountNamespace(`
        mount -t tmpfs -o size=${size},mode=700 tmpfs ${mount}
        exec "$BIN" serve --port 0 --data ${mount}/data`);
      refusedAtStart(result, `router: cannot write to the data directory ${mount}/data: no space left on device (ENOSPC)`);
    }
    // `router backup` names the directory of --out, full or read-only.
    const backupFull = await inMountNamespace(`
      mount -t tmpfs -o size=32k,mode=700 tmpfs ${mount}
      exec "$BIN" backup --data ${router.dataDir} --out ${mount}/copy.db`);
    refusedAtStart(backupFull, `router: cannot write the backup to ${mount}: no space left on device (ENOSPC)`);
    const backupReadOnly = await inMountNamespace(`
      mount -t tmpfs -o ro,mode=700 tmpfs ${mount}
      exec "$BIN" backup --data ${router.dataDir} --out ${mount}/copy.db`);
    refusedAtStart(backupReadOnly, `router: cannot write the backup to ${mount}: read-only file system (EROFS)`);
    // `router migrate` creates the database too.
    const migrate = await inMountNamespace(`
      mount -t tmpfs -o size=64k,mode=700 tmpfs ${mount}
      exec "$BIN" migrate --data ${mount}/data`);
    refusedAtStart(migrate, `router: cannot write to the data directory ${mount}/data: no space left on device (ENOSPC)`);
  });
});

describe("a bad value from the environment is named as the variable it came from", () => {
  test("ROUTER_PORT, ROUTER_LOG_LEVEL, ROUTER_BYOK, ROUTER_GRACE, ROUTER_URL: the variable, not a --flag the command line never had", async () => {
    const data = tempDir("router-env-");
    for (const [name, value] of [["ROUTER_PORT", "abc"], ["ROUTER_LOG_LEVEL", "verbose"], ["ROUTER_BYOK", "maybe"], ["ROUTER_GRACE", "-1"], ["ROUTER_TIMEZONE", "Mars/Base"]] as const) {
      const result = await routerBinary(["serve", "--data", `${data}/never`], { [name]: value });
      expect({ exitCode: result.exitCode, stdout: result.stdout }).toEqual({ exitCode: 2, stdout: "" });
      expect(result.stderr).toStartWith(`router: ${name}`);
      expect(result.stderr).not.toContain("--");
      expect(result.stderr).toContain(value);
    }
    // The first owner's email is checked with the flags: before, a bad one left a database without an owner, and named no flag.
    const email = await routerBinary(["serve", "--data", `${data}/never`], { ROUTER_OWNER_EMAIL: "not-an-email" });
    expect([email.exitCode, email.stdout, email.stderr]).toEqual([2, "", 'router: ROUTER_OWNER_EMAIL: "not-an-email" is not a valid email address\n']);
    expect(existsSync(`${data}/never`)).toBe(false);
    // Given on the command line, the flag is named.
    expect((await routerBinary(["serve", "--port", "abc", "--data", `${data}/never`])).stderr).toStartWith("router: --port ");
    const url = await routerBinary(["keys", "list"], { ROUTER_URL: "localhost:8080" });
    expect(url.exitCode).toBe(2);
    expect(url.stderr).toStartWith("router: ROUTER_URL must be an http:// or https:// URL");
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

describe("router serve's PEM files are checked before the data directory is touched", () => {
  test("a directory, a file that is not PEM, a key of another certificate: the flag and the file named, exit 2, no database made", async () => {
    const dir = tempDir("router-pem-");
    const tls = testCertificates();
    const garbage = join(dir, "garbage.pem");
    writeFileSync(garbage, "not a certificate\n");
    const otherKey = join(dir, "other.key");
    writeFileSync(otherKey, generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey.export({ type: "pkcs8", format: "pem" }));
    const cases: Array<[string[], string]> = [
      [["--tls-cert", dir, "--tls-key", tls.keyFile], `router: --tls-cert: ${dir} is a directory, not a file`],
      [["--tls-cert", garbage, "--tls-key", tls.keyFile], `router: --tls-cert: ${garbage} holds no PEM certificate`],
      [["--tls-cert", tls.certFile, "--tls-key", garbage], `router: --tls-key: ${garbage} holds no PEM private key`],
      [["--tls-cert", tls.certFile, "--tls-key", otherKey], `router: --tls-key: ${otherKey} is not the private key of the certificate in ${tls.certFile}`],
      [["--upstream-ca-file", garbage], `router: --upstream-ca-file: ${garbage} holds no PEM certificate`],
      [["--upstream-ca-file", dir], `router: --upstream-ca-file: ${dir} is a directory, not a file`],
    ];
    // The secret key file is made when missing, so it is checked when read: a directory there is named.
    const keyDir = await routerBinary(["serve", "--port", "0", "--data", join(dir, "keyed"), "--secret-key-file", dir]);
    expect([keyDir.exitCode, keyDir.stdout]).toEqual([1, ""]);
    expect(keyDir.stderr).toStartWith(`router: cannot read the secret key file ${dir}: EISDIR`);
    for (const [flags, says] of cases) {
      const data = join(dir, "data");
      const result = await routerBinary(["serve", "--port", "0", "--data", data, ...flags]);
      expect([result.exitCode, result.stdout, result.stderr]).toEqual([2, "", `${says}\n`]);
      expect(existsSync(data)).toBe(false);
    }
  });
});

describe("router serve's URLs that carry a password: checked at start, never echoed", () => {
  test("a --signup-smtp that is not an smtp:// or smtps:// URL is refused (it failed only at the first sign-up), and no password is printed", async () => {
    const data = tempDir("router-urls-");
    const cases: Array<[Record<string, string>, string]> = [
      [{ ROUTER_SIGNUP_SMTP: "smtp://mailer:SMTP-PW-1@bad host" }, "router: ROUTER_SIGNUP_SMTP is not a URL; give smtp://user:password@host:587 or smtps://…\n"],
      [{ ROUTER_SIGNUP_SMTP: "ftp://mailer:SMTP-PW-1@mail.example.com" }, "router: ROUTER_SIGNUP_SMTP must be an smtp:// or smtps:// URL, got ftp://mailer:***@mail.example.com/\n"],
      [{ ROUTER_BASE_URL: "https://admin:BASE-PW-1@bad host" }, "router: ROUTER_BASE_URL is not a URL\n"],
    ];
    for (const [env, says] of cases) {
      const result = await routerBinary(["serve", "--port", "0", "--byok", "--signup", "--signup-from", "a@example.com", "--data", `${data}/never`], env);
      expect([result.exitCode, result.stdout, result.stderr]).toEqual([2, "", says]);
    }
  });
});

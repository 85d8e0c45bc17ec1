import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { tempDir } from "../helpers/router.ts";

/**
 * `router serve --database … --redis …` as a process (issue 15): the rules of the flags,
 * their warnings, and what an instance on a shared database refuses. A password in a
 * URL never appears in anything the process prints or serves.
 */

const ROOT = join(import.meta.dir, "..", "..");
const PASSWORD = "s3cret-Word-42";

interface Serving {
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly out: { text: string };
  readonly err: { text: string };
  /** The listening URL, or undefined when the process ended first. */
  readonly url: string | undefined;
  readonly exitCode: number | null;
}

async function collect(stream: ReadableStream<Uint8Array>, sink: { text: string }): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) sink.text += decoder.decode(chunk, { stream: true });
}

const running: Array<Subprocess<"ignore", "pipe", "pipe">> = [];

/** `bun src/main.ts serve …` until it listens or exits. */
async function serve(args: string[], env: Record<string, string> = {}): Promise<Serving> {
  const proc = Bun.spawn([process.execPath, "src/main.ts", "serve", "--port", "0", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", NO_COLOR: "1", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  running.push(proc);
  const out = { text: "" };
  const err = { text: "" };
  const done = Promise.all([collect(proc.stdout, out), collect(proc.stderr, err)]);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const match = /router listening on (\S+)/.exec(out.text);
    if (match) return { proc, out, err, url: match[1], exitCode: null };
    if (proc.exitCode !== null) {
      await done;
      return { proc, out, err, url: undefined, exitCode: proc.exitCode };
    }
    if (Date.now() > deadline) {
      proc.kill();
      throw new Error(`serve neither listened nor ended:\n${out.text}\n${err.text}`);
    }
    await Bun.sleep(20);
  }
}

async function stop(serving: Serving): Promise<number> {
  serving.proc.kill("SIGTERM");
  return serving.proc.exited;
}

function expectNoPassword(serving: Serving): void {
  expect(serving.out.text).not.toContain(PASSWORD);
  expect(serving.err.text).not.toContain(PASSWORD);
}

const closedPort = () => {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
};

describe("serve: flag rules that need no server", () => {
  test("serve --help lists --database and --redis with their environment variables", async () => {
    const help = await serve(["--help"]);
    expect(help.exitCode).toBe(0);
    const text = help.out.text + help.err.text;
    const line = (flag: string) => text.split("\n").find((l) => l.includes(`--${flag}=<url>`)) ?? "";
    expect(line("database")).toContain("env ROUTER_DATABASE");
    expect(line("redis")).toContain("env ROUTER_REDIS");
    expect(line("redis")).toContain("needs --database");
  });

  test("--redis without --database is refused (exit 2) naming the database, without echoing the URL", async () => {
    const result = await serve(["--data", tempDir(), "--redis", `redis://:${PASSWORD}@127.0.0.1:6379`]);
    expect(result.exitCode).toBe(2);
    expect(result.err.text).toContain("--redis needs --database");
    expectNoPassword(result);
  });

  test("ROUTER_REDIS without ROUTER_DATABASE is refused the same way", async () => {
    const result = await serve(["--data", tempDir()], { ROUTER_REDIS: "redis://127.0.0.1:6379" });
    expect(result.exitCode).toBe(2);
    expect(result.err.text).toContain("database");
  });

  test("URLs of the wrong kind are refused (exit 2)", async () => {
    const database = await serve(["--data", tempDir(), "--database", `mysql://root:${PASSWORD}@127.0.0.1/db`]);
    expect(database.exitCode).toBe(2);
    expect(database.err.text).toContain("--database must be a postgres:// or postgresql:// URL, got mysql://root:***@127.0.0.1/db");
    expectNoPassword(database);
    const redis = await serve(["--data", tempDir(), "--database", "postgres://127.0.0.1/db", "--redis", "http://127.0.0.1:6379"]);
    expect(redis.exitCode).toBe(2);
    expect(redis.err.text).toContain("--redis must be a Redis URL");
  });

  test("an unreachable database fails the start (exit 1) naming PostgreSQL, never the password", async () => {
    const result = await serve(["--data", tempDir(), "--database", `postgres://router:${PASSWORD}@127.0.0.1:${closedPort()}/db`]);
    expect(result.exitCode).toBe(1);
    expect(result.err.text).toContain("PostgreSQL");
    expect(result.err.text).toContain("warning: --database holds a password");
    expectNoPassword(result);
  });
});

if (!skipServices) {
  describe("serve --database without --redis", () => {
    let postgres: PostgresServer;
    let withPassword: string;
    let withoutPassword: string;
    const dirs: string[] = [];
    const dir = () => {
      const made = tempDir("router-serve-pg-");
      dirs.push(made);
      return made;
    };

    beforeAll(async () => {
      postgres = await startPostgres();
      const name = await postgres.createDatabase();
      withoutPassword = postgres.url(name);
      // The test cluster trusts local connections: the password is carried, not checked.
      withPassword = withoutPassword.replace("postgres@", `postgres:${PASSWORD}@`);
    }, 60_000);
    afterAll(async () => {
      for (const proc of running) if (proc.exitCode === null) proc.kill("SIGKILL");
      await postgres?.stop();
      for (const made of dirs) rmSync(made, { recursive: true, force: true });
    });

    test("one instance serves with warnings about the flag's password and Redis; a second on the same database is refused; a key that cannot open its secrets is refused; the shared key is accepted", async () => {
      const first = dir();
      const one = await serve(["--data", first, "--database", withPassword]);
      expect(one.url).toBeString();
      expect(one.err.text).toContain("warning: --database holds a password");
      expect(one.err.text).toContain("ROUTER_DATABASE");
      expect(one.err.text).toMatch(/warning: .*--redis/);
      expect(one.out.text).toContain("created owner");
      const ownerKey = readFileSync(join(first, "initial-owner-key"), "utf8").trim();
      const health = await fetch(`${one.url}/healthz`);
      expect(await health.json()).toEqual({ status: "ok", database: "up", redis: "embedded" });
      const metrics = await (await fetch(`${one.url}/metrics`, { headers: { authorization: `Bearer ${ownerKey}` } })).text();
      expect(metrics).toContain('router_dependency_up{dependency="database"} 1');
      expect(metrics).not.toContain(PASSWORD);
      expect(metrics).not.toContain('dependency="redis"');

      // Same database through the environment: no password warning, but refused.
      const two = await serve(["--data", dir()], { ROUTER_DATABASE: withPassword });
      expect(two.exitCode).toBe(1);
      expect(two.err.text).not.toContain("holds a password");
      expect(two.err.text).toContain("another instance already runs on");
      expect(two.err.text).toContain("--redis");
      expectNoPassword(two);

      // A provider secret sealed with the first instance's key.
      const added = await fetch(`${one.url}/x-keys`, {
        method: "POST",
        headers: { authorization: `Bearer ${ownerKey}`, "content-type": "application/json" },
        body: JSON.stringify({ Provider: "https://api.example.com/v1", SecretKey: "sk-sealed-0123456789abcdef", Level: 1, Status: true }),
      });
      expect(added.status).toBe(201);
      expect(await stop(one)).toBe(0);
      expectNoPassword(one);

      // The lock went with the first instance; a new data directory means a new key, which cannot open the secret.
      const other = dir();
      const wrongKey = await serve(["--data", other, "--database", withoutPassword]);
      expect(wrongKey.exitCode).toBe(1);
      expect(wrongKey.err.text).toContain("sealed with another key");
      expect(wrongKey.err.text).toContain("--secret-key-file");

      const sharedKey = await serve(["--data", other, "--database", withoutPassword, "--secret-key-file", join(first, "secret.key")]);
      expect(sharedKey.url).toBeString();
      // The owner exists already: no second one, no key file here.
      expect(sharedKey.out.text).not.toContain("created owner");
      expect(existsSync(join(other, "initial-owner-key"))).toBe(false);
      const list = await fetch(`${sharedKey.url}/x-keys`, { headers: { authorization: `Bearer ${ownerKey}` } });
      expect(list.status).toBe(200);
      expect(await stop(sharedKey)).toBe(0);
    }, 90_000);
  });
}

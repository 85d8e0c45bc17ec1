import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { startRouter, tempDir, type TestRouter } from "../helpers/router.ts";
import { runRouterCommand, type CommandResult } from "../helpers/router-command.ts";
import { api } from "../helpers/owner-ops.ts";

// The CLI as a demanding admin uses it: usage mistakes anywhere are one line on stderr
// and exit 2 (README: 0 done, 1 refused, 2 usage error), nothing typed is silently
// ignored, and the data commands never leave a wrong file or a key that works nowhere.
// Each call is a real `bun src/main.ts …` process against an in-process router.

let router: TestRouter;
let dir: string;

beforeAll(async () => {
  router = await startRouter();
  dir = tempDir("router-cli-review-");
});
afterAll(async () => {
  await router.stop();
});

async function cli(args: string[], env: Record<string, string> = {}, stdin?: string): Promise<CommandResult> {
  const result = await runRouterCommand(args, { env: { ROUTER_URL: router.url, ROUTER_KEY: router.ownerKey, ...env }, stdin });
  expect(result.stdout + result.stderr).not.toContain(router.ownerKey);
  return result;
}

/** A usage error: exit 2, nothing on stdout, one `router: …` line on stderr holding `says`. */
function usageError(result: CommandResult, says: string | RegExp): void {
  expect({ exitCode: result.exitCode, stdout: result.stdout }).toEqual({ exitCode: 2, stdout: "" });
  const lines = result.stderr.trim().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toStartWith("router: ");
  expect(lines[0]).toMatch(says);
}

describe("router keys: the opened provider secret never travels back to the CLI", () => {
  test("add, update, sleep and wake ask for the record without it: no answer the CLI receives holds the secret", async () => {
    const secret = "sk-cli-wire-secret-0123456789abcdefghij";
    // Between the CLI and the router: every answer body the CLI receives, recorded.
    const answers: string[] = [];
    const proxy = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(request) {
        const url = new URL(request.url);
        const upstream = await fetch(router.url + url.pathname + url.search, { method: request.method, headers: request.headers, body: request.method === "GET" ? undefined : await request.arrayBuffer() });
        const body = await upstream.text();
        answers.push(body);
        return new Response(body, { status: upstream.status, headers: { "content-type": upstream.headers.get("content-type") ?? "application/json" } });
      },
    });
    try {
      const via = { ROUTER_URL: `http://127.0.0.1:${proxy.port}` };
      const added = await cli(["keys", "add", "--provider", "https://203.0.113.9/v1", "--level", "7", "--secret", "-", "--json"], via, secret);
      expect(added.exitCode).toBe(0);
      const id = String(JSON.parse(added.stdout).ID);
      for (const args of [["keys", "update", id, "--name", "wire-check"], ["keys", "sleep", id], ["keys", "wake", id]]) expect((await cli(args, via)).exitCode).toBe(0);
      expect(answers.length).toBeGreaterThanOrEqual(4);
      for (const answer of answers) expect(answer).not.toContain(secret);
      // The key kept its secret: the router still holds it (read as the owner, not through the CLI).
      expect((await (await router.fetch(`/x-keys/${id}`)).json()).SecretKey).toBe(secret);
      expect((await cli(["keys", "rm", id, "--yes"])).exitCode).toBe(0);
    } finally {
      proxy.stop(true);
    }
  });
});

describe("router migrate --data", () => {
  test("says when it created a new database rather than migrating one (a mistyped --data), and not when it migrated one", async () => {
    const created = await cli(["migrate", "--data", join(dir, "migrate-new")]);
    expect(created.exitCode).toBe(0);
    expect(created.stdout).toContain(`created a new database at ${join(dir, "migrate-new", "router.db")}`);
    const again = await cli(["migrate", "--data", join(dir, "migrate-new")]);
    expect(again.stdout).toBe("database is up to date\n");
  });
});

describe("a missing or unknown command is a usage error at every level", () => {
  test("router, router nonsense, router owner, router owner nonsense: exit 2 with one line, not the help screen and exit 1", async () => {
    usageError(await cli([]), /missing command: router serve\|owner\|.*; see router --help/);
    usageError(await cli(["nonsense"]), /unknown command "nonsense"/);
    usageError(await cli(["--bogus"]), /see router --help/);
    usageError(await cli(["owner"]), /missing command: router owner create; see router owner --help/);
    usageError(await cli(["owner", "nonsense"]), /unknown command "nonsense"/);
    // Help and version still work at the top.
    expect((await cli(["--help"])).exitCode).toBe(0);
    expect((await cli(["owner", "--help"])).stdout).toContain("create");
    expect((await cli(["--version"])).stdout).toMatch(/^\d+\.\d+\.\d+/);
  });

  test("arguments a command does not take are refused, not ignored", async () => {
    usageError(await cli(["version", "--bogus"]), /unknown flag --bogus/);
    usageError(await cli(["version", "extra"]), /unexpected argument "extra"/);
    usageError(await cli(["migrate", "extra", "--data", join(dir, "migrate-extra")]), /unexpected argument "extra"/);
    expect(existsSync(join(dir, "migrate-extra"))).toBe(false);
    usageError(await cli(["migrate-data", "extra", "--from", dir, "--to", "postgres://router@127.0.0.1:1/router"]), /unexpected argument "extra"/);
    usageError(await cli(["owner", "create", "extra", "--email", "extra@example.com", "--data", router.dataDir]), /unexpected argument "extra"/);
    usageError(await cli(["serve", "8080", "--data", join(dir, "serve-extra")]), /unexpected argument "8080"/);
    expect(existsSync(join(dir, "serve-extra"))).toBe(false);
  });

  test("a flag given without its value is a usage error, not a flag silently dropped", async () => {
    usageError(await cli(["keys", "list", "--page"]), /--page needs a value/);
    usageError(await cli(["accounts", "list", "--size="]), /--size needs a value/);
    usageError(await cli(["requests", "--model"]), /--model needs a value/);
  });
});

describe("router backup refusals leave nothing behind", () => {
  test("--out naming a directory: refused before copying, no partial copy left next to it", async () => {
    const target = join(dir, "backups");
    mkdirSync(target);
    const result = await cli(["backup", "--data", router.dataDir, "--out", target, "--force"]);
    usageError(result, /--out .*backups is a directory/);
    expect(readdirSync(dir).filter((name) => name.includes(".partial-"))).toEqual([]);
  });

  test("--out in a directory that does not exist: one line naming that directory", async () => {
    const result = await cli(["backup", "--data", router.dataDir, "--out", join(dir, "missing", "b.db")]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr.trim()).toBe(`router: the directory of --out, ${join(dir, "missing")}, does not exist`);
    expect(existsSync(join(dir, "missing"))).toBe(false);
  });
});

describe("router owner create only writes to the deployment it names", () => {
  test("a --data directory without a database (a typo, the wrong cwd) is refused: no new database, no key that works nowhere", async () => {
    const empty = join(dir, "not-a-deployment");
    const result = await cli(["owner", "create", "--email", "typo@example.com", "--data", empty]);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr.trim()).toBe(`router: no database at ${join(empty, "router.db")}; is --data right? (router serve creates it on first start)`);
    expect(existsSync(empty)).toBe(false);
  });

  test("with ROUTER_DATABASE set (a PostgreSQL deployment) it goes to PostgreSQL, never to a SQLite file of its own", async () => {
    const data = join(dir, "pg-data");
    mkdirSync(data);
    const result = await cli(["owner", "create", "--email", "pg@example.com"], { ROUTER_DATA: data, ROUTER_DATABASE: "postgres://router:hunter2@127.0.0.1:1/router" });
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("PostgreSQL at postgres://router:***@127.0.0.1:1/router");
    expect(result.stderr).not.toContain("hunter2");
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(readdirSync(data)).toEqual([]);
  });
});

describe("router owner create on a live deployment", () => {
  test("on the running router's data directory: the printed key works at once", async () => {
    const result = await cli(["owner", "create", "--email", "second-owner@example.com", "--data", router.dataDir]);
    expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: "" });
    const key = result.stdout.trim();
    const status = await fetch(`${router.url}/dashboard/status`, { headers: { authorization: `Bearer ${key}` } });
    expect(status.status).toBe(200);
    expect(((await status.json()) as { email: string }).email).toBe("second-owner@example.com");
  });

  describe.skipIf(skipServices)("on PostgreSQL", () => {
    let pg: PostgresServer;
    beforeAll(async () => {
      pg = await startPostgres();
    });
    afterAll(async () => {
      await pg?.stop();
    });

    test("with ROUTER_DATABASE: the owner is created in that database", async () => {
      const database = await pg.createDatabase();
      const data = join(dir, "pg-owner-data");
      mkdirSync(data);
      const result = await cli(["owner", "create", "--email", "pg-owner@example.com"], { ROUTER_DATA: data, ROUTER_DATABASE: pg.url(database) });
      expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: "" });
      expect(result.stdout.trim()).toMatch(/^sk-rt-\S+$/);
      expect(readdirSync(data)).toEqual([]);
      const sql = new SQL(pg.url(database));
      try {
        const rows = (await sql`SELECT email, parent_id FROM accounts WHERE email = 'pg-owner@example.com'`) as Array<{ email: string; parent_id: number | null }>;
        expect(rows).toEqual([{ email: "pg-owner@example.com", parent_id: null }]);
      } finally {
        await sql.close();
      }
    });
  });
});

describe("what remote commands print", () => {
  test("news send --content - keeps the text, not the line break a pipe or a file ends with", async () => {
    const sent = await cli(["news", "send", "--title", "Piped", "--content", "-", "--json"], {}, "Maintenance tonight\nat 3am\n");
    expect(sent.exitCode).toBe(0);
    expect((JSON.parse(sent.stdout) as { content: string }).content).toBe("Maintenance tonight\nat 3am");
  });

  test("a dry-run batch's summary says what would happen, as its rows do", async () => {
    const created = await cli(["accounts", "create", "--email", "dry-run@example.com", "--name", "Équipe données 東京", "--json"]);
    expect(created.exitCode).toBe(0);
    const id = (JSON.parse(created.stdout) as { ID: number }).ID;
    const result = await cli(["accounts", "credit", "--ids", `${id},999999`, "--amount", "1", "--dry-run"]);
    // One would be skipped: exit 1 (README), the preview still printed.
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toContain("would apply");
    expect(result.stdout).toContain("dry run (nothing changed): 1 would apply, 1 would skip;");
  });
});

describe("router config reset", () => {
  test("returns any item to its default (a non-mapper item had no way back from the CLI); an item name is required", async () => {
    expect((await cli(["config", "set", "XAI_MAIL", "ops@example.com"])).exitCode).toBe(0);
    expect((await api(router, "/x-config")).body.configs.XAI_MAIL).toBe("ops@example.com");
    const reset = await cli(["config", "reset", "XAI_MAIL"]);
    expect([reset.exitCode, reset.stdout]).toEqual([0, "XAI_MAIL reset\n"]);
    expect((await api(router, "/x-config")).body.configs.XAI_MAIL).toBeUndefined();
    const bare = await cli(["config", "reset"]);
    expect(bare.exitCode).toBe(2);
    // An unknown item is the server's 400, one line.
    const unknown = await cli(["config", "reset", "NO_SUCH_ITEM"]);
    expect(unknown.exitCode).toBe(1);
    expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
  });
});

describe("piping", () => {
  test("output piped into a reader that has gone (| head, | true) ends the command quietly, not with an EPIPE stack trace", async () => {
    const err = join(dir, "epipe.err");
    for (const args of ["logs", "keys list", "version"]) {
      const proc = Bun.spawn(["bash", "-c", `"${process.execPath}" src/main.ts ${args} 2>"${err}" | true; echo "\${PIPESTATUS[0]}"`], {
        cwd: join(import.meta.dir, "..", ".."),
        env: { ...process.env, NO_COLOR: "1", ROUTER_URL: router.url, ROUTER_KEY: router.ownerKey },
        stdout: "pipe",
      });
      const status = (await new Response(proc.stdout).text()).trim();
      expect({ args, status, stderr: await Bun.file(err).text() }).toEqual({ args, status: "0", stderr: "" });
    }
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir, startRouter, type TestRouter } from "../helpers/router.ts";
import { api } from "../helpers/owner-ops.ts";
import { recordUsage } from "../helpers/keys.ts";
import { runRouterCommand } from "../helpers/router-command.ts";

// The admin CLI (src/main.ts keys|accounts|config|usage|news|logs) against an
// in-process router. Each call is a real `bun src/main.ts …` process; it is spawned
// asynchronously because the router answering it runs on this test's event loop.

const ROOT = join(import.meta.dir, "..", "..");
const PROVIDER_SECRET = "sk-provider-test-secret-0123456789abcdef";
const SECOND_SECRET = "sk-provider-stdin-secret-abcdefghijklmnopqrstu";

let router: TestRouter;
let dir: string;

beforeAll(async () => {
  router = await startRouter();
  dir = tempDir("router-cli-");
});
afterAll(async () => {
  await router.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Result {
  exitCode: number;
  stdout: string;
  stderr: string;
}

async function cli(args: string[], options: { env?: Record<string, string>; stdin?: string } = {}): Promise<Result> {
  const { exitCode, stdout, stderr } = await runRouterCommand(args, { ...options, env: { ROUTER_URL: router.url, ROUTER_KEY: router.ownerKey, ...options.env } });
  // Whatever the command, the caller's key never appears in its output.
  expect(stdout).not.toContain(router.ownerKey);
  expect(stderr).not.toContain(router.ownerKey);
  return { exitCode, stdout, stderr };
}

/** Succeeded, and said nothing on stderr. */
function ok(result: Result): string {
  expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: "" });
  return result.stdout;
}

/** Rows of a table as arrays of cells (split on runs of 2+ spaces). */
function rows(table: string): string[][] {
  return table
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s{2,}/));
}

describe("router CLI: help and usage errors", () => {
  test("every new command shows up in --help; subcommands have their own", async () => {
    const top = ok(await cli(["--help"]));
    for (const name of ["keys", "accounts", "config", "usage", "news", "logs", "backup", "requests", "route"]) expect(top).toContain(name);
    const add = ok(await cli(["keys", "add", "--help"]));
    expect(add).toContain("USAGE router keys add");
    expect(add).toContain("--secret-file");
    // Needed positional arguments are shown as required; optional ones in brackets.
    expect(ok(await cli(["keys", "rm", "--help"]))).toContain("USAGE router keys rm [OPTIONS] <ID>");
    expect(ok(await cli(["config", "get", "--help"]))).toContain("[ITEM]");
    expect(ok(await cli(["config", "add", "--help"]))).toContain("<ITEM> <ENTRY>");
    expect(ok(await cli(["version", "--help"]))).toContain("USAGE router version");
  });

  test("usable from the checkout right after npm install, as the README says: npm run router -- <command>", async () => {
    const proc = Bun.spawn(["npm", "run", "--silent", "router", "--", "version"], { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
    const [stdout, exitCode] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(exitCode).toBe(0);
    expect(stdout.trim()).toMatch(/^router \d+\.\d+\.\d+/);
  });

  test("unknown flag, missing argument, missing subcommand: exit 2 with one line", async () => {
    const flag = await cli(["accounts", "list", "--colour"]);
    expect(flag.exitCode).toBe(2);
    expect(flag.stderr).toContain("unknown flag --colour");
    const missing = await cli(["accounts", "rm"]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain("missing argument ACCOUNT");
    const sub = await cli(["keys", "frobnicate"]);
    expect(sub.exitCode).toBe(2);
    expect(sub.stderr).toContain('unknown command "frobnicate"');
    expect(sub.stderr).not.toContain("    at ");
  });

  test("no key is a usage error; a key as an argument is refused; --key works with a warning", async () => {
    const none = await cli(["logs"], { env: { ROUTER_KEY: "" } });
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toContain("ROUTER_KEY");
    const positional = await cli(["logs", router.ownerKey]);
    expect(positional.exitCode).toBe(2);
    expect(positional.stderr).toContain("never taken as an argument");
    const flag = await cli(["news", "list", "--key", router.ownerKey], { env: { ROUTER_KEY: "" } });
    expect(flag.exitCode).toBe(0);
    expect(flag.stderr).toContain("warning: --key");
    expect(flag.stderr).toContain("ROUTER_KEY");
  });

  test("a server that cannot be reached: exit 1 with a clear line", async () => {
    const down = await cli(["keys", "list"], { env: { ROUTER_URL: "http://127.0.0.1:1" } });
    expect(down.exitCode).toBe(1);
    expect(down.stderr).toStartWith("router: cannot reach the router at http://127.0.0.1:1");
    expect(down.stderr.trim().split("\n")).toHaveLength(1);
  });
});

describe("deletions on a terminal", () => {
  /** Runs the CLI on a pseudo-terminal (util-linux `script`), typing `typed` into it. */
  async function onTerminal(args: string[], typed: string): Promise<{ exitCode: number; output: string }> {
    const command = [process.execPath, "src/main.ts", ...args].map((part) => `'${part.replace(/'/g, "'\\''")}'`).join(" ");
    const proc = Bun.spawn(["script", "-qec", command, "/dev/null"], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: "1", ROUTER_URL: router.url, ROUTER_KEY: router.ownerKey },
      stdin: new Blob([typed]),
      stdout: "pipe",
      stderr: "pipe",
    });
    const [output, exitCode] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    return { exitCode, output };
  }

  test("ask before deleting: n keeps the key (exit 1), y deletes it", async () => {
    const created = await api(router, "/x-keys", { body: { Provider: "https://203.0.113.9/v1", SecretKey: "sk-terminal-0123456789abcdef", Level: 7, Status: true } });
    expect(created.status).toBe(201);
    const no = await onTerminal(["keys", "rm", String(created.body.ID)], "n\n");
    expect(no.output).toContain(`Delete provider key ${created.body.ID}? [y/N]`);
    expect(no.exitCode).toBe(1);
    expect(no.output).toContain("nothing was deleted");
    expect((await api(router, `/x-keys/${created.body.ID}`)).status).toBe(200);
    const yes = await onTerminal(["keys", "rm", String(created.body.ID)], "y\n");
    expect(yes.exitCode).toBe(0);
    expect(yes.output).toContain(`deleted provider key ${created.body.ID}`);
    expect((await api(router, `/x-keys/${created.body.ID}`)).status).toBe(404);
  });
});

describe("router keys", () => {
  test("add, list, sleep, wake, update, rm; the secret is never printed", async () => {
    const secretFile = join(dir, "provider.secret");
    writeFileSync(secretFile, PROVIDER_SECRET + "\n");
    const added = ok(await cli(["keys", "add", "--provider", "https://203.0.113.7/v1", "--level", "1", "--secret-file", secretFile, "--name", "primary"]));
    expect(added).toContain("added provider key");
    expect(added).toContain("…" + PROVIDER_SECRET.slice(-20));

    const viaStdin = await cli(["keys", "add", "--provider", "https://203.0.113.8", "--level", "2", "--secret", "-", "--no-auto-sleep", "--json"], {
      stdin: SECOND_SECRET + "\n",
    });
    const second = JSON.parse(ok(viaStdin));
    expect(second).toMatchObject({ Level: 2, NoSleep: true, Status: true, PartialKey: "…" + SECOND_SECRET.slice(-20) });
    expect(second.SecretKey).toBeUndefined();
    // The server stored the secret without the line break the pipe added.
    const stored = await (await router.fetch(`/x-keys/${second.ID}`)).json();
    expect(stored.SecretKey).toBe(SECOND_SECRET);

    const list = ok(await cli(["keys", "list"]));
    const table = rows(list);
    expect(table[0]).toEqual(["ID", "NAME", "LEVEL", "PROVIDER", "KEY", "STATUS", "SLEEPING", "AUTO-SLEEP", "CREATED"]);
    expect(table).toHaveLength(3);
    expect(list).toContain("primary");
    expect(list).not.toContain(PROVIDER_SECRET);
    expect(list).not.toContain(SECOND_SECRET);
    // Columns are aligned: every row's KEY cell starts where the header's does.
    const lines = list.trim().split("\n");
    const column = lines[0]!.indexOf("KEY");
    for (const line of lines.slice(1)) expect(line.slice(column, column + 1)).toBe("…");

    const listed = JSON.parse(ok(await cli(["keys", "list", "--json", "--level", "2"])));
    expect(listed.map((k: { ID: number }) => k.ID)).toEqual([second.ID]);
    expect(JSON.stringify(listed)).not.toContain(SECOND_SECRET);

    expect(ok(await cli(["keys", "sleep", String(second.ID)]))).toContain("sleeping");
    const woken = JSON.parse(ok(await cli(["keys", "wake", String(second.ID), "--json"])));
    expect(woken).toMatchObject({ ID: second.ID, Sleeping: false });
    expect(woken.SecretKey).toBeUndefined();

    // --secret VALUE works, with a warning about shell history.
    const updated = await cli(["keys", "update", String(second.ID), "--disable", "--name", "standby", "--secret", PROVIDER_SECRET + "-2"]);
    expect(updated.exitCode).toBe(0);
    expect(updated.stderr).toContain("warning: --secret");
    expect(updated.stdout).not.toContain(PROVIDER_SECRET);
    const after = await (await router.fetch(`/x-keys/${second.ID}`)).json();
    expect(after).toMatchObject({ Name: "standby", Status: false, SecretKey: PROVIDER_SECRET + "-2" });

    // Not a terminal: a deletion needs --yes, and without it nothing is deleted.
    const unasked = await cli(["keys", "rm", String(second.ID)]);
    expect(unasked.exitCode).toBe(2);
    expect(unasked.stderr).toContain("--yes");
    expect(ok(await cli(["keys", "rm", String(second.ID), "--yes"]))).toContain(`deleted provider key ${second.ID}`);
    expect((await router.fetch(`/x-keys/${second.ID}`)).status).toBe(404);
  });
});

describe("router accounts", () => {
  let childId = 0;

  test("create prints the record and the new key once; a used email is refused with the server's message", async () => {
    const out = ok(await cli(["accounts", "create", "--email", "alice@example.com", "--name", "alice", "--credit", "10", "--fields", '{"RPM":60}']));
    expect(out).toContain("created account");
    const key = /API key \(shown once, store it now\):\n(sk-rt-\S+)/.exec(out)?.[1];
    expect(key).toBeDefined();
    const status = await (await router.fetch("/dashboard/status", { key })).json();
    expect(status).toMatchObject({ email: "alice@example.com", balance: 10 });
    childId = status.id;

    const again = await cli(["accounts", "create", "--email", "alice@example.com", "--json"]);
    expect(again.exitCode).toBe(1);
    expect(again.stdout).toBe("");
    expect(again.stderr).toBe("router: Email alice@example.com is already used (HTTP 409)\n");

    // A key without management rights: the server's 403, exit 1.
    const refused = await cli(["accounts", "list"], { env: { ROUTER_KEY: key! } });
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toBe("router: This API key may not use /x-users (Resources) (HTTP 403)\n");
  });

  test("list as a table and as JSON; update; credit one and a batch; rm", async () => {
    const table = rows(ok(await cli(["accounts", "list"])));
    expect(table[0]).toEqual(["ID", "NAME", "EMAIL", "LEVEL", "PARENT", "BALANCE", "RATES", "KEY", "CREATED"]);
    expect(table[1]!.slice(0, 6)).toEqual([String(childId), "alice", "alice@example.com", "2", "1", "10"]);

    const updated = JSON.parse(ok(await cli(["accounts", "update", "alice", "--alias", "Alice A.", "--json"])));
    expect(updated).toMatchObject({ object: "account", ID: childId, Alias: "Alice A.", RPM: 60 });

    expect(ok(await cli(["accounts", "credit", String(childId), "--amount", "5", "--days", "30"]))).toContain("balance now 15");
    // An account that would be skipped: the preview is printed, and exit 1 says the batch would not all apply.
    const previewed = await cli(["accounts", "credit", "--ids", `${childId},9999`, "--amount", "-2", "--dry-run"]);
    expect([previewed.exitCode, previewed.stderr]).toEqual([1, "router: 1 of 2 accounts would be skipped (see REASON)\n"]);
    const preview = previewed.stdout;
    expect(preview).toContain("would apply");
    expect(preview).toContain("would skip");
    expect(preview).not.toMatch(/\bapplied\s{2}/);
    const batch = JSON.parse((await cli(["accounts", "credit", "--ids", `${childId},9999`, "--amount", "-2", "--dry-run", "--json"])).stdout);
    expect(batch).toMatchObject({
      object: "batch_credit",
      DryRun: true,
      results: [
        { ID: childId, status: "applied", BalanceBefore: 15, BalanceAfter: 13 },
        { ID: 9999, status: "skipped" },
      ],
    });
    const listed = JSON.parse(ok(await cli(["accounts", "list", "--all", "--json"])));
    expect(listed.find((a: { ID: number }) => a.ID === childId).Balance).toBe(15); // the dry run changed nothing

    expect((await cli(["accounts", "rm", String(childId)])).exitCode).toBe(2);
    expect(ok(await cli(["accounts", "rm", String(childId), "-y"]))).toContain(`deleted account ${childId}; 15 credits returned`);
  });
});

describe("router config", () => {
  test("set and get, then export → import round-trips (EMAIL_PASS included, as its mask)", async () => {
    expect(ok(await cli(["config", "set", "MODEL_MAPPER", "gpt-fast=gpt-4o-mini,gpt-smart=gpt-4o"]))).toContain("MODEL_MAPPER set");
    const pass = await cli(["config", "set", "EMAIL_PASS", "-"], { stdin: "smtp-password-123\n" });
    expect(pass.exitCode).toBe(0);
    expect(pass.stdout).not.toContain("smtp-password-123");
    expect(router.deps.settings.raw("EMAIL_PASS")).toBe("smtp-password-123");
    expect(JSON.parse(ok(await cli(["config", "get", "MODEL_MAPPER", "--json"])))).toBe("gpt-fast=gpt-4o-mini,gpt-smart=gpt-4o");
    expect(ok(await cli(["config", "get", "MODEL_MAPPER"]))).toBe("gpt-fast=gpt-4o-mini,gpt-smart=gpt-4o\n");
    const table = ok(await cli(["config", "get"]));
    expect(table).toMatch(/^ITEM\s+VALUE\n/);
    expect(table).toContain("********");
    expect(table).not.toContain("smtp-password-123");

    const file = join(dir, "config.json");
    expect(ok(await cli(["config", "export", "--out", file]))).toContain(`to ${file}`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const exported = JSON.parse(readFileSync(file, "utf8"));
    const before = (await (await router.fetch("/x-config")).json()).configs;
    expect(exported).toEqual(before);
    expect(exported.EMAIL_PASS).toBe("********");

    // Change things, then import the export: everything is as it was.
    await router.fetch("/x-config", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ MODEL_MAPPER: "a=b", EMAIL_PORT: 2525 }) });
    await router.fetch("/x-config", { method: "DELETE", headers: { "content-type": "application/json" }, body: JSON.stringify({ keys: ["PRICING"] }) });
    const imported = ok(await cli(["config", "import", file]));
    expect(imported).toContain(`imported ${Object.keys(exported).length} item`);
    const after = (await (await router.fetch("/x-config")).json()).configs;
    const { EMAIL_PORT: _port, ...afterWithoutPort } = after;
    expect(afterWithoutPort).toEqual(before);
    expect(router.deps.settings.raw("EMAIL_PASS")).toBe("smtp-password-123");

    // A value the server refuses: exit 1 with its message naming the item.
    const bad = await cli(["config", "set", "SWITCH_OVER", "1=2,2=1"]);
    expect(bad.exitCode).toBe(1);
    expect(bad.stderr).toContain("SWITCH_OVER");
    expect(bad.stderr).toContain("(HTTP 400)");
  });

  test("config add and rm change one mapper entry and keep the rest; set says it replaces", async () => {
    ok(await cli(["config", "set", "LEVEL_MAPPER", "gpt-4o*=2,claude-*=3"]));
    expect(ok(await cli(["config", "add", "LEVEL_MAPPER", "gemini-*=4"]))).toContain("LEVEL_MAPPER: added gemini-*=4 (3 entries)");
    expect(ok(await cli(["config", "add", "LEVEL_MAPPER", "claude-*=5"]))).toContain("changed claude-*=5");
    expect(JSON.parse(ok(await cli(["config", "get", "LEVEL_MAPPER", "--json"])))).toBe("gpt-4o*=2,claude-*=5,gemini-*=4");
    expect(ok(await cli(["config", "rm", "LEVEL_MAPPER", "gpt-4o*"]))).toContain("removed gpt-4o* (2 entries left)");
    const missing = await cli(["config", "rm", "LEVEL_MAPPER", "nope-*"]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toContain("no entry for nope-*");
    ok(await cli(["config", "rm", "LEVEL_MAPPER", "claude-*"]));
    ok(await cli(["config", "rm", "LEVEL_MAPPER", "gemini-*"]));
    // The last entry gone, the item is unset.
    expect((await cli(["config", "get", "LEVEL_MAPPER"])).stderr).toContain("LEVEL_MAPPER is not set");
    // A cycle is still refused by the server, naming the item.
    ok(await cli(["config", "add", "SWITCH_OVER", "1=2"]));
    const cycle = await cli(["config", "add", "SWITCH_OVER", "2=1"]);
    expect(cycle.exitCode).toBe(1);
    expect(cycle.stderr).toContain("SWITCH_OVER");
    // Entries keep their places, integer-like ones too (an object would put 2 before 4).
    ok(await cli(["config", "set", "SWITCH_OVER", "4=1"]));
    ok(await cli(["config", "add", "SWITCH_OVER", "2=4"]));
    expect(JSON.parse(ok(await cli(["config", "get", "SWITCH_OVER", "--json"])))).toBe("4=1,2=4");
    // Usage errors: an item that has no entries, an entry without '=', more than one entry.
    expect((await cli(["config", "add", "PRICING", "a=b"])).exitCode).toBe(2);
    expect((await cli(["config", "add", "MODEL_MAPPER", "just-a-name"])).exitCode).toBe(2);
    const two = await cli(["config", "add", "MODEL_MAPPER", "a=b,c=d"]);
    expect(two.exitCode).toBe(2);
    expect(two.stderr).toContain('without another "," or "="');
    expect((await cli(["config", "add", "MODEL_MAPPER", "a=b=c"])).exitCode).toBe(2);
    expect(ok(await cli(["config", "set", "--help"]))).toContain("replacing its whole value");
  });
});

describe("router usage, news and logs", () => {
  test("usage live and bill read the owner's own usage", async () => {
    await recordUsage(router, { accountId: 1, costNanos: 2_500_000_000, model: "gpt-4o", prompt: 1200, completion: 300 });

    const live = ok(await cli(["usage", "live"]));
    expect(live).toContain("account 1 owner@localhost");
    const today = rows(live).find((row) => row[0] === "today" && row[1] === "gpt-4o");
    expect(today).toEqual(["today", "gpt-4o", "1", "1200", "300", "0", "2.5"]);

    const bill = JSON.parse(ok(await cli(["usage", "bill", "--days", "2", "--json"])));
    expect(bill).toMatchObject({ object: "bill_info", total_requests: 1, total_prompt: 1200, total_credit_used: 2.5 });
    expect(bill.daily_costs).toHaveLength(2);

    const conflict = await cli(["usage", "bill", "--date", "2026-01-01", "--days", "2"]);
    expect(conflict.exitCode).toBe(2);
  });

  test("usage bill --account and usage ranking read the accounts under the caller", async () => {
    const created = await api(router, "/x-users", { body: { Email: "ranked@example.com", Name: "ranked-one", CreditGranted: 5 } });
    expect(created.status).toBe(201);
    const id = created.body.ID as number;
    await recordUsage(router, { accountId: id, costNanos: 1_250_000_000, model: "gpt-4o-mini", prompt: 100, completion: 50 });
    const theirs = JSON.parse(ok(await cli(["usage", "bill", "--account", "ranked@example.com", "--json"])));
    expect(theirs).toMatchObject({ total_requests: 1, total_credit_used: 1.25 });
    const ranking = ok(await cli(["usage", "ranking"]));
    const line = rows(ranking).find((row) => row[0] === String(id));
    expect(line).toEqual([String(id), "ranked-one", "ranked@example.com", "1", "1.25", "100", "gpt-4o-mini"]);
    const outside = await cli(["usage", "bill", "--account", "nobody@example.com"]);
    expect(outside.exitCode).toBe(1);
  });

  test("news send, list, rm", async () => {
    const sent = JSON.parse(ok(await cli(["news", "send", "--title", "Maintenance", "--content", "-", "--days", "2", "--json"], { stdin: "Down at 02:00 UTC" })));
    expect(sent).toMatchObject({ object: "notice", title: "Maintenance", content: "Down at 02:00 UTC", target_id: null });
    const table = rows(ok(await cli(["news", "list"])));
    expect(table[0]).toEqual(["ID", "TITLE", "TARGET", "AUTHOR", "CREATED", "EXPIRES", "CONTENT"]);
    expect(table[1]!.slice(0, 4)).toEqual([String(sent.id), "Maintenance", "everyone", "1"]);

    const tooLong = await cli(["news", "send", "--title", "x".repeat(101), "--content", "c"]);
    expect(tooLong.exitCode).toBe(1);
    expect(tooLong.stderr).toContain("title must be at most 100 characters");

    expect((await cli(["news", "rm", String(sent.id)])).exitCode).toBe(2);
    expect(ok(await cli(["news", "rm", String(sent.id), "--yes"]))).toContain(`deleted notice ${sent.id}`);
  });

  test("logs: a table with filters, and the server's page as JSON", async () => {
    const table = ok(await cli(["logs", "--action", "news.*", "--size", "1"]));
    const [header, first] = rows(table);
    expect(header).toEqual(["ID", "TIME", "ACTION", "BY", "TARGET", "IP", "DETAILS"]);
    expect(first![2]).toBe("news.delete");
    expect(table).toContain("next: --page 2");

    const page = JSON.parse(ok(await cli(["logs", "--json", "--action", "key.*"])));
    expect(page).toMatchObject({ page: 1, size: 24 });
    expect(page.logs.map((row: { action: string }) => row.action)).toContain("key.create");
    expect(JSON.stringify(page)).not.toContain(PROVIDER_SECRET);
  });
});

describe("colour", () => {
  test("no colour codes when stdout is not a terminal, or when NO_COLOR is set to anything", async () => {
    const piped = Bun.spawn([process.execPath, "src/main.ts", "keys", "add", "--help"], { cwd: ROOT, env: { ...process.env, NO_COLOR: "" }, stdout: "pipe" });
    expect(await new Response(piped.stdout).text()).not.toContain("\u001b[");
    const terminal = (env: Record<string, string>) =>
      Bun.spawn(["script", "-qec", `'${process.execPath}' src/main.ts version --help`, "/dev/null"], { cwd: ROOT, env: { ...process.env, ...env }, stdin: "ignore", stdout: "pipe" });
    const plain = terminal({ NO_COLOR: "yes" });
    expect(await new Response(plain.stdout).text()).not.toContain("\u001b[");
    const coloured = terminal({ NO_COLOR: "", TERM: "xterm", CI: "", TEST: "" });
    expect(await new Response(coloured.stdout).text()).toContain("\u001b[");
  });
});

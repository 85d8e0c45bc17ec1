import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { chatRequestId, createAccount, MANAGER_RESOURCES, type CreatedAccount } from "../helpers/owner-ops.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { runRouterCommand } from "../helpers/router-command.ts";

// Issue 17 (CLI): `router requests [filters] [--follow]`, `router requests show ID`,
// `router keys test ID` and `router route MODEL [--account A]`, each a real
// `bun src/main.ts …` process against an in-process router, as test/e2e/cli.test.ts.
const ROOT = join(import.meta.dir, "..", "..");

let router: TestRouter;
let upstream: MockUpstream;
let refusing: MockUpstream;
let manager: CreatedAccount;
let child: CreatedAccount;
let goodKey: { id: number };
let badKey: { id: number };
let failedCall = "";
let childCall = "";

interface Result {
  exitCode: number;
  stdout: string;
  stderr: string;
}

async function cli(args: string[], key = router.ownerKey): Promise<Result> {
  const result = await runRouterCommand(args, { env: { ROUTER_URL: router.url, ROUTER_KEY: key } });
  expect(result.stdout + result.stderr).not.toContain(key);
  return result;
}

function ok(result: Result): string {
  expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: "" });
  return result.stdout;
}

const rows = (table: string) =>
  table
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s{2,}/));

const answer = (model: string) =>
  json({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
  });

const call = (key: string, model: string) => chatRequestId(router, key, model);

beforeAll(async () => {
  router = await startRouter();
  upstream = startMockUpstream()
    .route("POST", "/v1/chat/completions", (request) => answer((request.json as { model: string }).model))
    .route("GET", "/v1/models", () => json({ object: "list", data: [{ id: "m1" }] }));
  refusing = startMockUpstream()
    .route("POST", "/v1/chat/completions", () => json({ error: { message: "upstream exploded" } }, 500))
    .route("GET", "/v1/models", () => json({ error: { message: "bad key" } }, 401));
  goodKey = await addKey(router, { provider: `${upstream.url}/v1`, name: "good-key", noSleep: true });
  badKey = await addKey(router, { provider: `${refusing.url}/v1`, name: "bad-key", level: 2, noSleep: true });
  await router.deps.settings.update({ MODEL_MAPPER: "alias*=real-model", LEVEL_MAPPER: "broken-*=2" });
  manager = await createAccount(router, { CreditGranted: 10, Resources: `${MANAGER_RESOURCES},/x-route`, Name: "cli-lead" });
  child = await createAccount(router, { CreditGranted: 1, Name: "cli-child" }, manager.key);
  await call(router.ownerKey, "model-a");
  failedCall = await call(router.ownerKey, "broken-model");
  childCall = await call(child.key, "model-c");
  await router.deps.usageRecorder.flush();
});

afterAll(async () => {
  await upstream?.stop();
  await refusing?.stop();
  await router?.stop();
});

describe("router requests", () => {
  test("lists calls as a table, newest first; filters; --json", async () => {
    const table = rows(ok(await cli(["requests"])));
    expect(table[0]).toEqual(["TIME", "ACCOUNT", "MODEL", "STATUS", "TOKENS", "COST", "DURATION", "TTFB", "REQUEST ID"]);
    expect(table).toHaveLength(4);
    expect(table[1]!.at(-1)).toBe(childCall);

    const failed = rows(ok(await cli(["requests", "--status", "5xx"])));
    expect(failed).toHaveLength(2);
    expect(failed[1]!.at(-1)).toBe(failedCall);
    const byKey = JSON.parse(ok(await cli(["requests", "--key-id", String(badKey.id), "--json"])));
    expect(byKey.map((r: { request_id: string }) => r.request_id)).toEqual([failedCall]);

    // A manager: its subtree only; the key filter is the owner's.
    const lead = JSON.parse(ok(await cli(["requests", "--json"], manager.key)));
    expect(lead.map((r: { request_id: string }) => r.request_id)).toEqual([childCall]);
    const refused = await cli(["requests", "--key-id", "1"], manager.key);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain("HTTP 403");
  });

  test("show ID: the call in full with its attempts; key names for owners only", async () => {
    const out = ok(await cli(["requests", "show", failedCall]));
    expect(out).toContain(`Request ID       ${failedCall}`);
    expect(out).toContain("broken-model");
    const attempts = rows(out.slice(out.indexOf("attempts:") + "attempts:".length));
    expect(attempts[0]).toEqual(["#", "ANSWERED", "KEY", "LEVEL", "STATUS", "ERROR", "DURATION", "MESSAGE"]);
    expect(attempts[1]!.slice(2, 5)).toEqual([`bad-key #${badKey.id}`, "2", "500"]);

    const asLead = ok(await cli(["requests", "show", childCall], manager.key));
    expect(asLead).not.toContain("KEY");
    expect(asLead).not.toContain("good-key");
    expect(JSON.parse(ok(await cli(["requests", "show", childCall, "--json"]))).attempts[0]).toMatchObject({ key_id: goodKey.id, answered: true });

    const missing = await cli(["requests", "show", "req_nothing"]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toContain("HTTP 404");
    const noId = await cli(["requests", "show"]);
    expect(noId.exitCode).toBe(2);
    expect(noId.stderr).toContain("missing argument ID");
    const unknown = await cli(["requests", "frobnicate"]);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('unknown command "frobnicate"');
  });

  test("--follow prints the newest calls, then each new call once as it is recorded", async () => {
    const proc = Bun.spawn([process.execPath, "src/main.ts", "requests", "--follow", "--interval", "1", "--size", "2"], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: "1", ROUTER_URL: router.url, ROUTER_KEY: router.ownerKey },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    let output = "";
    const decoder = new TextDecoder();
    const reader = proc.stdout.getReader();
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        output += decoder.decode(value);
      }
    })();
    try {
      await waitFor(() => output.includes(childCall), 10_000, "the newest calls");
      expect(output.split("\n")[0]).toStartWith("TIME");
      // The two newest, oldest first: the failed call, then the child's.
      expect(output.indexOf(failedCall)).toBeLessThan(output.indexOf(childCall));
      const fresh = await call(router.ownerKey, "follow-model");
      await router.deps.usageRecorder.flush();
      await waitFor(() => output.includes(fresh), 10_000, "the new call");
      await Bun.sleep(1500);
      expect(output.split(fresh).length).toBe(2);
      expect(output.split(childCall).length).toBe(2);
    } finally {
      proc.kill();
      await proc.exited;
      await reading.catch(() => {});
    }
    const bad = await cli(["requests", "--follow", "--page", "2"]);
    expect(bad.exitCode).toBe(2);
  }, 30_000);
});

describe("router keys test", () => {
  test("a working key: exit 0 with the message; a refused key: exit 1 with the upstream's 401 in words", async () => {
    const good = ok(await cli(["keys", "test", String(goodKey.id)]));
    expect(good).toMatch(/OK\s+yes/);
    expect(good).toMatch(/Status\s+200/);
    const bad = await cli(["keys", "test", String(badKey.id), "--json"]);
    expect(bad.exitCode).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ ok: false, status: 401 });
    expect((await cli(["keys", "test", "abc"])).exitCode).toBe(2);
  });
});

describe("router route", () => {
  test("explains the mapper steps, the Level and the key a call would take; a refusing rule; usage errors", async () => {
    const out = ok(await cli(["route", "alias-x"]));
    expect(out).toContain("alias* -> real-model");
    expect(out).toMatch(/Effective model\s+real-model/);
    expect(out).toContain("Level 1: not switched");
    expect(out).toMatch(new RegExp(`good-key #${goodKey.id}\\s+ready\\s+<- this one`));
    const limited = await createAccount(router, { CreditGranted: 1, AllowModels: "other-*" });
    const refused = JSON.parse(ok(await cli(["route", "alias-x", "--account", String(limited.id), "--json"])));
    expect(refused).toMatchObject({ allowed: false, refused_by: { rule: "AllowModels" } });
    // A manager sees Levels and states, not key names.
    const lead = ok(await cli(["route", "model-c", "--account", String(child.id)], manager.key));
    expect(lead).not.toContain("good-key");
    expect(lead).toContain("<- this one");
    expect((await cli(["route"])).exitCode).toBe(2);
    expect((await cli(["route", "m", "--format", "cobol"])).exitCode).toBe(2);
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { BINARY } from "../helpers/binary.ts";
import { api } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

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

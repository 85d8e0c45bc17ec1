import { afterAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { api } from "../helpers/owner-ops.ts";
import { tempDir, waitFor } from "../helpers/router.ts";
import type { CommandResult } from "../helpers/router-command.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * What README.md and docs/api.md promise, checked against the router (a review of the
 * documents): the first groups failed before their fixes; the last holds claims the
 * review checked and found right, kept where no other test held them.
 */

const scope = perTest();
const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");

/**
 * `router <args>` from source, run in an empty directory of its own: a command that
 * wrongly fell back to its default `./data` touches nothing of the checkout.
 */
async function routerIn(cwd: string, args: readonly string[]): Promise<CommandResult> {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1" };
  for (const name of Object.keys(env)) if (name.startsWith("ROUTER_")) delete env[name];
  const proc = Bun.spawn([process.execPath, MAIN, ...args], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { exitCode, stdout, stderr };
}

/** A usage error: exit 2, nothing on stdout, one `router: …` line on stderr holding `says`. */
function usageError(result: CommandResult, says: RegExp): void {
  expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toMatchObject({ exitCode: 2, stdout: "" });
  const lines = result.stderr.trim().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(says);
}

/** A port something else listens on: `serve` stops there (exit 1) once its flags are read. */
function busyPort(): number {
  const holder = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  scope.later(() => holder.stop(true));
  return holder.port;
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) expect(existsSync(join(dir, "data"))).toBe(false);
});
const emptyDir = () => {
  const dir = tempDir("router-review-docs-");
  dirs.push(dir);
  return dir;
};

describe("README: a flag without its value is a usage error everywhere, the local commands included", () => {
  // `--data "$DIR"` with DIR unset reaches the command as a bare `--data`: serve started
  // on ./data (a new deployment, a new owner key) and backup copied ./data's database.
  test("serve, backup, migrate, migrate-data and owner create refuse a bare --data, --secret-key-file, --out, --from", async () => {
    const cwd = emptyDir();
    const port = String(busyPort());
    usageError(await routerIn(cwd, ["serve", "--port", port, "--data"]), /--data needs a value/);
    usageError(await routerIn(cwd, ["serve", "--port", port, "--secret-key-file="]), /--secret-key-file needs a value/);
    usageError(await routerIn(cwd, ["backup", "--out", join(cwd, "copy.db"), "--data"]), /--data needs a value/);
    usageError(await routerIn(cwd, ["backup", "--out="]), /--out needs a value/);
    usageError(await routerIn(cwd, ["migrate", "--data"]), /--data needs a value/);
    usageError(await routerIn(cwd, ["migrate-data", "--from"]), /--from needs a value/);
    usageError(await routerIn(cwd, ["owner", "create", "--email", "second@example.com", "--data"]), /--data needs a value/);
  }, 30_000);
});

describe("README: serve's timeouts are seconds the runtime's timers can hold", () => {
  // A timer past 2^31-1 ms fires at once in Bun (TimeoutOverflowWarning, 1 ms): a
  // `--first-byte-timeout` of 25 days meant to say "wait as long as it takes" made every
  // call a 502 upstream_timeout, and `--grace` of that size cut in-flight calls at once.
  test("--first-byte-timeout, --stream-idle-timeout, --drain-timeout and --grace past 2,000,000 are usage errors naming the bound", async () => {
    const cwd = emptyDir();
    const port = String(busyPort());
    for (const flag of ["first-byte-timeout", "stream-idle-timeout", "drain-timeout", "grace"]) {
      usageError(await routerIn(cwd, ["serve", "--port", port, `--${flag}`, "2200000"]), new RegExp(`--${flag} must be an integer from \\d+ to 2000000, got "2200000"`));
    }
    // The bound itself is accepted: serve goes on to the busy port and stops there.
    const atBound = await routerIn(cwd, ["serve", "--port", port, "--first-byte-timeout", "2000000", "--data", join(cwd, "d")]);
    expect(atBound.exitCode).toBe(1);
    expect(atBound.stderr).toContain(port);
  }, 30_000);
});

describe("docs/api.md, Request log: Anthropic-format answers carry request-id as well as X-Request-Id", () => {
  // The Anthropic SDKs read `request-id` (message._request_id, APIError.requestID), and
  // Claude Code prints it: that id must be the one GET /x-requests/{id} knows.
  test("an answer, an upstream error passed on and a refusal on /v1/messages; not on other families", async () => {
    const { router, upstream } = await scope.gateway();
    let status = 200;
    upstream.route("POST", "/v1/messages", () =>
      status === 200
        ? Response.json({ id: "msg_1", type: "message", role: "assistant", model: "claude-x", content: [{ type: "text", text: "hi" }], stop_reason: "end_turn", usage: { input_tokens: 3, output_tokens: 1 } })
        : Response.json({ type: "error", error: { type: "invalid_request_error", message: "bad" } }, { status: 400 }),
    );
    const body = JSON.stringify({ model: "claude-x", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
    const call = (path: string, key?: string | null) => router.fetch(path, { method: "POST", key, headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" }, body });
    const seen: Array<[number, string | null, string | null]> = [];
    for (const res of [await call("/v1/messages"), ((status = 400), await call("/v1/messages")), await call("/v1/messages", "sk-rt-unknown")]) {
      await res.arrayBuffer();
      seen.push([res.status, res.headers.get("x-request-id"), res.headers.get("request-id")]);
    }
    expect(seen.map(([s]) => s)).toEqual([200, 400, 401]);
    for (const [, xid, rid] of seen) {
      expect(xid).toMatch(/^req_[0-9a-f]{32}$/);
      expect(rid).toBe(xid);
    }
    // The id an Anthropic client reads is the one the request log files the call under.
    const logged = await waitFor(async () => {
      const reply = await api(router, `/x-requests/${seen[0]![2]}`);
      return reply.status === 200 ? reply : undefined;
    }, 5000, "the call's request-log record");
    expect(logged!.body.family).toBe("anthropic");
    // Other families keep their own single header.
    const openai = await router.fetch("/v1/models");
    expect(openai.headers.get("x-request-id")).toMatch(/^req_/);
    expect(openai.headers.get("request-id")).toBeNull();
  });
});

describe("docs/api.md, Upstream address policy: a refused URL says which address and why, in a sentence", () => {
  // An address typed as an IP literal read "it points at 169.254.169.254 is a cloud
  // metadata service": two sentences run together where the owner looks for the reason.
  test("Provider and, in the BYOK style, EMAIL_SMTP", async () => {
    const single = await scope.router();
    const refusal = async (r: Awaited<ReturnType<typeof scope.router>>, body: Record<string, unknown>, path = "/x-keys", method = "POST") => {
      const reply = await api(r, path, { method, body });
      expect(reply.status).toBe(400);
      return reply.body.error.message as string;
    };
    const key = (Provider: string) => ({ Provider, SecretKey: "x".repeat(30), Level: 1, Status: true });
    expect(await refusal(single, key("https://169.254.169.254"))).toBe("Provider may not be used: 169.254.169.254 is a cloud metadata service, which is never an upstream");
    expect(await refusal(single, key("https://0.0.0.0/v1"))).toBe("Provider may not be used: 0.0.0.0 is an unspecified address, which is never an upstream");
    const byok = await scope.router({ config: { byok: true } });
    expect(await refusal(byok, { EMAIL_SMTP: "10.1.2.3" }, "/x-config", "PUT")).toBe(
      "EMAIL_SMTP may not be 10.1.2.3: 10.1.2.3 is a private-network address; this router refuses private and loopback upstreams (its operator may allow them with --allow-private-upstreams)",
    );
    // Names keep saying what they resolve to.
    expect(await refusal(byok, key("https://localhost"))).toStartWith("Provider may not be used: localhost is loopback: 127.0.0.1 is a loopback address;");
  });
});

describe("GET /openapi.json: what it says needs no key answers without one", () => {
  // /metrics was published with `security: []` ("No key needed"), so a client generated
  // from the document called it without credentials and got 401: it takes an owner key or
  // the --metrics-token bearer (docs/api.md, "Metrics").
  test("every operation without security is served without a key; /metrics asks for the bearer", async () => {
    const router = await scope.router({ config: { metricsToken: "metrics-token-0123456789" } });
    const doc = (await api(router, "/openapi.json", { key: null })).body;
    const open: string[] = [];
    for (const [path, methods] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) if (Array.isArray(op.security) && op.security.length === 0) open.push(`${method} ${path}`);
    }
    expect(open.length).toBeGreaterThan(0);
    for (const op of open) {
      const [method, path] = op.split(" ") as [string, string];
      expect({ op, status: (await router.fetch(path, { method: method.toUpperCase(), key: null })).status }).toEqual({ op, status: 200 });
    }
    expect(open).not.toContain("get /metrics");
    expect(doc.paths["/metrics"].get.description).toContain("--metrics-token");
    expect((await router.fetch("/metrics", { key: "metrics-token-0123456789" })).status).toBe(200);
  });
});

describe("docs/api.md, Idempotent writes: a request without a valid API key is refused (401) as without the header", () => {
  // A malformed Idempotency-Key was judged before the API key: a script with a rotated key
  // was told to fix the header (400), and only then that its key no longer works.
  test("401 comes before the header's 400; a caller with a valid key still gets the 400; sign-up, which takes no key, ignores it", async () => {
    const router = await scope.router({ config: { byok: true, signup: true } });
    const write = (key: string | null, idempotencyKey: string) =>
      router.fetch("/x-news", { method: "POST", key, headers: { "content-type": "application/json", "idempotency-key": idempotencyKey }, body: JSON.stringify({ title: "t", content: "c" }) });
    const codeOf = async (res: Promise<Response>) => {
      const answer = await res;
      return [answer.status, ((await answer.json()) as any).error?.code] as const;
    };
    expect(await codeOf(write("sk-rt-unknown0000000000000000000000000000000000000", "has space"))).toEqual([401, "invalid_api_key"]);
    expect(await codeOf(write(null, "has space"))).toEqual([401, "missing_api_key"]);
    expect(await codeOf(write(router.ownerKey, "has space"))).toEqual([400, "invalid_idempotency_key"]);
    const signup = await router.fetch("/x-signup", { method: "POST", key: null, headers: { "content-type": "application/json", "idempotency-key": "has space" }, body: JSON.stringify({ Email: "new-owner@example.com" }) });
    expect(signup.status).toBe(201);
  });
});

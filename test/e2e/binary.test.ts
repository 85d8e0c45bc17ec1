import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, run, serveBinary, type ServingBinary } from "../helpers/binary.ts";
import pkg from "../../package.json" with { type: "json" };

// The compiled executable, copied alone into an empty directory: no node_modules,
// no sources, no migrations folder. Everything it needs must be inside it.
const { dir, bin } = isolatedBinary();
const running: ServingBinary[] = [];
afterAll(() => {
  for (const server of running) server.kill("SIGKILL");
});

describe("dist/router alone in an empty directory", () => {
  test("--version and version print the package version", () => {
    expect(run(bin, ["--version"], { cwd: dir }).stdout.trim()).toBe(pkg.version);
    const version = run(bin, ["version"], { cwd: dir });
    expect(version.exitCode).toBe(0);
    expect(version.stdout.trim()).toBe(`router ${pkg.version}`);
  });

  test("every command has --help", () => {
    for (const args of [["--help"], ["serve", "--help"], ["owner", "create", "--help"], ["migrate", "--help"], ["version", "--help"]]) {
      const result = run(bin, args, { cwd: dir });
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toContain("USAGE");
    }
  });

  test("serve on port 0 prints its address, creates the first owner in ./data and serves", async () => {
    const server = await serveBinary(bin, ["--port", "0"], { cwd: dir });
    running.push(server);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.stdout()).toContain("data/initial-owner-key");
    const key = readFileSync(join(dir, "data", "initial-owner-key"), "utf8").trim();
    expect(server.stdout() + server.stderr()).not.toContain(key);
    expect(statSync(join(dir, "data", "secret.key")).mode & 0o777).toBe(0o600);

    const health = await fetch(`${server.url}/healthz`);
    expect(await health.json()).toEqual({ status: "ok", database: "embedded", redis: "embedded" });
    // The start line names the console too, and a browser opening the address lands on it.
    expect(server.stdout()).toContain(`router listening on ${server.url} (console: ${server.url}/console/)`);
    const root = await fetch(`${server.url}/`, { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/console/");
    expect((await fetch(`${server.url}/`)).headers.get("content-type")).toContain("text/html");
    const status = await fetch(`${server.url}/dashboard/status`, { headers: { authorization: `Bearer ${key}` } });
    expect((await status.json()).isOwner).toBe(true);

    // owner create against the live data dir: the running server accepts the key at once.
    const created = run(bin, ["owner", "create", "--email", "second@example.com", "--data", "data"], { cwd: dir });
    expect(created.exitCode).toBe(0);
    const lines = created.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const second = await fetch(`${server.url}/dashboard/status`, { headers: { authorization: `Bearer ${lines[0]}` } });
    expect(second.status).toBe(200);
    expect((await second.json()).email).toBe("second@example.com");

    const again = run(bin, ["owner", "create", "--email", "second@example.com", "--data", "data"], { cwd: dir });
    expect(again.exitCode).not.toBe(0);
    expect(again.stdout).toBe("");
    expect(again.stderr).toContain("already used");
    const invalid = run(bin, ["owner", "create", "--email", "not-an-email", "--data", "data"], { cwd: dir });
    expect(invalid.exitCode).not.toBe(0);
    expect(invalid.stderr).toContain("not a valid address");

    // A second server on the same port must fail loudly, not share the port.
    const port = new URL(server.url).port;
    const clash = run(bin, ["serve", "--port", port, "--data", "data2"], { cwd: dir });
    expect(clash.exitCode).not.toBe(0);
    expect(clash.stderr).toContain("already in use");
    expect(clash.stderr).not.toContain("    at ");
    // It failed before creating anything: no database, no owner key.
    expect(existsSync(join(dir, "data2", "router.db"))).toBe(false);
    expect(existsSync(join(dir, "data2", "initial-owner-key"))).toBe(false);

    server.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  });

  test("ROUTER_* environment variables configure serve; a data directory others may read is tightened, with a notice", async () => {
    // A clone leaves data/ at 0755 (umask 022).
    mkdirSync(join(dir, "envdata"), { mode: 0o755 });
    chmodSync(join(dir, "envdata"), 0o755);
    const server = await serveBinary(bin, [], { cwd: dir, env: { ROUTER_PORT: "0", ROUTER_DATA: "envdata" } });
    running.push(server);
    expect(statSync(join(dir, "envdata", "router.db")).isFile()).toBe(true);
    expect(statSync(join(dir, "envdata")).mode & 0o777).toBe(0o700);
    expect(server.stdout()).toContain("tightened to 700");
    server.kill("SIGINT");
    expect(await server.exited).toBe(0);
  });

  test("WAL checkpoints run on the executable's own worker thread, and what was written survives a restart", async () => {
    const server = await serveBinary(bin, ["--port", "0", "--data", "ckdata", "--log-level", "debug"], { cwd: dir });
    running.push(server);
    const key = readFileSync(join(dir, "ckdata", "initial-owner-key"), "utf8").trim();
    // Writes after start-up go to the WAL; the worker copies them into the database file.
    const saved = await fetch(`${server.url}/x-config`, {
      method: "PUT",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ MODEL_MAPPER: { "wal-*": "wal-model" } }),
    });
    expect(saved.status).toBe(200);
    const deadline = Date.now() + 5000;
    while (!server.stderr().includes("WAL checkpoints run on their own thread") && Date.now() < deadline) await Bun.sleep(50);
    expect(server.stderr()).toContain("WAL checkpoints run on their own thread");
    expect(server.stderr()).not.toContain("back on the serving thread");
    // The request log's rows, on the executable's own writer thread, into their own file.
    while (!server.stderr().includes("request-log rows are written on their own thread") && Date.now() < deadline) await Bun.sleep(50);
    expect(server.stderr()).toContain("request-log rows are written on their own thread");
    const refused = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] }),
    });
    const requestId = refused.headers.get("x-request-id")!;
    expect(refused.status).toBeGreaterThanOrEqual(400);
    let logged: Response | undefined;
    for (const until = Date.now() + 5000; Date.now() < until; await Bun.sleep(50)) {
      logged = await fetch(`${server.url}/x-requests/${requestId}`, { headers: { authorization: `Bearer ${key}` } });
      if (logged.status === 200) break;
    }
    expect(logged?.status).toBe(200);
    expect(await logged!.json()).toMatchObject({ status: refused.status });
    expect(existsSync(join(dir, "ckdata", "router-requests.db"))).toBe(true);
    server.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    const again = await serveBinary(bin, ["--port", "0", "--data", "ckdata"], { cwd: dir });
    running.push(again);
    const config = await fetch(`${again.url}/x-config`, { headers: { authorization: `Bearer ${key}` } });
    expect(JSON.stringify(await config.json())).toContain("wal-model");
    again.kill("SIGTERM");
    expect(await again.exited).toBe(0);
  });

  test("migrate applies the embedded migrations", () => {
    const first = run(bin, ["migrate", "--data", "migrated"], { cwd: dir });
    expect(first.exitCode).toBe(0);
    expect(first.stdout).toContain("applied 0000_");
    expect(run(bin, ["migrate", "--data", "migrated"], { cwd: dir }).stdout).toContain("up to date");
  });

  test("backup copies the database on the executable's own worker thread", () => {
    expect(run(bin, ["migrate", "--data", "tobackup"], { cwd: dir }).exitCode).toBe(0);
    const result = run(bin, ["backup", "--data", "tobackup", "--out", "copy.db"], { cwd: dir });
    expect(result.stderr).not.toContain("failed");
    expect(result.exitCode).toBe(0);
    const copy = new Database(join(dir, "copy.db"), { readonly: true });
    expect(copy.query<{ n: number }, []>("SELECT count(*) AS n FROM schema_migrations").get()?.n).toBeGreaterThan(0);
    copy.close();
  });

  test("bad input exits non-zero with one clear line and no stack trace", () => {
    writeFileSync(join(dir, "a-file"), "x");
    const cases: Array<[string[], RegExp]> = [
      [["serve", "--prot", "80"], /unknown flag --prot/],
      [["serve", "--port", "x"], /--port must be an integer/],
      [["serve", "--data", "a-file", "--port", "0"], /not a directory/],
      [["serve", "--timezone", "Nowhere/City"], /unknown time zone/],
      [["owner", "create"], /--email is required/],
      [["frobnicate"], /unknown command "frobnicate"/],
    ];
    for (const [args, message] of cases) {
      const result = run(bin, args, { cwd: dir });
      expect(result.exitCode).not.toBe(0);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toContain("    at ");
    }
  });
});

describe("the executable's fetch concurrency", () => {
  test("serve raises Bun's 256-request fetch limit itself: 300 upstream calls are open at once", async () => {
    const { startMockUpstream, json } = await import("../helpers/mock-upstream.ts");
    const upstream = startMockUpstream();
    let open = 0;
    let peak = 0;
    upstream.route("POST", "/v1/chat/completions", async () => {
      open++;
      peak = Math.max(peak, open);
      await Bun.sleep(1500);
      open--;
      return json({ id: "c", object: "chat.completion", created: 1, model: "m", choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
    });
    const server = await serveBinary(bin, ["--port", "0", "--data", "concurrency"], { cwd: dir });
    running.push(server);
    try {
      const key = readFileSync(join(dir, "concurrency", "initial-owner-key"), "utf8").trim();
      const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
      await fetch(`${server.url}/x-config`, { method: "PUT", headers: auth, body: JSON.stringify({ PRICING: { ChatPricing: { "*": { InputText: 0, OutputText: 0 } } } }) });
      const added = await fetch(`${server.url}/x-keys`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ Provider: `${upstream.url}/v1`, SecretKey: "concurrency-secret-0123456789", Level: 1, Status: true }),
      });
      expect(added.status).toBe(201);
      // This test process is itself limited to 256 fetches; a client with the limit raised sends the 300.
      const client = `const u=process.argv[1],k=process.argv[2];const r=await Promise.all(Array.from({length:300},()=>fetch(u,{method:"POST",headers:{authorization:"Bearer "+k},body:'{"model":"m","messages":[]}'}).then(x=>x.status)));console.log(r.filter(s=>s===200).length)`;
      const proc = Bun.spawn([process.execPath, "-e", client, `${server.url}/v1/chat/completions`, key], {
        env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "1000" },
        stdout: "pipe",
      });
      const ok = Number((await new Response(proc.stdout).text()).trim());
      expect(ok).toBe(300);
      expect(peak).toBeGreaterThan(256);
    } finally {
      server.kill("SIGTERM");
      await server.exited;
      await upstream.stop();
    }
  }, 30_000);
});

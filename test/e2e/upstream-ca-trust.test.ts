import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { isolatedBinary, serveBinary, type ServingBinary } from "../helpers/binary.ts";
import { json, startMockUpstream } from "../helpers/mock-upstream.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { testCertificates } from "../helpers/tls.ts";

// Issue 19: --upstream-ca-file is trusted by the runtime itself (the executable re-launches
// with NODE_EXTRA_CA_CERTS naming a private bundle), not passed to every fetch, and the
// operator's own NODE_EXTRA_CA_CERTS is kept beside it.
const { dir, bin } = isolatedBinary();
const running: ServingBinary[] = [];
afterAll(() => {
  for (const server of running) server.kill("SIGKILL");
});

/** A CA of the operator's own, unrelated to the upstream's, as PEM in a file. */
function operatorCa(): { file: string; pem: string } {
  const work = tempDir("operator-ca-");
  const file = join(work, "operator.pem");
  const made = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", join(work, "k.pem"), "-out", file, "-days", "2", "-subj", "/CN=operator CA"]);
  expect(made.exitCode).toBe(0);
  return { file, pem: readFileSync(file, "utf8") };
}

/** The environment of a running process, as the kernel holds it. */
const environOf = (pid: number) =>
  Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
  );

describe("--upstream-ca-file", () => {
  test("the runtime trusts the flag's CA and the operator's own extra CAs; calls to the private-CA upstream work; the bundle goes when the router stops", async () => {
    const operator = operatorCa();
    const upstreamCa = testCertificates().caFile;
    const upstream = startMockUpstream();
    upstream.route("POST", "/v1/chat/completions", () =>
      json({ id: "c", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }),
    );
    // The upstream's CA comes only through the flag: the environment names the operator's CA alone.
    const server = await serveBinary(bin, ["--port", "0", "--data", "ca-trust", "--upstream-ca-file", upstreamCa], { cwd: dir, env: { NODE_EXTRA_CA_CERTS: operator.file } });
    running.push(server);
    try {
      const env = environOf(server.proc.pid);
      const bundle = env.NODE_EXTRA_CA_CERTS!;
      expect(bundle).not.toBe(operator.file);
      expect(env.ROUTER_UPSTREAM_CA_MERGED).toBe(upstreamCa);
      const pem = readFileSync(bundle, "utf8");
      expect(pem).toContain(operator.pem.trim());
      expect(pem).toContain(readFileSync(upstreamCa, "utf8").trim());
      expect(statSync(bundle).mode & 0o777).toBe(0o600);
      expect(statSync(dirname(bundle)).mode & 0o777).toBe(0o700);
      // Named with the router's PID namespace and pid (kept across the re-launch), so a later start can tell it is gone.
      expect(basename(dirname(bundle))).toMatch(new RegExp(`^router-ca-\\d+-${server.proc.pid}-`));

      const key = readFileSync(join(dir, "ca-trust", "initial-owner-key"), "utf8").trim();
      const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
      await fetch(`${server.url}/x-config`, { method: "PUT", headers: auth, body: JSON.stringify({ PRICING: { ChatPricing: { "*": { InputText: 0, OutputText: 0 } } } }) });
      const added = await fetch(`${server.url}/x-keys`, { method: "POST", headers: auth, body: JSON.stringify({ Provider: `${upstream.url}/v1`, SecretKey: "ca-trust-secret-0123456789", Level: 1, Status: true }) });
      expect(added.status).toBe(201);
      const call = await fetch(`${server.url}/v1/chat/completions`, { method: "POST", headers: auth, body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }) });
      expect(call.status).toBe(200);
      expect(upstream.requests).toHaveLength(1);

      server.kill("SIGTERM");
      expect(await server.exited).toBe(0);
      expect(existsSync(dirname(bundle))).toBe(false);
    } finally {
      server.kill("SIGKILL");
      await upstream.stop();
    }
  }, 30_000);

  test("a router killed outright leaves its bundle, and the next router started with the flag removes it", async () => {
    const upstreamCa = testCertificates().caFile;
    const first = await serveBinary(bin, ["--port", "0", "--data", "ca-killed-1", "--upstream-ca-file", upstreamCa], { cwd: dir });
    running.push(first);
    const left = dirname(environOf(first.proc.pid).NODE_EXTRA_CA_CERTS!);
    first.kill("SIGKILL");
    await first.exited;
    expect(existsSync(left)).toBe(true);
    const second = await serveBinary(bin, ["--port", "0", "--data", "ca-killed-2", "--upstream-ca-file", upstreamCa], { cwd: dir });
    running.push(second);
    try {
      expect(existsSync(left)).toBe(false);
      expect(existsSync(environOf(second.proc.pid).NODE_EXTRA_CA_CERTS!)).toBe(true);
    } finally {
      second.kill("SIGTERM");
      await second.exited;
    }
  }, 30_000);

  test("a CA file that cannot be read is refused by serve as before, without a re-launch", async () => {
    const result = Bun.spawnSync([bin, "serve", "--port", "0", "--data", "ca-missing", "--upstream-ca-file", join(dir, "no-such-ca.pem")], { cwd: dir, env: { PATH: "/usr/bin:/bin", HOME: dir } });
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr.toString()).toContain("--upstream-ca-file");
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createSealer, loadOrCreateSecretKey } from "../../src/store/crypto.ts";
import { takeRekeyLock } from "../../src/store/serving-lock.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api } from "../helpers/owner-ops.ts";
import { runRouterCommand } from "../helpers/router-command.ts";
import { startRouter, tempDir, waitFor, type TestRouter } from "../helpers/router.ts";
import { skipServices } from "../helpers/postgres-server.ts";
import { startScaleOutPair, type ScaleOutPair } from "../helpers/scale-out-pair.ts";
import { openaiClient } from "../helpers/sdk.ts";
import { serveOnce } from "../helpers/serve-once.ts";

/**
 * Rotating the sealing key (README, "Rotating the sealing key"): `router rekey` re-seals
 * every stored secret with a new key in one transaction, instances accept a fallback key
 * while a rotation is under way, and the old key is refused once it is done.
 */

const SECRET = "sk-rekey-upstream-secret-0123456789abcdef";
const EMAIL_PASS = "smtp-password-rekey-42";

function chatUpstream(): MockUpstream {
  const upstream = startMockUpstream();
  upstream.route("POST", "/v1/chat/completions", (req) =>
    json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }),
  );
  return upstream;
}

/** One chat call through the OpenAI SDK; the upstream's last request must carry the provider secret. */
async function callServes(router: TestRouter, upstream: MockUpstream): Promise<void> {
  const before = upstream.requests.length;
  const answer = await openaiClient(router.url, router.ownerKey).chat.completions.create({ model: "acme-1", messages: [{ role: "user", content: "hi" }] });
  expect(answer.choices[0]!.message.content).toBe("ok");
  expect(upstream.requests.length).toBe(before + 1);
  expect(upstream.requests.at(-1)!.headers.get("authorization")).toBe(`Bearer ${SECRET}`);
}

/** A single-machine deployment with a provider key, EMAIL_PASS and a kept idempotent answer, stopped. */
async function seededDeployment(upstream: MockUpstream): Promise<string> {
  const dataDir = tempDir("router-rekey-");
  const router = await startRouter({ dataDir });
  try {
    await api(router, "/x-config", { method: "PUT", body: { PRICING: { ChatPricing: { "*": { InputText: 0, OutputText: 0 } } }, EMAIL_PASS } });
    const created = await router.fetch("/x-keys", {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": "add-upstream-1" },
      body: JSON.stringify({ Provider: `${upstream.url}/v1`, SecretKey: SECRET, Level: 1, Status: true }),
    });
    expect(created.status).toBe(201);
    await callServes(router, upstream);
  } finally {
    await router.stop();
  }
  return dataDir;
}

/** Every stored value the rekey may change, as stored. */
function storedValues(dataDir: string): string[] {
  const db = new Database(join(dataDir, "router.db"), { readonly: true });
  try {
    const rows = [
      ...db.query("SELECT secret_sealed AS a, partial_key AS b FROM provider_keys ORDER BY id").all(),
      ...db.query("SELECT value AS a, '' AS b FROM settings ORDER BY tenant_id, key").all(),
      ...db.query("SELECT body AS a, fingerprint AS b FROM idempotency_keys ORDER BY account_id, key").all(),
    ] as Array<{ a: string | null; b: string }>;
    return rows.flatMap((row) => [String(row.a), row.b]);
  } finally {
    db.close();
  }
}

describe("router rekey on a single machine (SQLite)", () => {
  let upstream: MockUpstream;
  beforeAll(() => {
    upstream = chatUpstream();
  });
  afterAll(async () => {
    await upstream.stop();
  });

  test("re-seals every secret: a router started with the new key serves calls with them; the old key is refused at start", async () => {
    const dataDir = await seededDeployment(upstream);
    const oldKeyFile = join(dataDir, "secret.key");
    const newKeyFile = join(dataDir, "new.key");
    const rekeyed = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", newKeyFile]);
    expect(rekeyed.stderr).toBe("");
    expect(rekeyed.exitCode).toBe(0);
    expect(rekeyed.stdout).toContain("provider secrets re-sealed: 1");
    expect(rekeyed.stdout).toContain("settings re-sealed: 1");
    expect(rekeyed.stdout).toContain("idempotency answers re-sealed: 1");
    expect(rekeyed.stdout).toContain(`--secret-key-file ${newKeyFile}`);
    // Counts and the next step, never a secret or a key.
    for (const secret of [SECRET, SECRET.slice(-20), EMAIL_PASS, readFileSync(newKeyFile, "utf8").trim(), readFileSync(oldKeyFile, "utf8").trim()]) {
      expect(rekeyed.stdout).not.toContain(secret);
    }
    expect(statSync(newKeyFile).mode & 0o777).toBe(0o600);
    // Nothing stored opens with the old key any more.
    const oldSealer = createSealer(loadOrCreateSecretKey(oldKeyFile));
    for (const value of storedValues(dataDir).filter((v) => v.startsWith("v1:"))) expect(() => oldSealer.open(value)).toThrow();

    const refused = await serveOnce(["--data", dataDir]);
    expect(refused.started).toBe(false);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain("the database holds provider secrets sealed with another key");

    const router = await startRouter({ dataDir, config: { secretKeyFile: newKeyFile } });
    try {
      await callServes(router, upstream);
      expect(router.deps.settings.raw("EMAIL_PASS")).toBe(EMAIL_PASS);
      const listed = await api(router, "/x-keys");
      expect(JSON.stringify(listed.body)).toContain(SECRET.slice(-20));
    } finally {
      await router.stop();
    }
  }, 60_000);
});

describe("router rekey in the BYOK style", () => {
  test("every tenant's provider secrets and settings are re-sealed: another owner's calls are served with its own secret after the rotation", async () => {
    const upstream = chatUpstream();
    const dataDir = tempDir("router-rekey-byok-");
    const config = { byok: true, signup: true, allowPrivateUpstreams: true };
    const secretB = "sk-tenant-b-upstream-secret-0123456789";
    let keyB = "";
    const first = await startRouter({ dataDir, config });
    try {
      const signup = await first.fetch("/x-signup", { method: "POST", key: null, body: JSON.stringify({ Email: "b@tenant-b.example" }) });
      expect(signup.status).toBe(201);
      keyB = ((await signup.json()) as { APIKey: string }).APIKey;
      const asB = (path: string, method: string, body: unknown) =>
        first.fetch(path, { method, key: keyB, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      expect((await asB("/x-config", "PUT", { PRICING: { ChatPricing: { "*": { InputText: 0, OutputText: 0 } } }, EMAIL_PASS: "tenant-b-mail-pass" })).status).toBe(200);
      expect((await asB("/x-keys", "POST", { Provider: `${upstream.url}/v1`, SecretKey: secretB, Level: 1, Status: true })).status).toBe(201);
    } finally {
      await first.stop();
    }
    const newKeyFile = join(dataDir, "new.key");
    const rekeyed = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", newKeyFile]);
    expect(rekeyed.exitCode).toBe(0);
    expect(rekeyed.stdout).toContain("provider secrets re-sealed: 1");
    expect(rekeyed.stdout).toContain("settings re-sealed: 1");
    const router = await startRouter({ dataDir, config: { ...config, secretKeyFile: newKeyFile } });
    try {
      const answer = await openaiClient(router.url, keyB).chat.completions.create({ model: "acme-1", messages: [{ role: "user", content: "hi" }] });
      expect(answer.choices[0]!.message.content).toBe("ok");
      expect(upstream.requests.at(-1)!.headers.get("authorization")).toBe(`Bearer ${secretB}`);
    } finally {
      await router.stop();
      await upstream.stop();
    }
  }, 60_000);
});

describe("the start-up sealing check on a single machine", () => {
  test("a deployment whose only secret is EMAIL_PASS: after a rotation the old key is refused at start, the new one starts and opens it", async () => {
    const dataDir = tempDir("router-rekey-mail-");
    const first = await startRouter({ dataDir });
    try {
      expect((await api(first, "/x-config", { method: "PUT", body: { EMAIL_PASS } })).status).toBe(200);
    } finally {
      await first.stop();
    }
    const newKeyFile = join(dataDir, "new.key");
    const rekeyed = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", newKeyFile]);
    expect(rekeyed.exitCode).toBe(0);
    expect(rekeyed.stdout).toContain("settings re-sealed: 1");
    const refused = await serveOnce(["--data", dataDir]);
    expect(refused.started).toBe(false);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain("sealed with another key");
    const router = await startRouter({ dataDir, config: { secretKeyFile: newKeyFile } });
    try {
      expect(router.deps.settings.raw("EMAIL_PASS")).toBe(EMAIL_PASS);
    } finally {
      await router.stop();
    }
  }, 60_000);

  test("a provider key sealed with a key this instance lacks (a rotation half done) stops the start with a line naming the key and the way out, no stack trace", async () => {
    const upstream = chatUpstream();
    try {
      const dataDir = await seededDeployment(upstream);
      const stranger = createSealer(new Uint8Array(32).fill(9));
      const db = new Database(join(dataDir, "router.db"));
      db.query("INSERT INTO provider_keys (name, level, provider, secret_sealed, partial_key, created_at, updated_at) VALUES ('x', 1, ?, ?, ?, 1, 1)").run(
        `${upstream.url}/v1`,
        stranger.seal("sk-stranger-0123456789abcdefghij"),
        stranger.seal("…0123456789abcdefghij"),
      );
      const id = (db.query("SELECT max(id) AS id FROM provider_keys").get() as { id: number }).id;
      db.close();
      const refused = await serveOnce(["--data", dataDir]);
      expect(refused.started).toBe(false);
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toBe(
        `router: provider key ${id} is sealed with a key this instance was not given: give it that key with --fallback-secret-key-file (a rotation under way: README, "Rotating the sealing key"), or enter that secret again\n`,
      );
    } finally {
      await upstream.stop();
    }
  }, 60_000);

  test("a server started while a rekey holds the data directory waits for it to end before it reads anything", async () => {
    const dataDir = tempDir("router-rekey-wait-");
    await (await startRouter({ dataDir })).stop();
    // A rekey under way, as the command holds it (store/serving-lock.ts).
    const rekeying = takeRekeyLock(dataDir)!;
    expect(rekeying).toBeDefined();
    let released = false;
    const serving = serveOnce(["--data", dataDir], async () => released);
    await Bun.sleep(1500);
    rekeying.release();
    released = true;
    const served = await serving;
    expect(served.started).toBe(true);
    expect(served.probed).toBe(true);
  }, 60_000);
});

describe("router rekey refuses, and changes nothing", () => {
  let upstream: MockUpstream;
  let dataDir: string;
  beforeAll(async () => {
    upstream = chatUpstream();
    dataDir = await seededDeployment(upstream);
  });
  afterAll(async () => {
    await upstream.stop();
  });

  test("a value that opens with neither key, met after others were re-sealed: every value stays as it was, no new key file is left", async () => {
    // A provider key sealed with a third key, read last (highest id): the rows before it are re-sealed first, then rolled back.
    const stranger = createSealer(new Uint8Array(32).fill(9));
    const db = new Database(join(dataDir, "router.db"));
    db.query("INSERT INTO provider_keys (name, level, provider, secret_sealed, partial_key, created_at, updated_at) VALUES ('x', 2, 'https://x.example/v1', ?, ?, 1, 1)").run(
      stranger.seal("sk-stranger-0123456789abcdefghij"),
      stranger.seal("…0123456789abcdefghij"),
    );
    const strangerId = (db.query("SELECT max(id) AS id FROM provider_keys").get() as { id: number }).id;
    db.close();
    const before = storedValues(dataDir);
    const newKeyFile = join(dataDir, "failed.key");
    const failed = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", newKeyFile]);
    expect(failed.exitCode).toBe(1);
    expect(failed.stderr).toBe(`router: the provider secret of provider key ${strangerId} opens with neither the old key nor the new one (is --secret-key-file the key the router runs with?); nothing was changed\n`);
    expect(failed.stdout).toBe("");
    expect(storedValues(dataDir)).toEqual(before);
    expect(existsSync(newKeyFile)).toBe(false);
    const fix = new Database(join(dataDir, "router.db"));
    fix.query("DELETE FROM provider_keys WHERE id = ?").run(strangerId);
    fix.close();
  }, 30_000);

  test("while a router runs on the data directory: refused (exit 1), nothing changed; once it stopped, it runs", async () => {
    const router = await startRouter({ dataDir });
    const before = storedValues(dataDir);
    const newKeyFile = join(dataDir, "while-serving.key");
    try {
      const refused = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", newKeyFile]);
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toContain("a router is running on");
      expect(refused.stderr.trim().split("\n")).toHaveLength(1);
      expect(storedValues(dataDir)).toEqual(before);
      expect(existsSync(newKeyFile)).toBe(false);
      await callServes(router, upstream);
    } finally {
      await router.stop();
    }
    const ran = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", newKeyFile]);
    expect(ran.exitCode).toBe(0);
    // Put back for the tests after this one.
    const back = await runRouterCommand(["rekey", "--data", dataDir, "--secret-key-file", newKeyFile, "--new-secret-key-file", join(dataDir, "secret.key")]);
    expect(back.stderr).toBe("");
    expect(back.exitCode).toBe(0);
  }, 30_000);

  test("a database a newer router migrated (it may seal values this router does not know of) is refused, nothing changed", async () => {
    const db = new Database(join(dataDir, "router.db"));
    db.run("INSERT INTO schema_migrations (name, applied_at, router_version) VALUES ('0099_future', 1, '9.9.0')");
    db.close();
    try {
      const before = storedValues(dataDir);
      const newKeyFile = join(dataDir, "future.key");
      const refused = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", newKeyFile]);
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toContain("the database was migrated by router 9.9.0");
      expect(refused.stderr.trim().split("\n")).toHaveLength(1);
      expect(storedValues(dataDir)).toEqual(before);
      expect(existsSync(newKeyFile)).toBe(false);
    } finally {
      const fix = new Database(join(dataDir, "router.db"));
      fix.run("DELETE FROM schema_migrations WHERE name = '0099_future'");
      fix.close();
    }
  }, 30_000);

  test("a server killed with SIGKILL holds nothing: the rekey runs right after, and a router on the new key serves", async () => {
    const proc = Bun.spawn([process.execPath, "src/main.ts", "serve", "--port", "0", "--data", dataDir], {
      cwd: join(import.meta.dir, "..", ".."),
      env: { ...process.env, NO_COLOR: "1" },
      stdout: "pipe",
      stderr: "pipe",
    });
    let out = "";
    const reader = (async () => {
      for await (const chunk of proc.stdout) out += new TextDecoder().decode(chunk);
    })();
    await waitFor(() => out.includes("router listening on"), 20_000, "serve to listen");
    const whileServing = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", join(dataDir, "k.key")]);
    expect(whileServing.exitCode).toBe(1);
    proc.kill("SIGKILL");
    await proc.exited;
    await reader;
    const newKeyFile = join(dataDir, "after-kill.key");
    const rekeyed = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", newKeyFile]);
    expect(rekeyed.stderr).toBe("");
    expect(rekeyed.exitCode).toBe(0);
    const router = await startRouter({ dataDir, config: { secretKeyFile: newKeyFile } });
    try {
      await callServes(router, upstream);
    } finally {
      await router.stop();
    }
    // Put back for the tests after this one.
    expect((await runRouterCommand(["rekey", "--data", dataDir, "--secret-key-file", newKeyFile, "--new-secret-key-file", join(dataDir, "secret.key")])).exitCode).toBe(0);
  }, 60_000);

  test("command-line mistakes exit 2 with one line; a new key file that is not a key exits 1; neither changes anything", async () => {
    const before = storedValues(dataDir);
    const missing = await runRouterCommand(["rekey", "--data", dataDir]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toBe("router: --new-secret-key-file FILE is required; see --help\n");
    const same = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", join(dataDir, "secret.key")]);
    expect(same.exitCode).toBe(2);
    const notAKey = join(dataDir, "not-a-key");
    writeFileSync(notAKey, "hello\n");
    const invalid = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", notAKey]);
    expect(invalid.exitCode).toBe(1);
    expect(invalid.stderr).toBe(`router: ${notAKey} does not hold a 32-byte base64 key\n`);
    const noOldKey = await runRouterCommand(["rekey", "--data", dataDir, "--secret-key-file", join(dataDir, "nope.key"), "--new-secret-key-file", join(dataDir, "n.key")]);
    expect(noOldKey.exitCode).toBe(1);
    expect(noOldKey.stderr).toContain("no secret key at");
    expect(existsSync(join(dataDir, "n.key"))).toBe(false);
    // The key in use under another name is no new key.
    const copy = join(dataDir, "copy-of-old.key");
    writeFileSync(copy, readFileSync(join(dataDir, "secret.key")));
    const sameKey = await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", copy]);
    expect(sameKey.exitCode).toBe(1);
    expect(sameKey.stderr).toBe(`router: ${copy} holds the key in use: give a new file (it is created) or another key\n`);
    // PostgreSQL away: named without its password, one line.
    const away = await runRouterCommand(["rekey", "--secret-key-file", join(dataDir, "secret.key"), "--new-secret-key-file", join(dataDir, "pg.key")], {
      env: { ROUTER_DATABASE: "postgres://router:hunter2@127.0.0.1:1/router" },
    });
    expect(away.exitCode).toBe(1);
    expect(away.stderr).toContain("PostgreSQL at postgres://router:***@127.0.0.1:1/router");
    expect(away.stderr).not.toContain("hunter2");
    expect(away.stderr.trim().split("\n")).toHaveLength(1);
    expect(existsSync(join(dataDir, "pg.key"))).toBe(false);
    expect(storedValues(dataDir)).toEqual(before);
  }, 30_000);
});

describe("a fallback key, and Idempotency-Key retries across a rotation", () => {
  let upstream: MockUpstream;
  beforeAll(() => {
    upstream = chatUpstream();
  });
  afterAll(async () => {
    await upstream.stop();
  });

  test("--fallback-secret-key-file: a router sealing with a new key serves secrets sealed with the old one; a wrong pair is refused naming both files", async () => {
    const dataDir = await seededDeployment(upstream);
    const oldKeyFile = join(dataDir, "secret.key");
    const newKeyFile = join(dataDir, "new.key");
    loadOrCreateSecretKey(newKeyFile);
    const router = await startRouter({ dataDir, config: { secretKeyFile: newKeyFile, fallbackSecretKeyFile: oldKeyFile } });
    try {
      await callServes(router, upstream);
      expect(router.deps.settings.raw("EMAIL_PASS")).toBe(EMAIL_PASS);
    } finally {
      await router.stop();
    }
    const strangerFile = join(dataDir, "stranger.key");
    loadOrCreateSecretKey(strangerFile);
    const rotating = await serveOnce(["--data", dataDir, "--secret-key-file", newKeyFile, "--fallback-secret-key-file", oldKeyFile]);
    expect(rotating.started).toBe(true);
    expect(rotating.stderr).toContain("router: warning: --fallback-secret-key-file is for a rotation of the sealing key under way: once `router rekey` has run, restart without it");
    const wrong = await serveOnce(["--data", dataDir, "--secret-key-file", newKeyFile, "--fallback-secret-key-file", strangerFile]);
    expect(wrong.started).toBe(false);
    expect(wrong.exitCode).toBe(1);
    expect(wrong.stderr).toContain(`neither the key in ${newKeyFile} nor the fallback key in ${strangerFile} is the one they were sealed with`);
    const missing = await serveOnce(["--data", dataDir, "--fallback-secret-key-file", join(dataDir, "absent.key")]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toEndWith(`\nrouter: --fallback-secret-key-file ${join(dataDir, "absent.key")} does not exist\n`);
    expect(existsSync(join(dataDir, "absent.key"))).toBe(false);
  }, 60_000);

  test("a retry of an Idempotency-Key write made before the rotation is never run twice: replayed with the old key as fallback, else told its answer cannot be matched", async () => {
    const dataDir = await seededDeployment(upstream);
    const oldKeyFile = join(dataDir, "secret.key");
    const newKeyFile = join(dataDir, "new.key");
    expect((await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", newKeyFile])).exitCode).toBe(0);
    const retry = (router: TestRouter) =>
      router.fetch("/x-keys", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": "add-upstream-1" },
        body: JSON.stringify({ Provider: `${upstream.url}/v1`, SecretKey: SECRET, Level: 1, Status: true }),
      });
    const keyCount = async (router: TestRouter) => ((await api(router, "/x-keys")).body as unknown[]).length;

    const withFallback = await startRouter({ dataDir, config: { secretKeyFile: newKeyFile, fallbackSecretKeyFile: oldKeyFile } });
    try {
      const replayed = await retry(withFallback);
      expect(replayed.status).toBe(201);
      expect(replayed.headers.get("idempotent-replayed")).toBe("true");
      expect(await keyCount(withFallback)).toBe(1);
    } finally {
      await withFallback.stop();
    }
    const newOnly = await startRouter({ dataDir, config: { secretKeyFile: newKeyFile } });
    try {
      const refused = await retry(newOnly);
      expect(refused.status).toBe(409);
      const body = (await refused.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("idempotency_answer_not_kept");
      expect(body.error.message).toContain("secret key was rotated");
      expect(await keyCount(newOnly)).toBe(1);
      // A new write with a new key still runs, and its retry is replayed.
      const fresh = (key: string) =>
        newOnly.fetch("/x-config", { method: "PUT", headers: { "content-type": "application/json", "idempotency-key": key }, body: JSON.stringify({ EMAIL_PASS: "another-pass-123" }) });
      expect((await fresh("after-rotation")).status).toBe(200);
      expect((await fresh("after-rotation")).headers.get("idempotent-replayed")).toBe("true");
    } finally {
      await newOnly.stop();
    }
  }, 60_000);
});

describe("backups and rotated keys", () => {
  let upstream: MockUpstream;
  beforeAll(() => {
    upstream = chatUpstream();
  });
  afterAll(async () => {
    await upstream.stop();
  });

  test("backup --with-secret-key after a rotation: the old key beside the copy is refused, nothing written; with the new key the copy serves calls", async () => {
    const dataDir = await seededDeployment(upstream);
    const newKeyFile = join(dataDir, "new.key");
    expect((await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", newKeyFile])).exitCode).toBe(0);
    const out = join(tempDir("router-rekey-backup-"), "copy.db");
    const stale = await runRouterCommand(["backup", "--data", dataDir, "--out", out, "--with-secret-key"]);
    expect(stale.exitCode).toBe(1);
    expect(stale.stderr).toContain(`the key in ${join(dataDir, "secret.key")} does not open the secrets in this database`);
    expect(stale.stderr.trim().split("\n")).toHaveLength(1);
    expect(existsSync(out)).toBe(false);
    expect(existsSync(out.replace(/\.db$/, ".secret.key"))).toBe(false);

    // Without the key copy, the advice must not name the old key either.
    const keyless = await runRouterCommand(["backup", "--data", dataDir, "--out", join(dirname(out), "keyless.db")]);
    expect(keyless.exitCode).toBe(0);
    expect(keyless.stdout).not.toContain(`keep secret.key (${join(dataDir, "secret.key")})`);
    expect(keyless.stdout).toContain("keep the key the router runs with");
    const made = await runRouterCommand(["backup", "--data", dataDir, "--out", out, "--with-secret-key", "--secret-key-file", newKeyFile]);
    expect(made.stderr).toBe("");
    expect(made.exitCode).toBe(0);
    expect(readFileSync(out.replace(/\.db$/, ".secret.key"), "utf8")).toBe(readFileSync(newKeyFile, "utf8"));
    // Restored on another machine: the copy and its key, nothing else.
    const restored = tempDir("router-rekey-restored-");
    writeFileSync(join(restored, "router.db"), readFileSync(out));
    writeFileSync(join(restored, "secret.key"), readFileSync(out.replace(/\.db$/, ".secret.key")), { mode: 0o600 });
    writeFileSync(join(restored, "initial-owner-key"), readFileSync(join(dataDir, "initial-owner-key")));
    const router = await startRouter({ dataDir: restored });
    try {
      await callServes(router, upstream);
    } finally {
      await router.stop();
    }
  }, 60_000);
});

describe.skipIf(skipServices)("rotating the key of a scaled-out deployment (PostgreSQL, two instances)", () => {
  let pair: ScaleOutPair;
  const others: TestRouter[] = [];
  beforeAll(async () => {
    pair = await startScaleOutPair("rekey", SECRET);
  }, 60_000);
  afterAll(async () => {
    await pair?.stop(...others);
  });

  /** One call through `router`; the pair's upstream must see the provider secret. */
  async function pairCall(router: TestRouter): Promise<void> {
    const answer = await openaiClient(router.url, router.ownerKey).chat.completions.create({ model: "acme-1", messages: [{ role: "user", content: "hi" }] });
    expect(answer.choices[0]!.message.content).toBe("ok");
    expect(pair.upstream.requests.at(-1)!.headers.get("authorization")).toBe(`Bearer ${SECRET}`);
  }

  /** Replaces `old` with an instance started on `keys`, while `other` serves calls. */
  async function roll(old: TestRouter, other: TestRouter, keys: { secretKeyFile?: string; fallbackSecretKeyFile?: string }): Promise<TestRouter> {
    await old.stop();
    await pairCall(other);
    const started = await startRouter({ dataDir: pair.dataDir, config: { ...pair.config, ...keys }, pricing: false });
    others.push(started);
    await pairCall(started);
    await pairCall(other);
    return started;
  }

  test("fallback new key, then new key with the old as fallback, rekey while both serve, then the new key alone: calls served at every step; the old key is refused after", async () => {
    const oldKey = join(pair.dataDir, "secret.key");
    const newKey = join(pair.dataDir, "new.key");
    loadOrCreateSecretKey(newKey);
    await pairCall(pair.a);
    // 1. Every instance learns the new key (still sealing with the old one).
    let a = await roll(pair.a, pair.b, { fallbackSecretKeyFile: newKey });
    let b = await roll(pair.b, a, { fallbackSecretKeyFile: newKey });
    // 2. Every instance seals with the new key, opening old values with the fallback.
    a = await roll(a, b, { secretKeyFile: newKey, fallbackSecretKeyFile: oldKey });
    // What `a` seals with the new key now, `b` (old key, new as fallback) opens.
    expect((await api(a, "/x-config", { method: "PUT", body: { EMAIL_PASS } })).status).toBe(200);
    await waitFor(() => b.deps.settings.raw("EMAIL_PASS") === EMAIL_PASS, 5000, "the other instance to read EMAIL_PASS");
    b = await roll(b, a, { secretKeyFile: newKey, fallbackSecretKeyFile: oldKey });

    // 3. The rekey, while both instances serve calls.
    let serving = true;
    let served = 0;
    const load = (async () => {
      while (serving) {
        await pairCall(served % 2 === 0 ? a : b);
        served++;
      }
    })();
    const rekeyed = await runRouterCommand(["rekey", "--secret-key-file", oldKey, "--new-secret-key-file", newKey], { env: { ROUTER_DATABASE: pair.config.database! } });
    serving = false;
    await load;
    expect(rekeyed.stderr).toBe("");
    expect(rekeyed.exitCode).toBe(0);
    expect(rekeyed.stdout).toContain("provider secrets re-sealed: 1");
    expect(rekeyed.stdout).toContain("values already sealed with the new key: 1");
    expect(rekeyed.stdout).not.toContain(SECRET);
    expect(served).toBeGreaterThan(0);

    // 4. The old key dropped.
    a = await roll(a, b, { secretKeyFile: newKey });
    b = await roll(b, a, { secretKeyFile: newKey });
    expect(b.deps.settings.raw("EMAIL_PASS")).toBe(EMAIL_PASS);
    let refusal = "";
    await startRouter({ dataDir: pair.dataDir, config: pair.config, pricing: false }).then(
      (router) => others.push(router),
      (error: Error) => (refusal = error.message),
    );
    expect(refusal).toContain("the database holds provider secrets sealed with another key");
  }, 120_000);

  test("migrate-data after a rotation: the copy serves calls with the new key, and the advice names no key that cannot open it", async () => {
    const upstream = chatUpstream();
    try {
      const dataDir = await seededDeployment(upstream);
      const newKeyFile = join(dataDir, "new.key");
      expect((await runRouterCommand(["rekey", "--data", dataDir, "--new-secret-key-file", newKeyFile])).exitCode).toBe(0);
      const database = pair.postgres.url(await pair.postgres.createDatabase());
      const copied = await runRouterCommand(["migrate-data", "--from", dataDir, "--to", database]);
      expect(copied.exitCode).toBe(0);
      expect(copied.stdout).not.toContain(`a copy of ${join(dataDir, "secret.key")}`);
      expect(copied.stdout).toContain("the key the router ran with");
      // Another machine: its data directory holds only the owner's key file the helper reads.
      const instanceDir = tempDir();
      writeFileSync(join(instanceDir, "initial-owner-key"), readFileSync(join(dataDir, "initial-owner-key")));
      const router = await startRouter({ dataDir: instanceDir, config: { database, secretKeyFile: newKeyFile }, pricing: false });
      others.push(router);
      const answer = await openaiClient(router.url, router.ownerKey).chat.completions.create({ model: "acme-1", messages: [{ role: "user", content: "hi" }] });
      expect(answer.choices[0]!.message.content).toBe("ok");
      expect(upstream.requests.at(-1)!.headers.get("authorization")).toBe(`Bearer ${SECRET}`);
    } finally {
      await upstream.stop();
    }
  }, 60_000);
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY } from "../helpers/binary.ts";
import { runBinary } from "../helpers/binary-command.ts";
import { startRouter, tempDir, type TestRouter } from "../helpers/router.ts";
import type { CommandResult } from "../helpers/router-command.ts";
import { testCertificates } from "../helpers/tls.ts";

// The operator's experience of starting the built executable (`serve`, and `migrate`,
// `owner create`, `backup` on the same files): a data directory it cannot write, a file
// or a value that is wrong, each said in one line naming the path or the flag (or the
// ROUTER_* variable it came from), with the cause, before anything is written, and
// without a stack trace or a password. Each call is a real `dist/router …` process.

let router: TestRouter;

beforeAll(async () => {
  router = await startRouter();
});
afterAll(async () => {
  await router.stop();
});

type Result = CommandResult;

/** `dist/router <args>`; the key of this file's router is never printed. */
async function routerBinary(args: readonly string[], env: Record<string, string> = {}): Promise<Result> {
  const result = await runBinary(args, { ROUTER_URL: router.url, ROUTER_KEY: router.ownerKey, ...env });
  expect(result.stdout + result.stderr).not.toContain(router.ownerKey);
  return result;
}

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

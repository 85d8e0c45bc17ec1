import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startRouter, tempDir, type TestRouter } from "../helpers/router.ts";

// `router backup` copies the live database of a running router (in this process)
// while writes keep landing, through the API and through the usage recorder.

const ROOT = join(import.meta.dir, "..", "..");

let router: TestRouter;
let dir: string;
let requestNo = 0;

beforeAll(async () => {
  router = await startRouter();
  dir = tempDir("router-backup-");
});
afterAll(async () => {
  await router.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function backup(args: string[]) {
  const proc = Bun.spawn([process.execPath, "src/main.ts", "backup", "--data", router.dataDir, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { exitCode, stdout, stderr };
}

/** What the relay does after a call: one usage row, written on the next flush. */
function recordUsage(accountId: number): void {
  router.deps.usageRecorder.record({
    requestId: `req-backup-${++requestNo}`,
    accountId,
    endpoint: "/v1/chat/completions",
    requestedModel: "gpt-4o",
    effectiveModel: "gpt-4o",
    level: 1,
    keyId: undefined,
    status: 200,
    stream: false,
    usage: { prompt: 100, completion: 20, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
    source: "upstream",
    latencyMs: 3,
    at: Date.now(),
    costNanos: 1000,
  });
}

const count = (db: Database, table: string) => db.query<{ n: number }, []>(`SELECT count(*) AS n FROM ${table}`).get()!.n;

async function createAccount(n: number): Promise<void> {
  const res = await router.fetch("/x-users", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ Email: `load-${n}@example.com` }),
  });
  expect(res.status).toBe(201);
}

describe("router backup", () => {
  test("a backup under write load opens cleanly, passes integrity_check and holds every row committed before it started", async () => {
    // Enough history that the copy takes a moment.
    for (let i = 0; i < 20_000; i++) recordUsage(1);
    await router.deps.usageRecorder.flush();

    let writing = true;
    let accountsMade = 0;
    const writer = (async () => {
      while (writing) {
        for (let i = 0; i < 200; i++) recordUsage(1);
        await router.deps.usageRecorder.flush();
        await createAccount(++accountsMade);
      }
    })();
    await Bun.sleep(50);

    // The live file as another process sees it: committed rows only.
    const live = new Database(join(router.dataDir, "router.db"), { readonly: true });
    // Synchronous from here to the spawn: nothing else runs on this thread in between.
    const usageBefore = count(live, "usage_events");
    const accountsBefore = count(live, "accounts");
    const out = join(dir, "router-backup.db");
    const running = backup(["--out", out, "--with-secret-key"]);
    const result = await running;
    writing = false;
    await writer;
    await router.deps.usageRecorder.flush();
    const usageAfter = count(live, "usage_events");

    expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: "" });
    expect(result.stdout).toContain(`backup written to ${out} (`);
    expect(result.stdout).toContain("integrity check ok");
    expect(result.stdout).toContain("secret key copied to");
    expect(usageAfter).toBeGreaterThan(usageBefore); // the load really ran during the backup

    const copy = new Database(out, { readonly: true });
    try {
      expect(copy.query("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }]);
      const usageInCopy = count(copy, "usage_events");
      expect(usageInCopy).toBeGreaterThanOrEqual(usageBefore);
      expect(usageInCopy).toBeLessThanOrEqual(usageAfter);
      expect(count(copy, "accounts")).toBeGreaterThanOrEqual(accountsBefore);
      // The rollups were written in the same transactions as the rows: the copy is one consistent snapshot.
      const rolled = copy.query<{ n: number }, []>("SELECT coalesce(sum(requests), 0) AS n FROM usage_daily").get()!.n;
      expect(rolled).toBe(usageInCopy);
    } finally {
      copy.close();
    }
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const keyCopy = join(dir, "router-backup.secret.key");
    expect(statSync(keyCopy).mode & 0o777).toBe(0o600);
    expect(readFileSync(keyCopy)).toEqual(readFileSync(join(router.dataDir, "secret.key")));
    expect(readdirPartials()).toEqual([]);
  });

  test("an existing file is kept unless --force; usage mistakes exit 2", async () => {
    const out = join(dir, "existing.db");
    writeFileSync(out, "not a database");
    const refused = await backup(["--out", out]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain("exists; repeat with --force");
    expect(readFileSync(out, "utf8")).toBe("not a database");

    const forced = await backup(["--out", out, "--force"]);
    expect(forced.exitCode).toBe(0);
    expect(forced.stdout).toContain("keep secret.key");
    const copy = new Database(out, { readonly: true });
    expect(count(copy, "accounts")).toBeGreaterThan(0);
    copy.close();

    const missing = await backup([]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain("--out FILE is required");
    const unknown = await backup(["--out", join(dir, "x.db"), "--compress"]);
    expect(unknown.exitCode).toBe(2);
    expect(existsSync(join(dir, "x.db"))).toBe(false);
  });
});

/** Temporary copies left behind by a backup (there must be none). */
function readdirPartials(): string[] {
  return [...new Bun.Glob("*.partial-*").scanSync(dir)];
}

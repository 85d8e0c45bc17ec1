import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { tempDir, waitFor } from "../helpers/router.ts";

// Upgrading a deployment that holds data, and going back after a failed upgrade,
// black-box. From a review: a request log file in a newer router's format was written to
// by an older one; refused since.

const ROOT = join(import.meta.dir, "..", "..");

/** Runs `router serve` until it listens (then stops it) or exits: whether it started, and what it printed. */
async function serveOnce(args: string[]): Promise<{ started: boolean; exitCode: number | null; stdout: string; stderr: string }> {
  const proc = Bun.spawn([process.execPath, "src/main.ts", "serve", "--port", "0", ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = { stdout: "", stderr: "" };
  const pump = async (stream: ReadableStream<Uint8Array>, into: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) out[into] += decoder.decode(chunk, { stream: true });
  };
  const pumps = Promise.all([pump(proc.stdout, "stdout"), pump(proc.stderr, "stderr")]);
  await waitFor(() => /router listening on/.test(out.stdout) || proc.exitCode !== null, 20_000, "serve to start or exit");
  const started = /router listening on/.test(out.stdout);
  if (started) proc.kill("SIGTERM");
  const exitCode = await proc.exited;
  await pumps;
  return { started, exitCode: started ? null : exitCode, ...out };
}

describe("the request log's file, opened by a router older than the one that wrote it", () => {
  test("a format this router does not know is refused, naming the file and this version", async () => {
    const dataDir = tempDir("review-log-format-");
    // This router creates the log's file; a newer one then changed its table and format number.
    expect((await serveOnce(["--data", dataDir])).started).toBe(true);
    const log = new Database(join(dataDir, "router-requests.db"));
    log.run("ALTER TABLE request_log ADD COLUMN region text NOT NULL DEFAULT ''");
    log.run("PRAGMA user_version = 2");
    log.close();
    const result = await serveOnce(["--data", dataDir]);
    expect(result.started).toBe(false);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain("router-requests.db");
    expect(result.stderr).toContain(`this is router ${pkg.version}`);
  }, 60_000);
});

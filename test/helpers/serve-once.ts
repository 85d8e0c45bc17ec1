import { join } from "node:path";
import { waitFor } from "./router.ts";

const ROOT = join(import.meta.dir, "..", "..");

/** What one `router serve` process did: whether it listened, its exit code and what it printed, and the probe's answer. */
export interface ServedOnce {
  started: boolean;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  probed: unknown;
}

/**
 * Runs `router serve` from the source as a process until it prints that it listens or
 * exits; when it listens, `probe` runs against its URL before it is stopped (SIGTERM).
 */
export async function serveOnce(args: string[], probe: (url: string) => Promise<unknown> = async () => undefined): Promise<ServedOnce> {
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
  let probed: unknown;
  if (started) {
    try {
      probed = await probe(/router listening on (\S+)/.exec(out.stdout)![1]!);
    } finally {
      proc.kill("SIGTERM");
    }
  }
  await proc.exited;
  await pumps;
  return { started, exitCode: proc.exitCode, ...out, probed };
}

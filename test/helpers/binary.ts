import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { tempDir } from "./router.ts";
import { testCertificates } from "./tls.ts";

export const BINARY = join(import.meta.dir, "..", "..", "dist", "router");

/** Copies dist/router alone into a fresh empty directory (no node_modules anywhere near) and returns its path. */
export function isolatedBinary(): { dir: string; bin: string } {
  if (!existsSync(BINARY)) throw new Error("dist/router is missing: run `npm run build` (npm test does)");
  const dir = tempDir("router-bin-");
  const bin = join(dir, "router");
  copyFileSync(BINARY, bin);
  Bun.spawnSync(["chmod", "+x", bin]);
  return { dir, bin };
}

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs the binary to completion. */
export function run(bin: string, args: string[], options: { cwd: string; env?: Record<string, string> }): RunResult {
  const proc = Bun.spawnSync([bin, ...args], {
    cwd: options.cwd,
    env: { PATH: "/usr/bin:/bin", HOME: options.cwd, ...options.env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { exitCode: proc.exitCode ?? -1, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

export interface ServingBinary {
  readonly url: string;
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number>;
  kill(signal?: NodeJS.Signals): void;
}

async function collect(stream: ReadableStream<Uint8Array>, sink: { text: string }): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) sink.text += decoder.decode(chunk, { stream: true });
}

/** Starts `router serve` from the binary and waits for its "listening on" line. */
export async function serveBinary(
  bin: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<ServingBinary> {
  const proc = Bun.spawn([bin, "serve", ...args], {
    cwd: options.cwd,
    // The binary trusts the test CA the way a deployment would: NODE_EXTRA_CA_CERTS.
    env: { PATH: "/usr/bin:/bin", HOME: options.cwd, NODE_EXTRA_CA_CERTS: testCertificates().caFile, ...options.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = { text: "" };
  const err = { text: "" };
  void collect(proc.stdout, out);
  void collect(proc.stderr, err);
  const deadline = Date.now() + (options.timeoutMs ?? 10000);
  let url: string | undefined;
  while (!url) {
    const match = /router listening on (\S+)/.exec(out.text);
    if (match) url = match[1];
    else if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill();
      throw new Error(`router did not start (exit ${proc.exitCode}):\n${out.text}\n${err.text}`);
    } else await Bun.sleep(10);
  }
  return {
    url: url!,
    proc,
    stdout: () => out.text,
    stderr: () => err.text,
    exited: proc.exited,
    kill: (signal = "SIGTERM") => proc.kill(signal),
  };
}

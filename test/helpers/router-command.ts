import { join } from "node:path";

/** What a `router …` command did: its exit code and what it printed. */
export interface CommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

const ROOT = join(import.meta.dir, "..", "..");

/**
 * Runs `router <args>` from the source tree as a process of its own (a router it talks
 * to may run on this event loop), without colours, stdin closed unless given.
 */
export async function runRouterCommand(args: readonly string[], options: { env?: Record<string, string>; stdin?: string } = {}): Promise<CommandResult> {
  const proc = Bun.spawn([process.execPath, "src/main.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1", ...options.env },
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { exitCode, stdout, stderr };
}

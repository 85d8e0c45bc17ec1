import { BINARY } from "./binary.ts";
import type { CommandResult } from "./router-command.ts";

/**
 * Runs the built `dist/router <args>` as a process of its own, without blocking this
 * event loop (a router it talks to may run here): no colours, stdin closed, a minimal
 * environment plus `env`.
 */
export async function runBinary(args: readonly string[], env: Record<string, string> = {}): Promise<CommandResult> {
  const proc = Bun.spawn([BINARY, ...args], {
    env: { PATH: "/usr/bin:/bin", NO_COLOR: "1", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { exitCode, stdout, stderr };
}

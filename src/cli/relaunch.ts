/**
 * Bun's fetch runs at most 256 requests at once unless BUN_CONFIG_MAX_HTTP_REQUESTS
 * is set, and it reads that variable only when the process starts: a gateway holding
 * 1,000 streams would queue clients for seconds. So `serve` without the variable
 * replaces itself (execve: same pid, no second process) with a copy of itself that
 * has it set; the compiled binary has no other way to carry an environment.
 */
export const MAX_HTTP_REQUESTS = "65535";

type Execve = (file: string, args: string[], env: Record<string, string | undefined>) => never;

export function relaunchWithFetchLimit(): void {
  if (process.env.BUN_CONFIG_MAX_HTTP_REQUESTS) return;
  const execve = (process as unknown as { execve?: Execve }).execve;
  if (typeof execve !== "function") return;
  // Compiled: argv is [bun, /$bunfs/root/<name>, ...args]; from source: [bun, src/main.ts, ...args].
  const compiled = (process.argv[1] ?? "").startsWith("/$bunfs/");
  const args = compiled ? process.argv.slice(2) : process.argv.slice(1);
  // Runtime flags (`bun --cpu-prof src/main.ts serve`) come along: they are in execArgv, not argv.
  execve.call(process, process.execPath, [process.execPath, ...process.execArgv, ...args], {
    ...process.env,
    BUN_CONFIG_MAX_HTTP_REQUESTS: MAX_HTTP_REQUESTS,
  });
}

/**
 * Bun's fetch runs at most 256 requests at once unless BUN_CONFIG_MAX_HTTP_REQUESTS
 * is set, and it reads that variable only when the process starts: a gateway holding
 * 1,000 streams would queue clients for seconds. So `serve` without the variable
 * starts itself again with it set (the compiled binary has no other way to pass it),
 * forwarding signals and the exit code. Returns true when this process became the
 * parent that only waits.
 */
export const MAX_HTTP_REQUESTS = "65535";

export async function relaunchWithFetchLimit(): Promise<boolean> {
  if (process.env.BUN_CONFIG_MAX_HTTP_REQUESTS) return false;
  // Compiled: argv is [bun, /$bunfs/root/<name>, ...args]; from source: [bun, src/main.ts, ...args].
  const compiled = (process.argv[1] ?? "").startsWith("/$bunfs/");
  const args = compiled ? process.argv.slice(2) : process.argv.slice(1);
  const child = Bun.spawn([process.execPath, ...args], {
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: MAX_HTTP_REQUESTS },
    stdio: ["inherit", "inherit", "inherit"],
  });
  // The child handles the signal (graceful stop); this process only passes it on and
  // waits, so the exit code stays the child's.
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    process.on(signal, () => child.kill(signal));
  }
  const code = await child.exited;
  process.exit(code ?? 1);
}

/**
 * `serve` replaces itself once (execve: same pid, no second process) with a copy that
 * has what the runtime reads only at start, because the compiled binary has no other
 * way to carry an environment:
 *
 * - Bun's fetch runs at most 256 requests at once unless BUN_CONFIG_MAX_HTTP_REQUESTS
 *   is set: a gateway holding 1,000 streams would queue clients for seconds.
 * - A private upstream CA (--upstream-ca-file) passed to every fetch as `tls: { ca }`
 *   costs a fresh TLS setup per call; trusted by the runtime through
 *   NODE_EXTRA_CA_CERTS it costs nothing (see upstreams/trust.ts). The operator's own
 *   NODE_EXTRA_CA_CERTS is kept: both go into one private bundle.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CA_MERGED_ENV } from "../upstreams/trust.ts";

export const MAX_HTTP_REQUESTS = "65535";

type Execve = (file: string, args: string[], env: Record<string, string | undefined>) => never;

/** The --upstream-ca-file of a serve command line (the flag wins over ROUTER_UPSTREAM_CA_FILE), read before the flags are parsed. */
export function caFileOf(argv: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--upstream-ca-file") return argv[i + 1];
    if (arg.startsWith("--upstream-ca-file=")) return arg.slice("--upstream-ca-file=".length);
  }
  return env.ROUTER_UPSTREAM_CA_FILE || undefined;
}

/**
 * The bundle the runtime should trust: the operator's NODE_EXTRA_CA_CERTS, then the CA
 * file, in a directory only this user can read (a shared temp directory must not let
 * another user slip a CA in). Undefined when the CA file cannot be read: `serve` then
 * reports it with its other flag errors.
 */
export function writeCaBundle(caFile: string, env: NodeJS.ProcessEnv): string | undefined {
  let ca: string;
  try {
    ca = readFileSync(caFile, "utf8");
  } catch {
    return undefined;
  }
  const own = env.NODE_EXTRA_CA_CERTS && existsSync(env.NODE_EXTRA_CA_CERTS) ? readFileSync(env.NODE_EXTRA_CA_CERTS, "utf8") : "";
  removeStaleCaBundles();
  const dir = mkdtempSync(join(tmpdir(), bundlePrefix()));
  const bundle = join(dir, "ca-bundle.pem");
  writeFileSync(bundle, `${own.trimEnd()}${own ? "\n" : ""}${ca.trimEnd()}\n`, { mode: 0o600 });
  // The re-launched process removes it when it ends: the runtime reads it at its first TLS
  // connection, not at its start (a bundle removed before then leaves the CA untrusted).
  // A process killed outright leaves it behind (public certificates, in a 0700 directory).
  return bundle;
}

/**
 * The PID namespace this process runs in (Linux), so that a bundle's pid is read only
 * where it means the same process: containers sharing a temp directory each have their
 * own pids. Undefined elsewhere: bundles are then never taken for stale.
 */
function pidNamespace(): string | undefined {
  try {
    return /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))?.[1];
  } catch {
    return undefined;
  }
}

/**
 * `router-ca-<namespace>-<pid>-`: the pid is the router's for its whole life (execve keeps
 * it), so a later start in the same namespace can tell a bundle whose router is gone.
 */
function bundlePrefix(): string {
  const namespace = pidNamespace();
  return namespace === undefined ? "router-ca-" : `router-ca-${namespace}-${process.pid}-`;
}

/** Whether a process runs (EPERM: it does, as another user's). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes the bundles of routers that are gone: a router killed outright (an OOM kill,
 * SIGKILL) leaves its `router-ca-<namespace>-<pid>-…` directory, and one restarted in a
 * loop would leave one per start. Bundles of another PID namespace, another user's, and
 * those of routers still running stay.
 */
export function removeStaleCaBundles(dir: string = tmpdir()): void {
  const namespace = pidNamespace();
  if (namespace === undefined) return;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const [, inNamespace, pidText] = /^router-ca-(\d+)-(\d+)-/.exec(name) ?? [];
    if (inNamespace !== namespace) continue;
    const pid = Number(pidText);
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || isRunning(pid)) continue;
    try {
      rmSync(join(dir, name), { recursive: true, force: true });
    } catch {
      // Not this user's to remove, or removed meanwhile.
    }
  }
}

/** Removes the bundle a re-launch wrote for this process, when it ends. */
export function removeCaBundleAtExit(env: NodeJS.ProcessEnv = process.env): void {
  if (!env[CA_MERGED_ENV] || !env.NODE_EXTRA_CA_CERTS?.includes("router-ca-")) return;
  const dir = resolve(env.NODE_EXTRA_CA_CERTS, "..");
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
}

export function relaunchServe(): void {
  const env = process.env;
  const caFile = caFileOf(process.argv, env);
  const needsLimit = !env.BUN_CONFIG_MAX_HTTP_REQUESTS;
  const needsCa = caFile !== undefined && env[CA_MERGED_ENV] !== resolve(caFile);
  if (!needsLimit && !needsCa) return;
  const execve = (process as unknown as { execve?: Execve }).execve;
  if (typeof execve !== "function") return;
  const next: Record<string, string | undefined> = { ...env, BUN_CONFIG_MAX_HTTP_REQUESTS: env.BUN_CONFIG_MAX_HTTP_REQUESTS ?? MAX_HTTP_REQUESTS };
  if (needsCa) {
    const bundle = writeCaBundle(caFile, env);
    if (bundle) Object.assign(next, { NODE_EXTRA_CA_CERTS: bundle, [CA_MERGED_ENV]: resolve(caFile) });
    else if (!needsLimit) return;
  }
  // Compiled: argv is [bun, /$bunfs/root/<name>, ...args]; from source: [bun, src/main.ts, ...args].
  const compiled = (process.argv[1] ?? "").startsWith("/$bunfs/");
  const args = compiled ? process.argv.slice(2) : process.argv.slice(1);
  // Runtime flags (`bun --cpu-prof src/main.ts serve`) come along: they are in execArgv, not argv.
  execve.call(process, process.execPath, [process.execPath, ...process.execArgv, ...args], next);
}

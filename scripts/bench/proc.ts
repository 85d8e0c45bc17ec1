/**
 * Processes of the benchmark: starting services in their own process with their
 * output in a log file, waiting for their "listening" line, and reading their CPU
 * time and resident memory from /proc.
 */
import { closeSync, openSync, readdirSync, readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import type { Subprocess } from "bun";

const CLOCK_TICKS = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

/** User + system CPU seconds of a process (all its threads), from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name may hold spaces; fields after it are space-separated, utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/**
 * CPU seconds per thread name of a process (threads of one name summed: Bun's "HTTP
 * Client", JSC's "HeapHelper"s, the main thread under the process's own name): where a
 * process's CPU goes, which a profile of the JavaScript thread alone does not show.
 */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    } catch {
      continue; // the thread ended meanwhile
    }
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    out.set(name, (out.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS);
  }
  return out;
}

/** Per-thread-name CPU between two readings, in µs per call, largest first ("main 410, HTTP Client 300"). */
export function threadCpuPerCall(before: Map<string, number>, after: Map<string, number>, calls: number): string {
  return [...after]
    .map(([name, s]) => [name, ((s - (before.get(name) ?? 0)) / Math.max(1, calls)) * 1e6] as const)
    .filter(([, us]) => us >= 1)
    .sort((a, b) => b[1] - a[1])
    .map(([name, us]) => `${name} ${us.toFixed(0)}`)
    .join(", ");
}

/** Busy CPU seconds of the whole machine (all CPUs), from /proc/stat. */
export function machineBusySeconds(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
  // cpu user nice system idle iowait irq softirq steal …
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  return (f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + f[7]!) / CLOCK_TICKS;
}

/** CPU seconds of this process and of its children that have exited (wrk, load clients). */
export function selfAndReapedSeconds(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
}

/**
 * Measures the CPU used on the machine by processes that are not part of the
 * benchmark (other users' builds and tests) while a measurement runs: a share of all
 * CPUs, to tell a noisy round from a quiet one.
 */
export function foreignLoad(pids: () => number[]) {
  const ours = () => selfAndReapedSeconds() + pids().reduce((s, pid) => {
    try {
      return s + cpuSeconds(pid);
    } catch {
      return s;
    }
  }, 0);
  const t0 = performance.now();
  const busy0 = machineBusySeconds();
  const ours0 = ours();
  return () => {
    const elapsed = (performance.now() - t0) / 1000;
    const foreign = machineBusySeconds() - busy0 - (ours() - ours0);
    return Math.max(0, foreign / (elapsed * cpus().length));
  };
}

/** Resident set size in MB (VmRSS), from /proc/<pid>/status. */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  return match ? Number(match[1]) / 1024 : NaN;
}

export function machine() {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const model = /model name\s*:\s*(.+)/.exec(cpuinfo)?.[1]?.trim() ?? cpus()[0]?.model ?? "unknown";
  const kernel = readFileSync("/proc/sys/kernel/osrelease", "utf8").trim();
  return {
    nproc: Number(Bun.spawnSync(["nproc"]).stdout.toString().trim()),
    cpuModel: model,
    ramGb: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    kernel,
    clockTicks: CLOCK_TICKS,
  };
}

export interface Service {
  name: string;
  pid: number;
  /** The URL printed on the ready line. */
  url: string;
  logFile: string;
  proc: Subprocess;
  /** Sends SIGTERM and waits (then SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
  log(): string;
}

const running = new Set<Subprocess>();
process.on("exit", () => {
  for (const proc of running) proc.kill("SIGKILL");
});
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    for (const proc of running) proc.kill("SIGKILL");
    process.exit(130);
  });
}

/** Starts `cmd` with its stdout and stderr in `logFile`, and waits until a line matches `ready` (group 1 is the URL). */
export async function startService(options: {
  name: string;
  cmd: string[];
  env: Record<string, string | undefined>;
  cwd: string;
  logFile: string;
  ready: RegExp;
  timeoutMs?: number;
}): Promise<Service> {
  const fd = openSync(options.logFile, "w");
  const proc = Bun.spawn(options.cmd, { cwd: options.cwd, env: options.env, stdin: "ignore", stdout: fd, stderr: fd });
  closeSync(fd);
  running.add(proc);
  const log = () => readFileSync(options.logFile, "utf8");
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  let url: string | undefined;
  for (;;) {
    const match = options.ready.exec(log());
    if (match) {
      url = match[1]!;
      break;
    }
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill("SIGKILL");
      running.delete(proc);
      throw new Error(`${options.name} did not start (exit ${proc.exitCode}):\n${log().slice(-3000)}`);
    }
    await Bun.sleep(20);
  }
  return {
    name: options.name,
    pid: proc.pid,
    url,
    logFile: options.logFile,
    proc,
    log,
    async stop(graceMs = 10_000) {
      if (proc.exitCode === null) {
        proc.kill("SIGTERM");
        const timer = setTimeout(() => proc.kill("SIGKILL"), graceMs);
        await proc.exited;
        clearTimeout(timer);
      }
      running.delete(proc);
    },
  };
}

/** Runs a command to completion and returns its output; throws when it fails. */
export function runChecked(cmd: string[], options: { cwd?: string; env?: Record<string, string | undefined>; quiet?: boolean } = {}): string {
  const proc = Bun.spawnSync(cmd, { cwd: options.cwd, env: options.env ?? process.env, stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0) {
    throw new Error(`${cmd.join(" ")} failed (exit ${proc.exitCode}):\n${proc.stdout.toString().slice(-2000)}\n${proc.stderr.toString().slice(-2000)}`);
  }
  return proc.stdout.toString();
}

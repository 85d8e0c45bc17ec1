/**
 * wrk (Debian's package) as the HTTP load generator: installed with apt-get when
 * missing, driven with a generated Lua script that sets the POST body and headers
 * and prints wrk's summary and latency percentiles (µs resolution) as JSON.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runChecked } from "./proc.ts";

export interface WrkResult {
  requests: number;
  durationS: number;
  rps: number;
  /** Socket errors plus non-2xx/3xx answers. */
  errors: number;
  non2xx: number;
  /** What `showFailures` printed: a failed answer's status and body each. */
  failures: string[];
  /** Latency in ms. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function ensureWrk(): string {
  const found = Bun.which("wrk");
  if (found) return wrkVersion(found);
  if (process.getuid?.() !== 0) throw new Error("wrk is missing and this is not root: install it with `sudo apt-get install -y wrk`");
  console.log("installing wrk with apt-get …");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  runChecked(["apt-get", "update"], { env });
  runChecked(["apt-get", "install", "-y", "--no-install-recommends", "wrk"], { env });
  const installed = Bun.which("wrk");
  if (!installed) throw new Error("apt-get installed wrk but it is not on PATH");
  return wrkVersion(installed);
}

function wrkVersion(bin: string): string {
  const out = Bun.spawnSync([bin, "--version"], { stdout: "pipe", stderr: "pipe" });
  return (out.stdout.toString() + out.stderr.toString()).split("\n")[0]!.trim();
}

const luaString = (text: string) => `[==[${text}]==]`;

/**
 * Writes a Lua script for POSTing `body` with `headers` (each connection pausing `delayMs`
 * between calls), and returns its path. With `showFailures`, the first few answers of
 * status 400 or more are printed (`FAILED status body`; a Lua hook per answer, which
 * slows wrk: for finding out why calls failed, not for measuring).
 */
export function wrkScript(dir: string, name: string, body: string, headers: Record<string, string>, options: { delayMs?: number; showFailures?: boolean } = {}): string {
  const lines = [
    // A pause before each request on a connection paces the load instead of saturating.
    ...(options.delayMs ? [`delay = function() return ${options.delayMs} end`] : []),
    ...(options.showFailures
      ? [
          `local shown = 0`,
          `response = function(status, headers, body)`,
          `  if status >= 400 and shown < 3 then`,
          `    shown = shown + 1`,
          `    io.write("FAILED " .. status .. " " .. (string.gsub(string.sub(body or "", 1, 400), "\\n", " ")) .. "\\n")`,
          `  end`,
          `end`,
        ]
      : []),
    `wrk.method = "POST"`,
    `wrk.body = ${luaString(body)}`,
    ...Object.entries(headers).map(([k, v]) => `wrk.headers[ ${luaString(k)} ] = ${luaString(v)}`),
    `done = function(summary, latency, requests)`,
    `  local e = summary.errors`,
    `  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.3f}\\n',`,
    `    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,`,
    `    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))`,
    `end`,
  ];
  const path = join(dir, `${name}.lua`);
  writeFileSync(path, lines.join("\n") + "\n");
  return path;
}

export async function runWrk(options: { url: string; script: string; connections: number; seconds: number; threads?: number }): Promise<WrkResult> {
  const threads = options.threads ?? 1;
  const proc = Bun.spawn(
    ["wrk", `-t${threads}`, `-c${options.connections}`, `-d${options.seconds}s`, "--timeout", "10s", "-s", options.script, options.url],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  const line = out.split("\n").find((l) => l.startsWith("WRKJSON "));
  if (!line) throw new Error(`wrk printed no summary (exit ${proc.exitCode}):\n${out}\n${err}`);
  const raw = JSON.parse(line.slice(8)) as Record<string, number>;
  const durationS = raw.duration_us! / 1e6;
  const socketErrors = raw.connect! + raw.read! + raw.write! + raw.timeout!;
  return {
    requests: raw.requests!,
    durationS,
    rps: raw.requests! / durationS,
    errors: socketErrors + raw.status!,
    failures: out.split("\n").filter((l) => l.startsWith("FAILED ")).map((l) => l.slice(7)),
    non2xx: raw.status!,
    p50: raw.p50! / 1000,
    p90: raw.p90! / 1000,
    p99: raw.p99! / 1000,
    max: raw.max! / 1000,
    mean: raw.mean! / 1000,
  };
}

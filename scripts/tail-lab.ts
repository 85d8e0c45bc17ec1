/**
 * `bun scripts/tail-lab.ts VARIANTS.json`: where a router's slow calls come from. Calls
 * made one at a time (or `--concurrency N` at once) through each variant, then the mock
 * directly and the floor proxy, in alternating rounds of `--calls` calls, each call's
 * latency kept: per round the p50, p90, p99 and p99.9, how many calls took more than
 * 0.7 ms over the p50, in how many clusters (slow calls within 3 calls of each other),
 * the median gap between them, and for each router thread its CPU time and its time
 * waiting for a CPU (`/proc/PID/task/TID/schedstat`) during the round. wrk reports
 * only the distribution; this shows whether the slow calls are periodic, clustered or
 * spread, and which thread was busy or waiting meanwhile.
 *
 *   [{"name": "head", "bin": "dist/router"},
 *    {"name": "switch", "bin": "/tmp/router-x", "env": {"SWITCH": "1"}, "args": ["--request-log-days", "0"]}]
 *
 * Flags: --rounds N (default 3), --calls N (per round, default 15000), --warm N (calls
 * before the first round, default 3000), --concurrency N (default 1), --no-floor,
 * --threads (print every thread's figures), --dump DIR (each round's calls as
 * "start-ms latency-µs" lines, for lining them up with a router's own trace).
 * The first round after start still carries JIT compilation (the JITWorker thread's
 * time says how much): compare later rounds.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { testCertificates } from "../test/helpers/tls.ts";
import { headersFor, NONSTREAM_BODY, PATH, type Target } from "./bench/phases.ts";
import { startBenchFloor, startBenchMock } from "./bench/mock.ts";
import type { Service } from "./bench/proc.ts";
import { configureRouter, startRouter } from "./bench/router.ts";
import { flag, readVariants } from "./bench/cli.ts";

/** Each thread of `pid`: [CPU ns, run-queue wait ns] by "name#tid". */
function threads(pid: number | undefined): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  if (!pid) return out;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ").map(Number);
      out.set(`${name}#${tid}`, [run!, wait!]);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

async function calls(target: Target, count: number, concurrency: number): Promise<{ latency: Float64Array; started: Float64Array }> {
  const headers = headersFor(target);
  const latency = new Float64Array(count);
  const started = new Float64Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const start = performance.now();
        const response = await fetch(target.url + PATH, { method: "POST", headers, body: NONSTREAM_BODY, tls: { rejectUnauthorized: false } } as RequestInit);
        await response.arrayBuffer();
        latency[i] = (performance.now() - start) * 1000;
        started[i] = performance.timeOrigin + start;
      }
    }),
  );
  return { latency, started };
}

function describeRound(latency: Float64Array): string {
  const sorted = Float64Array.from(latency).sort();
  const at = (p: number) => sorted[Math.floor(p * (sorted.length - 1))]!;
  const p50 = at(0.5);
  const slow: number[] = [];
  latency.forEach((value, i) => {
    if (value > p50 + 700) slow.push(i);
  });
  let clusters = 0;
  slow.forEach((i, k) => {
    if (k === 0 || i - slow[k - 1]! > 3) clusters++;
  });
  const gaps = slow
    .slice(1)
    .map((i, k) => i - slow[k]!)
    .sort((a, b) => a - b);
  const µs = (value: number) => value.toFixed(0);
  return `p50 ${µs(p50)} p90 ${µs(at(0.9))} p99 ${µs(at(0.99))} p99.9 ${µs(at(0.999))} µs; ${slow.length} calls over p50 + 0.7 ms in ${clusters} clusters, median gap ${gaps[gaps.length >> 1] ?? "-"} calls`;
}

async function main() {
  const file = process.argv[2];
  if (!file || file.startsWith("--")) throw new Error("usage: bun scripts/tail-lab.ts VARIANTS.json [--rounds N] [--calls N] [--warm N] [--concurrency N] [--no-floor] [--threads] [--dump DIR]");
  const specs = readVariants(file);
  const rounds = Number(flag("--rounds") ?? 3);
  const count = Number(flag("--calls") ?? 15_000);
  const warm = Number(flag("--warm") ?? 3_000);
  const concurrency = Number(flag("--concurrency") ?? 1);
  const dump = flag("--dump");
  const work = mkdtempSync(join(tmpdir(), "gwbench-tail-"));
  const certs = testCertificates();
  const services: Service[] = [];
  try {
    const mock = await startBenchMock(work, certs);
    services.push(mock);
    const targets: Target[] = [{ name: "direct", url: mock.url, key: "sk-direct" }];
    if (!process.argv.includes("--no-floor")) {
      const floor = await startBenchFloor(work, mock.url, certs.caFile);
      services.push(floor);
      targets.push({ name: "floor", url: floor.url, key: "sk-floor", pid: floor.pid });
    }
    for (const spec of specs) {
      const router = await startRouter({ name: spec.name, cmd: [resolve(spec.bin)], cwd: work, dataDir: join(work, `data-${spec.name}`), logFile: join(work, `${spec.name}.log`), caFile: certs.caFile, extraEnv: spec.env, extraArgs: spec.args });
      services.push(router);
      targets.push({ name: spec.name, url: router.url, key: await configureRouter(router, mock.url), pid: router.pid });
    }
    for (const target of targets) await calls(target, warm, concurrency);
    for (let round = 1; round <= rounds; round++) {
      for (const target of targets) {
        const before = threads(target.pid);
        const { latency, started } = await calls(target, count, concurrency);
        const after = threads(target.pid);
        console.log(`round ${round} ${target.name.padEnd(12)} ${describeRound(latency)}`);
        for (const [thread, [run, wait]] of after) {
          const [run0, wait0] = before.get(thread) ?? [0, 0];
          const ms = [(run - run0) / 1e6, (wait - wait0) / 1e6];
          if (process.argv.includes("--threads") ? ms[0]! + ms[1]! > 1 : /^(router|bun|HTTP Client|Worker|JITWorker)/.test(thread) && ms[0]! > 5)
            console.log(`    ${thread.padEnd(22)} CPU ${ms[0]!.toFixed(0)} ms, waiting for a CPU ${ms[1]!.toFixed(0)} ms`);
        }
        if (dump) writeFileSync(join(dump, `round-${round}-${target.name}.txt`), Array.from(latency, (value, i) => `${started[i]!.toFixed(3)} ${value.toFixed(0)}`).join("\n"));
      }
    }
  } finally {
    for (const service of services.reverse()) await service.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();

/**
 * `bun scripts/bench-variants.ts VARIANTS.json`: several variants of the router (built
 * binaries, environment switches, flags) side by side in one process tree, against one
 * mock upstream, measured in alternating wrk rounds (c=32 or --connections N, non-streaming, or streaming
 * with --stream), so a machine that slows down for a while slows every variant alike.
 * Per variant it prints the medians and ranges of calls/s, the router's CPU per call,
 * and its serving thread's CPU per call (the JavaScript thread, without the fetch
 * client's, the upkeep thread's or the collector's helpers): where a change on the
 * request path shows first. bench-ab compares two commits through the whole benchmark
 * phase; this compares any number of variants of one phase at once, such as ablations
 * by environment switch in a throwaway build.
 *
 *   [{"name": "head", "bin": "/tmp/router-head"},
 *    {"name": "no-log", "bin": "/tmp/router-head", "args": ["--request-log-days", "0"]},
 *    {"name": "switch", "bin": "/tmp/router-x", "env": {"SWITCH": "1"}}]
 *
 * Flags: --rounds N (default 8), --seconds S (a round, default 3), --connections N (default
 * 32), --stream, --large (the benchmark's 256 KiB conversation, non-streaming), --keep (leave
 * the routers' data directories and logs, to read why calls failed), --show-failures (print
 * the first failed answers of each round: slows wrk, so not for measuring), --delay MS (each
 * connection waits MS between calls, as the benchmark's large phase does with 25: a paced
 * load instead of a saturated one), --floor (the benchmark's bare Bun proxy measured
 * alongside, as the first variant), --threads (each round's CPU per call by thread), --body FILE
 * (POST this JSON body instead of the benchmark's).
 * Routers trust the bench CA through NODE_EXTRA_CA_CERTS (no re-launch), so builds of
 * any age compare alike.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testCertificates } from "../test/helpers/tls.ts";
import { headersFor, LARGE_BODY, NONSTREAM_BODY, PATH, STREAM_BODY } from "./bench/phases.ts";
import { startBenchFloor, startBenchMock } from "./bench/mock.ts";
import { cpuSeconds, threadCpuPerCall, threadCpuSeconds, type Service } from "./bench/proc.ts";
import { configureRouter, startRouter } from "./bench/router.ts";
import { flag, readVariants } from "./bench/cli.ts";
import { median } from "./bench/stats.ts";
import { runWrk, wrkScript } from "./bench/wrk.ts";

/** Threads that are not the serving thread (Bun's and JavaScriptCore's helpers). */
const HELPER_THREAD = /HTTP Client|Worker|Heap|JIT|scavenger|WarmUp|Bun Pool|Sampling/i;

const summary = (values: number[], digits: number) =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)})`;

async function main() {
  const file = process.argv[2];
  if (!file || file.startsWith("--")) throw new Error("usage: bun scripts/bench-variants.ts VARIANTS.json [--rounds N] [--seconds S] [--stream]");
  const specs = readVariants(file);
  const rounds = Number(flag("--rounds") ?? 8);
  const seconds = Number(flag("--seconds") ?? 3);
  const stream = process.argv.includes("--stream");
  const connections = Number(flag("--connections") ?? 32);
  const large = process.argv.includes("--large");
  const delayMs = Number(flag("--delay") ?? 0);
  const work = mkdtempSync(join(tmpdir(), "bench-variants-"));
  const certs = testCertificates();
  const services: Service[] = [];
  try {
    const mock = await startBenchMock(work, certs);
    services.push(mock);
    const variants = [];
    const bodyFile = flag("--body");
    const body = bodyFile ? readFileSync(bodyFile, "utf8") : large ? LARGE_BODY : stream ? STREAM_BODY : NONSTREAM_BODY;
    const scriptOptions = { showFailures: process.argv.includes("--show-failures"), delayMs: delayMs > 0 ? delayMs : undefined };
    if (process.argv.includes("--floor")) {
      const floor = await startBenchFloor(work, mock.url, certs.caFile);
      services.push(floor);
      const headers = headersFor({ name: "floor", url: floor.url, key: "" }, stream ? { "x-mock-chunks": "20" } : {});
      const script = wrkScript(work, "variant-floor", body, headers, scriptOptions);
      await runWrk({ url: floor.url + PATH, script, connections, seconds: 2 });
      variants.push({ spec: { name: "floor", bin: "" }, router: floor, script, rps: [] as number[], cpu: [] as number[], serving: [] as number[] });
    }
    for (const spec of specs) {
      const router = await startRouter({
        name: spec.name,
        cmd: [spec.bin],
        cwd: work,
        dataDir: join(work, `data-${spec.name}`),
        logFile: join(work, `${spec.name}.log`),
        caFile: certs.caFile,
        trust: "env",
        extraArgs: spec.args ?? [],
        extraEnv: spec.env ?? {},
      });
      services.push(router);
      const key = await configureRouter(router, mock.url);
      const headers = headersFor({ name: spec.name, url: router.url, key }, stream ? { "x-mock-chunks": "20" } : {});
      const script = wrkScript(work, `variant-${spec.name}`, body, headers, scriptOptions);
      // A warm-up round: JIT tiers, caches and connection pools.
      await runWrk({ url: router.url + PATH, script, connections, seconds: 2 });
      variants.push({ spec, router, script, rps: [] as number[], cpu: [] as number[], serving: [] as number[] });
    }
    for (let round = 0; round < rounds; round++) {
      // Alternating order: neither variant always runs right after the other.
      for (const variant of round % 2 ? [...variants].reverse() : variants) {
        const pid = variant.router.pid;
        const [cpu0, threads0] = [cpuSeconds(pid), threadCpuSeconds(pid)];
        const result = await runWrk({ url: variant.router.url + PATH, script: variant.script, connections, seconds });
        const [cpu1, threads1] = [cpuSeconds(pid), threadCpuSeconds(pid)];
        let serving = 0;
        for (const [name, total] of threads1) if (!HELPER_THREAD.test(name)) serving += total - (threads0.get(name) ?? 0);
        variant.rps.push(result.rps);
        variant.cpu.push(((cpu1 - cpu0) * 1e6) / result.requests);
        variant.serving.push((serving * 1e6) / result.requests);
        if (process.argv.includes("--threads")) console.log(`  ${variant.spec.name} round ${round + 1}: ${threadCpuPerCall(threads0, threads1, result.requests)}`);
        if (result.errors) console.log(`  ${variant.spec.name}: ${result.errors} errors (${result.non2xx} non-2xx answers) in round ${round + 1}`);
        for (const failure of result.failures) console.log(`    ${failure}`);
      }
    }
    console.log(`${bodyFile ? `${bodyFile} (${body.length} bytes)` : large ? "256 KiB prompt" : stream ? "streaming" : "non-streaming"} c=${connections}${delayMs > 0 ? `, ${delayMs} ms between a connection's calls` : ""}, ${rounds} alternating rounds of ${seconds} s: median (min-max)`);
    for (const v of variants) {
      console.log(`  ${v.spec.name.padEnd(14)} calls/s ${summary(v.rps, 0)}  CPU per call ${summary(v.cpu, 1)} µs  serving thread ${summary(v.serving, 1)} µs`);
    }
  } finally {
    for (const service of services.reverse()) await service.stop(2000).catch(() => {});
    if (process.argv.includes("--keep")) console.log(`routers' data and logs kept in ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

await main();

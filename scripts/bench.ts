#!/usr/bin/env bun
/**
 * `npm run bench`: the router against a bare Bun passthrough (the "floor") and
 * against calling the mock upstream directly, all on loopback, in interleaved rounds,
 * with the targets of issue 6. Writes docs/benchmarks.md (full runs) and prints a table.
 *
 *   npm run bench                      full run (about 17 minutes)
 *   npm run bench -- --quick           smoke run of every phase (about 3.5 minutes)
 *   flags: --soak <s> --rounds <n> --seconds <s> --rows <n> --only <phase,…>
 *          --profile | --no-profile --write | --no-write --rebuild --keep
 *          --repeats <n>  measurements repeated when other programs load the machine (default 6)
 *          --soak-raised  also soak a router started with BUN_CONFIG_MAX_HTTP_REQUESTS raised
 *          --tree <dir>  measure the router of another source tree (its dist/router, src/main.ts)
 *   env BENCH_ROUTER_ENV='{"NAME":"value"}': extra environment for the measured routers (the profile phase's too), for
 *          experiments (e.g. {"BUN_JSC_logGC":"1"} logs each garbage collection to router.log)
 *   phases: throughput, large, latency, cpu, ttft, soak, scaleout, bills, profile
 *   (scaleout: two instances on a throwaway PostgreSQL and Redis; skipped when those are not installed)
 *
 * Processes: mock upstream (HTTPS), floor proxy and dist/router each in their own
 * process, so /proc CPU and memory figures are per process. wrk drives plain HTTP
 * load; scripts/bench/stream-client.ts (with BUN_CONFIG_MAX_HTTP_REQUESTS raised) drives
 * streams and measures time to first token.
 */
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testCertificates } from "../test/helpers/tls.ts";
import { benchBills, type BillsResult } from "./bench/bills.ts";
import {
  cpuPhase,
  headersFor,
  latencyPhase,
  log,
  noise,
  NONSTREAM_BODY,
  PATH,
  profilePhase,
  servicePids,
  setRepeats,
  soakPhase,
  STREAM_BODY,
  STREAM_USAGE_BODY,
  largePhase,
  throughputPhase,
  ttftPhase,
  type Target,
} from "./bench/phases.ts";
import { machine, rssMb, runChecked, type Service } from "./bench/proc.ts";
import { startBenchFloor, startBenchMock } from "./bench/mock.ts";
import { RAISED, renderMarkdown, renderTable, type BenchReport } from "./bench/report.ts";
import { benchRouterEnv, configureRouter, startRouter } from "./bench/router.ts";
import { scaleOutPhase } from "./bench/scaleout.ts";
import { parseSettings, ROOT } from "./bench/settings.ts";
import { median } from "./bench/stats.ts";
import { ensureWrk } from "./bench/wrk.ts";

// ---------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------

async function main() {
  const s = parseSettings(process.argv.slice(2));
  const BINARY = join(s.tree, "dist", "router");
  const repeatsUsed = setRepeats(s.repeats);
  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), "gwbench-"));
  log(`work dir ${work}; phases ${[...s.phases].join(", ")}`);

  if (s.rebuild || !existsSync(BINARY)) {
    log("building dist/router …");
    runChecked([process.execPath, join(s.tree, "scripts", "build.ts")], { cwd: s.tree });
  } else if (newestSource(join(s.tree, "src")) > statSync(BINARY).mtimeMs) {
    log("dist/router is older than src/: rebuilding …");
    try {
      runChecked([process.execPath, join(s.tree, "scripts", "build.ts")], { cwd: s.tree });
    } catch (error) {
      // Work in progress elsewhere in the tree may not build; measure the binary there is.
      log(`rebuild failed, measuring the existing dist/router (built ${statSync(BINARY).mtime.toISOString()}):\n${(error as Error).message.split("\n").slice(0, 6).join("\n")}`);
    }
  }
  const binaryBuilt = statSync(BINARY).mtime.toISOString();
  // Run a private copy: a rebuild of dist/router mid-run, or a cleanup elsewhere that
  // matches "dist/router" by name, must not touch the process under test.
  mkdirSync(join(work, "bin"));
  const binary = join(work, "bin", "gwbench-server");
  copyFileSync(BINARY, binary);
  chmodSync(binary, 0o755);
  const wrkVersion = ensureWrk();
  const certs = testCertificates();
  const routerVersion = runChecked([binary, "--version"]).trim();
  let commit = "unknown";
  try {
    commit = runChecked(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).trim();
    if (s.tree !== ROOT) commit += `; router measured from the source tree ${s.tree}`;
    else if (runChecked(["git", "-C", ROOT, "status", "--porcelain", "--", "src"]).trim()) commit += " (src/ has uncommitted changes)";
  } catch {
    // Not a git checkout.
  }

  const services: Service[] = [];
  try {
    const mock = await startBenchMock(work, certs);
    services.push(mock);
    servicePids.push(mock.pid);
    const floorService = await startBenchFloor(work, mock.url, certs.caFile);
    services.push(floorService);
    servicePids.push(floorService.pid);
    const routerService = await startRouter({
      name: "router",
      cmd: [binary],
      cwd: work,
      dataDir: join(work, "data"),
      logFile: join(work, "router.log"),
      caFile: certs.caFile,
      extraEnv: benchRouterEnv(),
    });
    services.push(routerService);
    servicePids.push(routerService.pid);
    const userKey = await configureRouter(routerService, mock.url);
    log(`mock ${mock.url}, floor ${floorService.url}, router ${routerService.url} (pid ${routerService.pid})`);

    const direct: Target = { name: "direct", url: mock.url, key: "sk-direct" };
    const floor: Target = { name: "floor", url: floorService.url, key: "sk-floor", pid: floorService.pid };
    const router: Target = { name: "router", url: routerService.url, key: userKey, pid: routerService.pid };

    /** The same binary with the fetch limit raised from outside: what the router gets once it raises it itself. */
    let raised: Target | undefined;
    const raisedRouter = async (): Promise<Target> => {
      if (raised) return raised;
      const service = await startRouter({
        name: "router-raised",
        cmd: [binary],
        cwd: work,
        dataDir: join(work, "data-raised"),
        logFile: join(work, "router-raised.log"),
        caFile: certs.caFile,
        extraEnv: { BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" },
      });
      services.push(service);
      servicePids.push(service.pid);
      const key = await configureRouter(service, mock.url);
      raised = { name: RAISED, url: service.url, key, pid: service.pid };
      return raised;
    };

    // A first call through every path, so a broken setup fails here and not mid-phase.
    for (const target of [direct, floor, router]) {
      const response = await fetch(target.url + PATH, { method: "POST", headers: headersFor(target), body: NONSTREAM_BODY, tls: { rejectUnauthorized: false } } as RequestInit);
      const text = await response.text();
      if (!response.ok || !text.includes('"usage"')) throw new Error(`${target.name} answered ${response.status}: ${text.slice(0, 300)}`);
    }
    await Bun.sleep(1500);
    const idleRss = median([rssMb(router.pid!), (await Bun.sleep(300), rssMb(router.pid!)), (await Bun.sleep(300), rssMb(router.pid!))]);
    const floorIdleRss = rssMb(floor.pid!);
    log(`idle RSS: router ${idleRss.toFixed(1)} MB, floor ${floorIdleRss.toFixed(1)} MB`);

    const report: BenchReport = {
      date: new Date().toISOString(),
      command: `npm run bench${s.argv.length ? ` -- ${s.argv.join(" ")}` : ""}`,
      settings: {
        quick: s.quick,
        rounds: s.rounds,
        seconds: s.seconds,
        ttftSeconds: s.ttftSeconds,
        cpuSeconds: s.cpuSeconds,
        soakSeconds: s.soakSeconds,
        soakRaised: s.soakRaised,
        rows: s.rows,
        paced: s.paced,
      },
      machine: machine(),
      versions: { bun: Bun.version, router: routerVersion, commit, wrk: wrkVersion, binaryBuilt },
      idleRss,
      floorIdleRss,
    };

    if (s.phases.has("throughput")) {
      log("phase: throughput (wrk, floor vs router)");
      report.throughput = await throughputPhase(s, work, floor, router, mock.pid);
    }
    if (s.phases.has("large")) {
      log("phase: large prompts (256 KiB conversation, 8 paced connections; floor vs router)");
      report.large = await largePhase(s, work, floor, router);
    }
    if (s.phases.has("latency")) {
      log("phase: added latency at c=1 (wrk; direct, floor, router)");
      report.latency = await latencyPhase(s, work, [direct, floor, router]);
    }
    if (s.phases.has("cpu")) {
      log("phase: CPU per stream and per chunk");
      report.cpu = await cpuPhase(
        s,
        [
          { ...floor, body: STREAM_BODY },
          { ...router, body: STREAM_BODY },
          { ...router, name: "router (client asks include_usage)", body: STREAM_USAGE_BODY },
        ],
        certs.caFile,
      );
    }
    if (s.phases.has("ttft")) {
      log("phase: TTFT at 100 paced streams");
      report.ttft100 = await ttftPhase(s, 100, [direct, floor, router], mock.url, certs.caFile);
      log("phase: TTFT at 1,000 paced streams");
      report.ttft1000 = await ttftPhase(s, 1000, [direct, floor, router, await raisedRouter()], mock.url, certs.caFile);
    }
    if (s.phases.has("soak")) {
      log(`phase: soak, 1,000 streams for ${s.soakSeconds} s`);
      report.soak = await soakPhase(s, router, mock.url, certs.caFile);
      if (s.soakRaised) {
        log(`phase: soak of the router with the fetch limit raised, 1,000 streams for ${s.soakSeconds} s`);
        report.soakRaised = await soakPhase(s, await raisedRouter(), mock.url, certs.caFile);
      }
    }
    if (s.phases.has("scaleout")) {
      log("phase: scale-out, two instances on one PostgreSQL and one Redis");
      report.scaleout = await scaleOutPhase(s, { work, binary, mockUrl: mock.url, caFile: certs.caFile, direct, floor, router });
      if (report.scaleout.skipped && s.phases.size === 1) throw new Error(`scale-out phase skipped: ${report.scaleout.skipped}`);
    }
    for (const service of services.splice(1)) await service.stop();

    if (s.phases.has("bills")) {
      log(`phase: bills over ${s.rows.toLocaleString("en")} usage rows`);
      const result: BillsResult = await benchBills({
        cmd: [binary],
        cwd: work,
        dataDir: join(work, "data-bills"),
        caFile: certs.caFile,
        workDir: work,
        rows: s.rows,
        samples: s.billSamples,
      });
      report.bills = result;
      log(`bills: seeded in ${result.seedSeconds.toFixed(1)} s; /dashboard/bill p50 ${result.dashboard.p50.toFixed(1)} ms, /x-bill p50 ${result.xbill.p50.toFixed(1)} ms`);
    }
    if (s.phases.has("profile")) {
      log("phase: CPU profile of the router from source (bun --cpu-prof)");
      report.profiles = await profilePhase(s, work, mock.url, certs.caFile);
    }
    await mock.stop();
    services.length = 0;

    report.elapsedSeconds = Math.round((Date.now() - started) / 1000);
    report.noise = noise;
    report.repeated = repeatsUsed();
    console.log("\n" + renderTable(report));
    const markdown = renderMarkdown(report);
    const out = s.write ? join(ROOT, "docs", "benchmarks.md") : join(work, "benchmarks.md");
    writeFileSync(out, mergeGenerated(out, markdown));
    writeFileSync(join(work, "report.json"), JSON.stringify(report, null, 2));
    log(`wrote ${out}${s.write ? "" : " (use --write to update docs/benchmarks.md)"}; raw results in ${join(work, "report.json")}`);
    if (!s.keep) {
      // Keep the small results; the databases and logs can be large.
      for (const entry of readdirSync(work)) if (entry !== "report.json" && entry !== "benchmarks.md") rmSync(join(work, entry), { recursive: true, force: true });
    }
  } finally {
    for (const service of services) await service.stop().catch(() => {});
  }
}

/** Latest modification time under a directory, to tell whether dist/router is stale. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

const BEGIN = "<!-- bench:begin (generated by scripts/bench.ts; edit outside these markers) -->";
const END = "<!-- bench:end -->";

/** Replaces the generated part of an existing file, keeping what was written by hand around it. */
function mergeGenerated(path: string, generated: string): string {
  const block = `${BEGIN}\n${generated.trim()}\n${END}`;
  if (!existsSync(path)) return `${block}\n`;
  const current = readFileSync(path, "utf8");
  const a = current.indexOf(BEGIN.slice(0, 20));
  const b = current.indexOf(END);
  if (a < 0 || b < 0) return `${block}\n`;
  return current.slice(0, a) + block + current.slice(b + END.length);
}

await main();
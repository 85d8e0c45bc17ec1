/**
 * The measurements of scripts/bench.ts: request bodies, targets, load runs and one
 * function per phase, each in interleaved rounds, repeated when other programs load
 * the machine.
 */
import { join } from "node:path";
import { cpuSeconds, foreignLoad, rssMb, threadCpuPerCall, threadCpuSeconds } from "./proc.ts";
import { findProfile, summariseProfile } from "./profile.ts";
import type { CpuRound, LargeRound, LatencyRound, ProfileResult, SoakResult, ThroughputRound, TtftRound } from "./report.ts";
import { BENCH_MODEL, benchRouterEnv, configureRouter, startRouter } from "./router.ts";
import type { Settings } from "./settings.ts";
import type { ClientConfig, ClientResult } from "./stream-client.ts";
import { max, slope } from "./stats.ts";
import { runWrk, wrkScript, type WrkResult } from "./wrk.ts";

// ---------------------------------------------------------------------------
// Request bodies
// ---------------------------------------------------------------------------

const MESSAGES = [
  {
    role: "system",
    content:
      "You are a concise assistant for a customer support team. Answer in plain English, cite the relevant policy section when there is one, and never invent order numbers.",
  },
  { role: "user", content: "My parcel was marked as delivered yesterday but I have not received it. What can I do, and how long does a claim take?" },
];
export const NONSTREAM_BODY = JSON.stringify({ model: BENCH_MODEL, messages: MESSAGES, max_tokens: 256, temperature: 0.2 });
/** What the OpenAI SDK sends by default: no stream_options, so the router adds include_usage and hides that chunk. */
export const STREAM_BODY = JSON.stringify({ model: BENCH_MODEL, messages: MESSAGES, max_tokens: 256, temperature: 0.2, stream: true });
/** A client that asks for usage itself: the router forwards the body untouched and only taps the stream. */
export const STREAM_USAGE_BODY = JSON.stringify({
  model: BENCH_MODEL,
  messages: MESSAGES,
  max_tokens: 256,
  temperature: 0.2,
  stream: true,
  stream_options: { include_usage: true },
});
export const PATH = "/v1/chat/completions";

/**
 * A long conversation of ordinary text (issue 19): 278 messages, about 256 KiB, the size
 * an agent's context reaches after an hour of work.
 */
export const LARGE_BODY = (() => {
  const sentences = [
    "The deployment finished without errors, but the health check on the second region took longer than usual.",
    "Could you look at the retry policy and tell me whether the backoff doubles or grows linearly?",
    "I compared the two configuration files line by line and only the timeout and the pool size differ.",
    "Here is the stack trace from the failing job; the interesting part starts after the connection reset.",
  ];
  const messages: Array<{ role: string; content: string }> = [{ role: "system", content: MESSAGES[0]!.content }];
  for (let i = 0; messages.length < 278; i++) {
    let content = "";
    while (content.length < 920) content += `${sentences[(i + content.length) % sentences.length]} `;
    messages.push({ role: i % 2 === 0 ? "user" : "assistant", content: content.trim() });
  }
  return JSON.stringify({ model: BENCH_MODEL, messages, max_tokens: 256, temperature: 0.2 });
})();

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

export interface Target {
  name: string;
  url: string;
  key: string;
  /** Process whose CPU and memory are measured (none for direct calls). */
  pid?: number;
}

export function log(message: string) {
  const t = new Date().toISOString().slice(11, 19);
  console.log(`[${t}] ${message}`);
}

/** Pids of the benchmark's own long-running processes, to tell their CPU from other load on the machine. */
export const servicePids: number[] = [];
/** Share of all CPUs used by other programs during each kept measurement, by phase. */
export const noise: Record<string, number[]> = {};
/** Above this share of the CPUs used by other programs, a measurement is repeated (while repeats are left). */
const MAX_OTHER_LOAD = 0.2;
let repeatsLeft = 0;

/** Sets the run's budget of repeated measurements; returns a function telling how many were used. */
export function setRepeats(budget: number): () => number {
  repeatsLeft = budget;
  return () => budget - repeatsLeft;
}

/**
 * Runs one measurement and tells how busy other programs kept the machine meanwhile
 * (builds and tests of other users share these CPUs); a noisy measurement is
 * repeated, within the run's budget of repeats.
 */
export async function quiet<T>(phase: string, label: string, measure: () => Promise<T>): Promise<{ value: T; other: number }> {
  for (;;) {
    const meter = foreignLoad(() => servicePids);
    const value = await measure();
    const other = meter();
    if (other <= MAX_OTHER_LOAD || repeatsLeft <= 0) {
      (noise[phase] ??= []).push(other);
      return { value, other };
    }
    repeatsLeft--;
    log(`${label}: other programs used ${(other * 100).toFixed(0)}% of the CPUs meanwhile; measuring again (${repeatsLeft} repeats left)`);
    await Bun.sleep(3000);
  }
}

async function mockStats(mockUrl: string, reset = false): Promise<{ inflight: number; maxInflight: number; requests: number }> {
  const response = await fetch(`${mockUrl}/__stats${reset ? "?reset=1" : ""}`, { tls: { rejectUnauthorized: false } } as RequestInit);
  return (await response.json()) as { inflight: number; maxInflight: number; requests: number };
}

async function waitMockIdle(mockUrl: string) {
  for (let i = 0; i < 200; i++) {
    if ((await mockStats(mockUrl)).inflight === 0) return;
    await Bun.sleep(50);
  }
}

/** Samples a process's RSS every `everyMs` until stopped. */
function rssSampler(pid: number, everyMs: number) {
  const samples: Array<[number, number]> = [];
  const t0 = performance.now();
  const take = () => {
    try {
      samples.push([(performance.now() - t0) / 1000, rssMb(pid)]);
    } catch {
      // The process is gone.
    }
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    samples,
    stop() {
      clearInterval(timer);
      take();
      return samples;
    },
  };
}

async function runClient(config: ClientConfig, caFile: string): Promise<ClientResult> {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "stream-client.ts"), JSON.stringify(config)], {
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "65535", NODE_EXTRA_CA_CERTS: caFile },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  const line = out.split("\n").find((l) => l.startsWith("CLIENTJSON "));
  if (!line) throw new Error(`stream client failed (exit ${proc.exitCode}):\n${out.slice(-2000)}\n${err.slice(-2000)}`);
  return JSON.parse(line.slice(11)) as ClientResult;
}

export const headersFor = (target: Target, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${target.key}`,
  "content-type": "application/json",
  ...extra,
});

const pacedHeaders = (p: { firstMs: number; everyMs: number; chunks: number }) => ({
  "x-mock-first-ms": String(p.firstMs),
  "x-mock-every-ms": String(p.everyMs),
  "x-mock-chunks": String(p.chunks),
});

// ---------------------------------------------------------------------------
// Phases
// ---------------------------------------------------------------------------

export async function throughputPhase(s: Settings, work: string, floor: Target, router: Target, mockPid: number) {
  const scenarios = [
    { name: "non-streaming c=32", body: NONSTREAM_BODY, c: 32 },
    { name: "non-streaming c=128", body: NONSTREAM_BODY, c: 128 },
    { name: "streaming c=32", body: STREAM_BODY, c: 32 },
    { name: "streaming c=128", body: STREAM_BODY, c: 128 },
  ];
  const results: Record<string, Record<string, ThroughputRound[]>> = {};
  for (const scenario of scenarios) {
    results[scenario.name] = { floor: [], router: [] };
    const scripts = new Map<string, string>();
    for (const target of [floor, router]) {
      const script = wrkScript(work, `${target.name}-${scenario.name.replace(/\W+/g, "-")}`, scenario.body, headersFor(target, { "x-mock-chunks": "20" }));
      scripts.set(target.name, script);
      // Warm-up, not recorded: connections, JIT.
      await runWrk({ url: target.url + PATH, script, connections: scenario.c, seconds: 1 });
    }
    for (let round = 1; round <= s.rounds; round++) {
      for (const target of [floor, router]) {
        const label = `throughput ${scenario.name} round ${round} ${target.name}`;
        const { value, other } = await quiet("throughput", label, async () => {
          const cpu0 = cpuSeconds(target.pid!);
          const threads0 = threadCpuSeconds(target.pid!);
          const mock0 = cpuSeconds(mockPid);
          const r: WrkResult = await runWrk({ url: target.url + PATH, script: scripts.get(target.name)!, connections: scenario.c, seconds: s.seconds });
          return { r, cpu: cpuSeconds(target.pid!) - cpu0, mockCpu: cpuSeconds(mockPid) - mock0, threads: threadCpuPerCall(threads0, threadCpuSeconds(target.pid!), r.requests) };
        });
        const { r, cpu, mockCpu, threads } = value;
        results[scenario.name]![target.name]!.push({
          rps: r.rps,
          errors: r.errors,
          p50: r.p50,
          p99: r.p99,
          cpuUs: (cpu / Math.max(1, r.requests)) * 1e6,
          mockCpuUs: (mockCpu / Math.max(1, r.requests)) * 1e6,
        });
        log(`${label}: ${r.rps.toFixed(0)} req/s, errors ${r.errors}, CPU ${((cpu / Math.max(1, r.requests)) * 1e6).toFixed(0)} µs/req (${threads}), other load ${(other * 100).toFixed(0)}%`);
      }
    }
  }
  return results;
}

/**
 * Large prompts (issue 19): the 256 KiB conversation at 8 connections, paced (each
 * connection waits 25 ms between calls) so the machine is not saturated: CPU per call
 * and p50 latency, router against floor.
 */
export async function largePhase(s: Settings, work: string, floor: Target, router: Target) {
  const results: Record<string, LargeRound[]> = { floor: [], router: [] };
  const scripts = new Map<string, string>();
  for (const target of [floor, router]) {
    scripts.set(target.name, wrkScript(work, `${target.name}-large`, LARGE_BODY, headersFor(target), { delayMs: 25 }));
    await runWrk({ url: target.url + PATH, script: scripts.get(target.name)!, connections: 8, seconds: 1 });
  }
  for (let round = 1; round <= s.rounds; round++) {
    for (const target of [floor, router]) {
      const label = `large prompt round ${round} ${target.name}`;
      const { value } = await quiet("large", label, async () => {
        const cpu0 = cpuSeconds(target.pid!);
        const threads0 = threadCpuSeconds(target.pid!);
        const r = await runWrk({ url: target.url + PATH, script: scripts.get(target.name)!, connections: 8, seconds: s.seconds });
        return { r, cpu: cpuSeconds(target.pid!) - cpu0, threads: threadCpuPerCall(threads0, threadCpuSeconds(target.pid!), r.requests) };
      });
      const { r, cpu, threads } = value;
      const cpuUs = (cpu / Math.max(1, r.requests)) * 1e6;
      results[target.name]!.push({ rps: r.rps, errors: r.errors, p50: r.p50, p99: r.p99, cpuUs });
      log(`${label}: ${r.rps.toFixed(0)} req/s, p50 ${(r.p50 * 1000).toFixed(0)} µs, CPU ${cpuUs.toFixed(0)} µs/req (${threads}), errors ${r.errors}`);
    }
  }
  return results;
}

export async function latencyPhase(s: Settings, work: string, targets: Target[]) {
  const results: Record<string, LatencyRound[]> = {};
  const scripts = new Map<string, string>();
  for (const target of targets) {
    results[target.name] = [];
    scripts.set(target.name, wrkScript(work, `${target.name}-c1`, NONSTREAM_BODY, headersFor(target)));
    await runWrk({ url: target.url + PATH, script: scripts.get(target.name)!, connections: 1, seconds: 1 });
  }
  for (let round = 1; round <= s.rounds; round++) {
    for (const target of targets) {
      const { value: r, other } = await quiet("latency", `latency c=1 round ${round} ${target.name}`, () =>
        runWrk({ url: target.url + PATH, script: scripts.get(target.name)!, connections: 1, seconds: s.seconds }),
      );
      results[target.name]!.push({ p50: r.p50, p90: r.p90, p99: r.p99, rps: r.rps, errors: r.errors });
      log(`latency c=1 round ${round} ${target.name}: p50 ${(r.p50 * 1000).toFixed(0)} µs, p99 ${(r.p99 * 1000).toFixed(0)} µs, other load ${(other * 100).toFixed(0)}%`);
    }
  }
  return results;
}

/**
 * CPU per stream and per chunk: paced streams (a chunk every 5 ms, so each arrives
 * in its own read) with 1 and with 41 content chunks; the difference per extra chunk
 * is the per-chunk cost, the 1-chunk figure the per-stream cost.
 */
export async function cpuPhase(s: Settings, targets: Array<Target & { body: string }>, caFile: string) {
  const CHUNKS = [1, 41];
  const results: Record<string, CpuRound[]> = {};
  for (const target of targets) results[target.name] = [];
  for (let round = 1; round <= s.rounds; round++) {
    for (const chunks of CHUNKS) {
      for (const target of targets) {
        const config: ClientConfig = {
          url: target.url + PATH,
          headers: headersFor(target, pacedHeaders({ firstMs: 0, everyMs: 5, chunks })),
          body: target.body,
          concurrency: s.quick ? 20 : 50,
          durationMs: s.cpuSeconds * 1000,
          staggerMs: 50,
          skipFirst: false,
          streamTimeoutMs: 30_000,
        };
        const { value } = await quiet("cpu", `cpu round ${round} ${target.name} ${chunks} chunk(s)`, async () => {
          const cpu0 = cpuSeconds(target.pid!);
          const r = await runClient(config, caFile);
          // Metering finishes after the last byte: let the recorder's tick run.
          await Bun.sleep(250);
          return { r, cpu: cpuSeconds(target.pid!) - cpu0 };
        });
        const { r, cpu } = value;
        const errors = r.errors.status + r.errors.network + r.errors.timeout + r.errors.truncated;
        results[target.name]!.push({ chunks, streams: r.streams, errors, cpuPerStreamUs: (cpu / Math.max(1, r.streams)) * 1e6 });
        log(`cpu round ${round} ${target.name} ${chunks} chunk(s): ${r.streams} streams, ${((cpu / Math.max(1, r.streams)) * 1e6).toFixed(0)} µs/stream, errors ${errors}`);
      }
    }
  }
  return results;
}

export async function ttftPhase(s: Settings, concurrency: number, targets: Target[], mockUrl: string, caFile: string) {
  const results: Record<string, TtftRound[]> = {};
  for (const target of targets) results[target.name] = [];
  const streamMs = s.paced.firstMs + s.paced.everyMs * s.paced.chunks;
  for (let round = 1; round <= s.rounds; round++) {
    for (const target of targets) {
      const { value, other } = await quiet(`ttft c=${concurrency}`, `ttft c=${concurrency} round ${round} ${target.name}`, async () => {
        await waitMockIdle(mockUrl);
        await mockStats(mockUrl, true);
        const sampler = target.pid ? rssSampler(target.pid, 250) : undefined;
        const r = await runClient(
          {
            url: target.url + PATH,
            headers: headersFor(target, pacedHeaders(s.paced)),
            body: STREAM_BODY,
            concurrency,
            durationMs: s.ttftSeconds * 1000,
            staggerMs: streamMs,
            skipFirst: true,
            streamTimeoutMs: 120_000,
          },
          caFile,
        );
        const rss = sampler?.stop();
        return { r, rss, stats: await mockStats(mockUrl) };
      });
      const { r, rss, stats } = value;
      const errors = r.errors.status + r.errors.network + r.errors.timeout + r.errors.truncated;
      results[target.name]!.push({
        ...r.ttft,
        streams: r.streams,
        errors,
        errorSamples: r.errorSamples,
        upstreamMax: stats.maxInflight,
        peakRssMb: rss ? max(rss.map(([, v]) => v)) : undefined,
      });
      log(
        `ttft c=${concurrency} round ${round} ${target.name}: p50 ${r.ttft.p50.toFixed(1)} ms, p99 ${r.ttft.p99.toFixed(1)} ms, ` +
          `${r.streams} streams, errors ${errors}, upstream max ${stats.maxInflight}, other load ${(other * 100).toFixed(0)}%${rss ? `, peak RSS ${max(rss.map(([, v]) => v)).toFixed(0)} MB` : ""}`,
      );
    }
  }
  return results;
}

export async function soakPhase(s: Settings, router: Target, mockUrl: string, caFile: string): Promise<SoakResult> {
  await waitMockIdle(mockUrl);
  const sampler = rssSampler(router.pid!, 1000);
  const cpu0 = cpuSeconds(router.pid!);
  const meter = foreignLoad(() => servicePids);
  const r = await runClient(
    {
      url: router.url + PATH,
      headers: headersFor(router, pacedHeaders(s.paced)),
      body: STREAM_BODY,
      concurrency: 1000,
      durationMs: s.soakSeconds * 1000,
      staggerMs: s.paced.firstMs + s.paced.everyMs * s.paced.chunks,
      skipFirst: true,
      streamTimeoutMs: 120_000,
    },
    caFile,
  );
  (noise.soak ??= []).push(meter());
  await Bun.sleep(250);
  const cpu = cpuSeconds(router.pid!) - cpu0;
  const rss = sampler.stop();
  const warm = rss.filter(([t]) => t >= s.soakSeconds / 5);
  await Bun.sleep(5000);
  const idleAfterMb = rssMb(router.pid!);
  const errors = r.errors.status + r.errors.network + r.errors.timeout + r.errors.truncated;
  const result: SoakResult = {
    seconds: s.soakSeconds,
    streams: r.streams,
    errors,
    errorSamples: r.errorSamples,
    ttftP50: r.ttft.p50,
    ttftP99: r.ttft.p99,
    cpuPerStreamUs: (cpu / Math.max(1, r.streams)) * 1e6,
    rss,
    startMb: warm[0]?.[1] ?? NaN,
    endMb: rss[rss.length - 1]?.[1] ?? NaN,
    peakMb: max(rss.map(([, v]) => v)),
    slopeMbPerMin: slope(warm) * 60,
    idleAfterMb,
  };
  log(`soak ${s.soakSeconds} s: ${r.streams} streams, errors ${errors}, RSS ${result.startMb.toFixed(0)} → ${result.endMb.toFixed(0)} MB (peak ${result.peakMb.toFixed(0)}), slope ${result.slopeMbPerMin.toFixed(2)} MB/min`);
  return result;
}

/** The router from source under `bun --cpu-prof`, one profile per workload. */
export async function profilePhase(s: Settings, work: string, mockUrl: string, caFile: string): Promise<ProfileResult[]> {
  const tree = s.tree;
  const workloads = [
    { name: "non-streaming, wrk c=32", body: NONSTREAM_BODY, connections: 32, delayMs: 0 },
    { name: "streaming (20 chunks at once), wrk c=32", body: STREAM_BODY, connections: 32, delayMs: 0 },
    { name: "256 KiB prompt, wrk c=8 paced", body: LARGE_BODY, connections: 8, delayMs: 25 },
  ];
  const out: ProfileResult[] = [];
  for (const [i, workload] of workloads.entries()) {
    const dir = join(work, `profile-${i}`);
    const router = await startRouter({
      name: `router (profile ${i})`,
      cmd: [process.execPath, "--cpu-prof", `--cpu-prof-dir=${dir}`, join(tree, "src", "main.ts")],
      cwd: tree,
      dataDir: join(work, `profile-data-${i}`),
      logFile: join(work, `router-profile-${i}.log`),
      caFile,
      trust: "env",
      // With the fetch limit already set, serve does not re-exec itself: an execve while
      // the sampling profiler signals the thread sometimes killed the process (SIGPWR).
      extraEnv: { ...benchRouterEnv(), BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" },
    });
    const key = await configureRouter(router, mockUrl);
    const target: Target = { name: "router", url: router.url, key, pid: router.pid };
    const script = wrkScript(work, `profile-${i}`, workload.body, headersFor(target, { "x-mock-chunks": "20" }), { delayMs: workload.delayMs });
    await runWrk({ url: router.url + PATH, script, connections: workload.connections, seconds: 2 });
    const r = await runWrk({ url: router.url + PATH, script, connections: workload.connections, seconds: Math.max(3, s.seconds) });
    await router.stop(20_000);
    const file = findProfile(dir);
    if (!file) throw new Error(`no .cpuprofile written in ${dir}`);
    out.push({ workload: workload.name, summary: summariseProfile(file, tree, 20), requests: r.requests });
    log(`profile ${workload.name}: ${r.requests} requests, ${file}`);
  }
  return out;
}


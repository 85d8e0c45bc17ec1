/**
 * The scale-out phase (issue 15): two instances of the compiled router on one
 * throwaway PostgreSQL and one throwaway Redis on this machine, measured against the
 * floor and the single SQLite router in interleaved rounds:
 * - non-streaming throughput at c=32, the 32 connections split over both instances by
 *   two wrk processes (16 each), the way a round-robin load balancer spreads them;
 * - added latency at c=1 (one keep-alive connection reaches one instance);
 * - the invalidation lag: from a key rotation answered by instance A to instance B
 *   refusing the old key.
 */
import { RedisClient, SQL } from "bun";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as countScripts from "../../src/state/redis/lua.ts";
import * as creditScripts from "../../src/state/redis/lua-credit.ts";
import * as keyScripts from "../../src/state/redis/lua-keys.ts";
import * as usageScripts from "../../src/state/redis/lua-usage.ts";
import { startPostgres, type PostgresServer } from "../../test/helpers/postgres-server.ts";
import { startRedisServer, type RedisServer } from "../../test/helpers/redis-server.ts";
import { headersFor, log, NONSTREAM_BODY, PATH, quiet, servicePids, type Target } from "./phases.ts";
import { cpuSeconds } from "./proc.ts";
import type { LatencyRound, ThroughputRound } from "./report.ts";
import { api, benchRouterEnv, configureRouter, startRouter } from "./router.ts";
import { findProfile, summariseProfile } from "./profile.ts";
import type { Settings } from "./settings.ts";
import { percentile } from "./stats.ts";
import { runWrk, wrkScript } from "./wrk.ts";

export const ONE_INSTANCE = "one instance on PostgreSQL + Redis";
export const TWO_INSTANCES = "two instances on PostgreSQL + Redis";

export interface ScaleOutThroughputRound extends ThroughputRound {
  /** CPU of PostgreSQL and Redis per request, µs (all their processes). */
  servicesCpuUs: number;
}

export interface ScaleOutResult {
  /** Why the phase did not run (PostgreSQL or Redis not installed). */
  skipped?: string;
  /** Non-streaming c=32 by target: floor, router (SQLite), ONE_INSTANCE, TWO_INSTANCES. */
  throughput?: Record<string, ScaleOutThroughputRound[]>;
  /** c=1 by target: direct, floor, router (SQLite), ONE_INSTANCE. */
  latency?: Record<string, LatencyRound[]>;
  lag?: {
    rotations: number;
    /** ms from A's answer to B's first refusal of the old key, one per rotation. */
    samples: number[];
    p50: number;
    p99: number;
    max: number;
    /** Median round trip of one poll of B: the resolution of each sample. */
    pollMs: number;
  };
  /** What one call costs the shared services, counted over a run of load on both instances. */
  census?: Census;
  versions?: { postgres: string; redis: string };
}

export interface Census {
  requests: number;
  /** Redis commands per call, by command (EVALSHA, PUBLISH, …), from INFO commandstats. */
  redisPerCall: Record<string, number>;
  /** Redis server time per call, µs (commandstats usec). */
  redisUsPerCall: number;
  /** PostgreSQL transactions committed and rows inserted and updated per call, from pg_stat_database. */
  pgCommitsPerCall: number;
  pgInsertsPerCall: number;
  pgUpdatesPerCall: number;
  /** Script runs per call by script name (ADMIT, ADJUST, …) and their mean time in Redis, µs, from sequential calls. */
  scripts: Record<string, { perCall: number; meanUs: number }>;
  /** CPU per call, µs: both router processes, PostgreSQL, Redis. */
  routerCpuUs: number;
  pgCpuUs: number;
  redisCpuUs: number;
}

/** Why the phase cannot run here, or undefined when PostgreSQL and Redis are installed. */
function missingServices(): string | undefined {
  if (!Bun.which("redis-server")) return "redis-server is not installed (Debian package redis-server)";
  const root = "/usr/lib/postgresql";
  if (!existsSync(root) || !readdirSync(root).some((v) => existsSync(join(root, v, "bin", "postgres")))) {
    return "PostgreSQL is not installed (Debian package postgresql)";
  }
  return undefined;
}

/** Pids of PostgreSQL (the postmaster on `port` and its children) and of the redis-server on `redisPort`. */
function servicePidsOf(pgPort: number, redisPort: number): { postgres: () => number[]; redis: number[] } {
  const procs: Array<{ pid: number; ppid: number; cmd: string }> = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ");
      procs.push({ pid: Number(entry), ppid, cmd });
    } catch {
      // Gone meanwhile.
    }
  }
  const postmaster = procs.find((p) => /\bpostgres\b/.test(p.cmd) && p.cmd.includes(` -p ${pgPort} `));
  const redis = procs.find((p) => p.cmd.includes("redis-server") && p.cmd.includes(`:${redisPort}`));
  return {
    // Backends come and go with the pools' connections: read the descendants afresh each
    // time (as root the postmaster runs under runuser, so backends are grandchildren).
    postgres: () => (postmaster ? [postmaster.pid, ...descendantsOf(postmaster.pid)] : []),
    redis: redis ? [redis.pid] : [],
  };
}

function descendantsOf(root: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const out: number[] = [];
  for (const pid of parent.keys()) {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (p === root) {
        out.push(pid);
        break;
      }
    }
  }
  return out;
}

function cpuOf(pids: number[]): number {
  return pids.reduce((sum, pid) => {
    try {
      return sum + cpuSeconds(pid);
    } catch {
      return sum;
    }
  }, 0);
}

function version(cmd: string[]): string {
  const out = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  return out.stdout.toString().trim().split("\n")[0] ?? "unknown";
}

export async function scaleOutPhase(
  s: Settings,
  options: { work: string; binary: string; mockUrl: string; caFile: string; direct: Target; floor: Target; router: Target },
): Promise<ScaleOutResult> {
  const missing = missingServices();
  if (missing) {
    log(`scale-out: skipped, ${missing}`);
    return { skipped: missing };
  }
  let postgres: PostgresServer | undefined;
  let redis: RedisServer | undefined;
  const instances: Array<{ stop(): Promise<void> }> = [];
  try {
    [postgres, redis] = await Promise.all([startPostgres(), startRedisServer()]);
    const database = postgres.url(await postgres.createDatabase());
    const pgBin = readdirSync("/usr/lib/postgresql").sort((a, b) => Number(b) - Number(a))[0]!;
    const versions = { postgres: version([join("/usr/lib/postgresql", pgBin, "bin", "postgres"), "--version"]), redis: version(["redis-server", "--version"]) };
    // One data directory for both: the shared secret.key and the owner key A creates.
    const dataDir = join(options.work, "data-scaleout");
    const extraArgs = ["--database", database, "--redis", redis.url];
    // BENCH_SCALEOUT_PROFILE=1: instance A runs from source under the CPU profiler, and
    // its profile's summary is printed once it stops (finding where scale-out's CPU goes).
    const profileDir = process.env.BENCH_SCALEOUT_PROFILE ? join(options.work, "profile-scaleout") : undefined;
    const start = (name: string) =>
      startRouter({
        name,
        cmd: profileDir && name === "scaleout-a" ? [process.execPath, "--cpu-prof", `--cpu-prof-dir=${profileDir}`, join(import.meta.dir, "..", "..", "src", "main.ts")] : [options.binary],
        cwd: options.work,
        dataDir,
        logFile: join(options.work, `${name}.log`),
        caFile: options.caFile,
        extraArgs,
        extraEnv: benchRouterEnv(),
      });
    const a = await start("scaleout-a");
    instances.push(a);
    const b = await start("scaleout-b");
    instances.push(b);
    servicePids.push(a.pid, b.pid);
    const key = await configureRouter(a, options.mockUrl);
    const targetA: Target = { name: "instance A", url: a.url, key, pid: a.pid };
    const targetB: Target = { name: "instance B", url: b.url, key, pid: b.pid };
    // B learns A's configuration over the bus: wait until it serves the bench account.
    await waitFor(async () => {
      const response = await fetch(b.url + PATH, { method: "POST", headers: headersFor(targetB), body: NONSTREAM_BODY });
      return response.ok && (await response.text()).includes('"usage"');
    }, "instance B to serve with the configuration made on A");
    const services = servicePidsOf(postgres.port, redis.port);
    const infra = () => [...services.postgres(), ...services.redis];
    servicePids.push(...infra());
    log(`scale-out: A ${a.url} (pid ${a.pid}), B ${b.url} (pid ${b.pid}); PostgreSQL and Redis pids ${infra().join(", ")}`);

    const throughput = await throughputRounds(s, options.work, options.floor, options.router, targetA, targetB, infra);
    const census = await takeCensus(s, options.work, [targetA, targetB], database, redis.url, services);
    const latency = await latencyRounds(s, options.work, [options.direct, options.floor, options.router, { ...targetA, name: ONE_INSTANCE }]);
    const lag = await invalidationLag(s, a, b);
    return { throughput, latency, lag, census, versions };
  } finally {
    await Promise.allSettled(instances.map((i) => i.stop()));
    await redis?.close().catch(() => {});
    await postgres?.stop().catch(() => {});
    const profiles = join(options.work, "profile-scaleout");
    const file = process.env.BENCH_SCALEOUT_PROFILE && existsSync(profiles) ? findProfile(profiles) : undefined;
    if (file) log(`scale-out: profile of instance A\n${JSON.stringify(summariseProfile(file, join(import.meta.dir, "..", ".."), 25), null, 1)}`);
  }
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`scale-out: timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/** Non-streaming c=32: floor, SQLite router and one instance with 32 connections; the pair with 16 on each. */
async function throughputRounds(s: Settings, work: string, floor: Target, router: Target, a: Target, b: Target, infra: () => number[]) {
  const C = 32;
  const script = (target: Target) => wrkScript(work, `scaleout-${target.name.replace(/\W+/g, "-")}`, NONSTREAM_BODY, headersFor(target, { "x-mock-chunks": "20" }));
  const runs: Array<{ name: string; legs: Array<{ target: Target; script: string; c: number }> }> = [
    { name: "floor", legs: [{ target: floor, script: script(floor), c: C }] },
    { name: "router", legs: [{ target: router, script: script(router), c: C }] },
    { name: ONE_INSTANCE, legs: [{ target: a, script: script(a), c: C }] },
    { name: TWO_INSTANCES, legs: [{ target: a, script: script(a), c: C / 2 }, { target: b, script: script(b), c: C / 2 }] },
  ];
  const results: Record<string, ScaleOutThroughputRound[]> = {};
  for (const run of runs) {
    results[run.name] = [];
    // Warm-up, not recorded: connections, JIT, caches.
    await Promise.all(run.legs.map((leg) => runWrk({ url: leg.target.url + PATH, script: leg.script, connections: leg.c, seconds: 1 })));
  }
  for (let round = 1; round <= s.rounds; round++) {
    for (const run of runs) {
      const label = `scale-out c=32 round ${round} ${run.name}`;
      const pids = run.legs.map((leg) => leg.target.pid!);
      const { value, other } = await quiet("scaleout", label, async () => {
        const cpu0 = cpuOf(pids);
        const infra0 = cpuOf(infra());
        const legs = await Promise.all(run.legs.map((leg) => runWrk({ url: leg.target.url + PATH, script: leg.script, connections: leg.c, seconds: s.seconds })));
        return { legs, cpu: cpuOf(pids) - cpu0, infraCpu: cpuOf(infra()) - infra0 };
      });
      const { legs, cpu, infraCpu } = value;
      const requests = legs.reduce((n, r) => n + r.requests, 0);
      const row: ScaleOutThroughputRound = {
        rps: legs.reduce((n, r) => n + r.rps, 0),
        errors: legs.reduce((n, r) => n + r.errors, 0),
        // The slower leg's figures: a client behind the balancer sees either.
        p50: Math.max(...legs.map((r) => r.p50)),
        p99: Math.max(...legs.map((r) => r.p99)),
        cpuUs: (cpu / Math.max(1, requests)) * 1e6,
        mockCpuUs: 0,
        servicesCpuUs: (infraCpu / Math.max(1, requests)) * 1e6,
      };
      results[run.name]!.push(row);
      log(`${label}: ${row.rps.toFixed(0)} req/s, errors ${row.errors}, router CPU ${row.cpuUs.toFixed(0)} µs/req, PostgreSQL+Redis ${row.servicesCpuUs.toFixed(0)} µs/req, other load ${(other * 100).toFixed(0)}%`);
    }
  }
  return results;
}

async function latencyRounds(s: Settings, work: string, targets: Target[]) {
  const results: Record<string, LatencyRound[]> = {};
  const scripts = new Map<string, string>();
  for (const target of targets) {
    results[target.name] = [];
    scripts.set(target.name, wrkScript(work, `scaleout-c1-${target.name.replace(/\W+/g, "-")}`, NONSTREAM_BODY, headersFor(target)));
    await runWrk({ url: target.url + PATH, script: scripts.get(target.name)!, connections: 1, seconds: 1 });
  }
  for (let round = 1; round <= s.rounds; round++) {
    for (const target of targets) {
      const { value: r, other } = await quiet("scaleout", `scale-out c=1 round ${round} ${target.name}`, () =>
        runWrk({ url: target.url + PATH, script: scripts.get(target.name)!, connections: 1, seconds: s.seconds }),
      );
      results[target.name]!.push({ p50: r.p50, p90: r.p90, p99: r.p99, rps: r.rps, errors: r.errors });
      log(`scale-out c=1 round ${round} ${target.name}: p50 ${(r.p50 * 1000).toFixed(0)} µs, p99 ${(r.p99 * 1000).toFixed(0)} µs, other load ${(other * 100).toFixed(0)}%`);
    }
  }
  return results;
}

/**
 * Counts what the calls of a c=32 run over both instances asked of Redis and
 * PostgreSQL: commands by name from INFO commandstats, transactions and rows from
 * pg_stat_database, and the CPU of each process, all divided by the calls served.
 */
async function takeCensus(s: Settings, work: string, targets: Target[], database: string, redisUrl: string, services: { postgres: () => number[]; redis: number[] }): Promise<Census> {
  const redis = new RedisClient(redisUrl);
  const sql = new SQL(database, { max: 1 });
  try {
    const dbName = new URL(database).pathname.slice(1);
    const pgStats = async () => {
      const [row] = await sql`SELECT xact_commit, tup_inserted, tup_updated FROM pg_stat_database WHERE datname = ${dbName}`;
      return { commits: Number(row.xact_commit), inserts: Number(row.tup_inserted), updates: Number(row.tup_updated) };
    };
    const scripts = targets.map((t) => wrkScript(work, `scaleout-census-${t.name.replace(/\W+/g, "-")}`, NONSTREAM_BODY, headersFor(t, { "x-mock-chunks": "20" })));
    const routerPids = targets.map((t) => t.pid!);
    await redis.send("CONFIG", ["RESETSTAT"]);
    // pg_stat_database is read as a difference: its counters are sent by the backends with a delay.
    await Bun.sleep(1000);
    const pg0 = await pgStats();
    const cpu0 = { router: cpuOf(routerPids), pg: cpuOf(services.postgres()), redis: cpuOf(services.redis) };
    const legs = await Promise.all(targets.map((t, i) => runWrk({ url: t.url + PATH, script: scripts[i]!, connections: 32 / targets.length, seconds: Math.max(2, s.seconds) })));
    const cpu1 = { router: cpuOf(routerPids), pg: cpuOf(services.postgres()), redis: cpuOf(services.redis) };
    // Let the recorders' batches land and the statistics reach pg_stat_database.
    await Bun.sleep(1500);
    const pg1 = await pgStats();
    const info = String(await redis.send("INFO", ["commandstats"]));
    const requests = legs.reduce((n, r) => n + r.requests, 0);
    const per = (n: number) => n / Math.max(1, requests);
    const redisPerCall: Record<string, number> = {};
    let redisUs = 0;
    for (const match of info.matchAll(/^cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/gm)) {
      // INFO and CONFIG are the census's own.
      if (/^(info|config|ping)/.test(match[1]!)) continue;
      redisPerCall[match[1]!] = per(Number(match[2]));
      redisUs += Number(match[3]);
    }
    const byScript = await scriptRuns(redis, targets[0]!);
    const census: Census = {
      scripts: byScript,
      requests,
      redisPerCall,
      redisUsPerCall: per(redisUs),
      pgCommitsPerCall: per(pg1.commits - pg0.commits),
      pgInsertsPerCall: per(pg1.inserts - pg0.inserts),
      pgUpdatesPerCall: per(pg1.updates - pg0.updates),
      routerCpuUs: per(cpu1.router - cpu0.router) * 1e6,
      pgCpuUs: per(cpu1.pg - cpu0.pg) * 1e6,
      redisCpuUs: per(cpu1.redis - cpu0.redis) * 1e6,
    };
    const commands = Object.entries(redisPerCall).map(([name, n]) => `${name} ${n.toFixed(2)}`).join(", ");
    log(`scale-out scripts per call: ${Object.entries(byScript).map(([name, r]) => `${name} ${r.perCall.toFixed(2)} (${r.meanUs.toFixed(0)} µs)`).join(", ")}`);
    log(
      `scale-out census over ${requests} calls: Redis per call ${commands} (${census.redisUsPerCall.toFixed(0)} µs server time); ` +
        `PostgreSQL per call ${census.pgCommitsPerCall.toFixed(3)} commits, ${census.pgInsertsPerCall.toFixed(2)} rows inserted, ${census.pgUpdatesPerCall.toFixed(2)} updated; ` +
        `CPU µs per call: routers ${census.routerCpuUs.toFixed(0)}, PostgreSQL ${census.pgCpuUs.toFixed(0)}, Redis ${census.redisCpuUs.toFixed(0)}`,
    );
    return census;
  } finally {
    redis.close();
    await sql.close().catch(() => {});
  }
}

/**
 * Which scripts a call runs: Redis's slow log set to keep every command while a few
 * calls are made one after the other, EVALSHA entries named by the scripts' hashes.
 * Commands on timers (lease heartbeats) are left out: they do not come with calls.
 */
async function scriptRuns(redis: RedisClient, target: Target): Promise<Record<string, { perCall: number; meanUs: number }>> {
  const names = new Map<string, string>();
  for (const [name, value] of Object.entries({ ...countScripts, ...creditScripts, ...keyScripts, ...usageScripts })) {
    if (value && typeof value === "object" && "sha" in value) names.set((value as { sha: string }).sha, name);
  }
  const CALLS = 20;
  await redis.send("CONFIG", ["SET", "slowlog-max-len", "10000"]);
  await redis.send("CONFIG", ["SET", "slowlog-log-slower-than", "0"]);
  await redis.send("SLOWLOG", ["RESET"]);
  try {
    for (let i = 0; i < CALLS; i++) {
      const response = await fetch(target.url + PATH, { method: "POST", headers: headersFor(target), body: NONSTREAM_BODY });
      if (!response.ok) throw new Error(`scale-out: a census call answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
      await response.arrayBuffer();
    }
    // Settlement runs after the answer: let it land.
    await Bun.sleep(1000);
    const entries = (await redis.send("SLOWLOG", ["GET", "10000"])) as Array<[number, number, number, string[]]>;
    const runs = new Map<string, { n: number; us: number }>();
    for (const [, , us, args] of entries) {
      const command = String(args[0]).toUpperCase();
      if (command !== "EVALSHA" && command !== "EVAL") continue;
      const name = names.get(String(args[1])) ?? "other script";
      const entry = runs.get(name) ?? { n: 0, us: 0 };
      entry.n++;
      entry.us += Number(us);
      runs.set(name, entry);
    }
    return Object.fromEntries([...runs].map(([name, { n, us }]) => [name, { perCall: n / CALLS, meanUs: us / n }]));
  } finally {
    await redis.send("CONFIG", ["SET", "slowlog-log-slower-than", "10000"]);
    await redis.send("SLOWLOG", ["RESET"]);
  }
}

/**
 * Rotations of one account's key on A (POST /x-self); after each, B is polled with the
 * old key until it answers 401. A sample runs from A's answer to the answer of B's first
 * refusal, so it is an upper bound by at most one poll's round trip.
 */
async function invalidationLag(s: Settings, a: { url: string; ownerKey: string }, b: { url: string }) {
  const rotations = s.quick ? 20 : 50;
  const account = await api(a.url, a.ownerKey, "POST", "/x-users", { Email: "rotate@example.com", Name: "rotate-user", CreditGranted: 10 });
  let key = account.APIKey as string;
  const status = async (base: string, k: string) => {
    const response = await fetch(base + "/dashboard/status", { headers: { authorization: `Bearer ${k}` } });
    await response.arrayBuffer();
    return response.status;
  };
  const samples: number[] = [];
  const polls: number[] = [];
  for (let i = 0; i < rotations; i++) {
    // B has the current key in its principal cache before A rotates it.
    if ((await status(b.url, key)) !== 200) throw new Error(`scale-out: instance B refused the current key before rotation ${i + 1}`);
    // The benchmark's instances run with --timezone UTC: the business date is the UTC date.
    const confirm = `${new Date().toISOString().slice(0, 10)}-ROTATE-SELF`;
    const response = await fetch(a.url + "/x-self", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ confirm }),
    });
    const text = await response.text();
    const answered = performance.now();
    if (!response.ok) throw new Error(`scale-out: rotation on A answered ${response.status}: ${text.slice(0, 300)}`);
    for (;;) {
      const sent = performance.now();
      const code = await status(b.url, key);
      const now = performance.now();
      polls.push(now - sent);
      if (code === 401) {
        samples.push(now - answered);
        break;
      }
      if (code !== 200) throw new Error(`scale-out: instance B answered ${code} to the old key`);
      if (now - answered > 10_000) throw new Error("scale-out: instance B still accepted the old key 10 s after the rotation");
    }
    key = JSON.parse(text).APIKey as string;
  }
  const sorted = [...samples].sort((x, y) => x - y);
  const result = {
    rotations,
    samples,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1]!,
    pollMs: percentile([...polls].sort((x, y) => x - y), 50),
  };
  log(`scale-out invalidation lag over ${rotations} rotations: p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, max ${result.max.toFixed(2)} ms (poll ${result.pollMs.toFixed(2)} ms)`);
  return result;
}

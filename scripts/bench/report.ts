/**
 * The benchmark's results: their shape, the medians and ratios derived from the
 * rounds, the targets of issue 6, and the printed table and docs/benchmarks.md text.
 */
import type { BillsResult } from "./bills.ts";
import type { ProfileSummary } from "./profile.ts";
import { ONE_INSTANCE, TWO_INSTANCES, type ScaleOutResult } from "./scaleout.ts";
import { max, median } from "./stats.ts";

export interface ThroughputRound {
  rps: number;
  errors: number;
  p50: number;
  p99: number;
  /** Proxy CPU per request, µs. */
  cpuUs: number;
  mockCpuUs: number;
}

/** One round of the large-prompt phase. */
export interface LargeRound {
  rps: number;
  errors: number;
  p50: number;
  p99: number;
  /** Proxy CPU per call, µs. */
  cpuUs: number;
}

export interface LatencyRound {
  /** ms */
  p50: number;
  p90: number;
  p99: number;
  rps: number;
  errors: number;
}

export interface CpuRound {
  chunks: number;
  streams: number;
  errors: number;
  /** Proxy CPU per stream, µs. */
  cpuPerStreamUs: number;
}

export interface TtftRound {
  /** ms */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  n: number;
  streams: number;
  errors: number;
  errorSamples: string[];
  /** Most upstream requests the mock saw at once. */
  upstreamMax: number;
  peakRssMb?: number;
}

export interface SoakResult {
  seconds: number;
  streams: number;
  errors: number;
  errorSamples: string[];
  ttftP50: number;
  ttftP99: number;
  cpuPerStreamUs: number;
  rss: Array<[number, number]>;
  startMb: number;
  endMb: number;
  peakMb: number;
  /** MB per minute over the soak after its first fifth (warm-up). */
  slopeMbPerMin: number;
  idleAfterMb: number;
}

export interface ProfileResult {
  workload: string;
  summary: ProfileSummary;
  requests: number;
}

export interface BenchReport {
  date: string;
  command: string;
  settings: {
    quick: boolean;
    rounds: number;
    seconds: number;
    ttftSeconds: number;
    cpuSeconds: number;
    soakSeconds: number;
    soakRaised?: boolean;
    rows: number;
    paced: { firstMs: number; everyMs: number; chunks: number };
  };
  machine: { nproc: number; cpuModel: string; ramGb: number; kernel: string; clockTicks: number };
  versions: { bun: string; router: string; commit: string; wrk: string; binaryBuilt: string };
  idleRss: number;
  floorIdleRss: number;
  throughput?: Record<string, Record<string, ThroughputRound[]>>;
  latency?: Record<string, LatencyRound[]>;
  /** The 256 KiB conversation at 8 paced connections. */
  large?: Record<string, LargeRound[]>;
  cpu?: Record<string, CpuRound[]>;
  ttft100?: Record<string, TtftRound[]>;
  ttft1000?: Record<string, TtftRound[]>;
  soak?: SoakResult;
  /** The soak of a router started with BUN_CONFIG_MAX_HTTP_REQUESTS raised. */
  soakRaised?: SoakResult;
  /** Two instances on PostgreSQL and Redis (issue 15), with the targets of issue 19. */
  scaleout?: ScaleOutResult;
  bills?: BillsResult;
  profiles?: ProfileResult[];
  elapsedSeconds?: number;
  /** Share of all CPUs used by other programs during each measurement, by phase. */
  noise?: Record<string, number[]>;
  /** Measurements repeated because other programs loaded the machine. */
  repeated?: number;
}

// ---------------------------------------------------------------------------
// Derived figures
// ---------------------------------------------------------------------------

const med = <T>(rounds: T[] | undefined, pick: (r: T) => number) => median((rounds ?? []).map(pick));
const sum = <T>(rounds: T[] | undefined, pick: (r: T) => number) => (rounds ?? []).reduce((s, r) => s + pick(r), 0);

const fmt = (x: number, digits = 0) => (Number.isFinite(x) ? x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "–");
const us = (ms: number) => fmt(ms * 1000, 0);
const signed = (ms: number) => (ms >= 0 ? `+${us(ms)}` : `−${us(-ms)}`);
const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : "–");

interface Row {
  section: string;
  measure: string;
  baseline: string;
  router: string;
  comparison: string;
}

export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean | undefined;
}

function cpuFigures(rounds: CpuRound[] | undefined) {
  const one = median((rounds ?? []).filter((r) => r.chunks === 1).map((r) => r.cpuPerStreamUs));
  const many = (rounds ?? []).filter((r) => r.chunks > 1);
  const chunks = many[0]?.chunks ?? NaN;
  const perStreamMany = median(many.map((r) => r.cpuPerStreamUs));
  return { perStream: one, perChunk: (perStreamMany - one) / (chunks - 1), errors: sum(rounds, (r) => r.errors), chunks };
}

function ttftFigures(rounds: TtftRound[] | undefined) {
  return {
    p50: med(rounds, (r) => r.p50),
    p99: med(rounds, (r) => r.p99),
    max: max((rounds ?? []).map((r) => r.max)),
    errors: sum(rounds, (r) => r.errors),
    streams: sum(rounds, (r) => r.streams),
    upstreamMax: max((rounds ?? []).map((r) => r.upstreamMax)),
    peakRss: max((rounds ?? []).map((r) => r.peakRssMb ?? NaN).filter(Number.isFinite)),
    samples: (rounds ?? []).flatMap((r) => r.errorSamples).slice(0, 3),
  };
}

export const RAISED = "router, env BUN_CONFIG_MAX_HTTP_REQUESTS=65535";

export function derive(report: BenchReport): { rows: Row[]; checks: TargetCheck[] } {
  const rows: Row[] = [];
  const checks: TargetCheck[] = [];

  if (report.throughput) {
    for (const [scenario, byTarget] of Object.entries(report.throughput)) {
      const floor = med(byTarget.floor, (r) => r.rps);
      const router = med(byTarget.router, (r) => r.rps);
      const errors = sum(byTarget.router, (r) => r.errors) + sum(byTarget.floor, (r) => r.errors);
      rows.push({
        section: "1 throughput",
        measure: `${scenario} (req/s)`,
        baseline: fmt(floor),
        router: fmt(router),
        comparison: `${pct(router / floor)} of floor${errors ? `, ${errors} errors` : ""}`,
      });
      rows.push({
        section: "4 CPU",
        measure: `${scenario}: proxy CPU per request (µs)`,
        baseline: fmt(med(byTarget.floor, (r) => r.cpuUs)),
        router: fmt(med(byTarget.router, (r) => r.cpuUs)),
        comparison: `+${fmt(med(byTarget.router, (r) => r.cpuUs) - med(byTarget.floor, (r) => r.cpuUs))} µs`,
      });
      if (scenario === "non-streaming c=32") {
        checks.push({ target: "non-streaming throughput ≥ 80% of the floor at c=32", measured: pct(router / floor), met: router / floor >= 0.8 });
      }
      if (scenario === "streaming c=32") {
        checks.push({ target: "streaming throughput ≥ 70% of the floor at c=32 (issue 19)", measured: pct(router / floor), met: router / floor >= 0.7 });
      }
    }
  }

  if (report.large) {
    const floor = { cpu: med(report.large.floor, (r) => r.cpuUs), p50: med(report.large.floor, (r) => r.p50) };
    const router = { cpu: med(report.large.router, (r) => r.cpuUs), p50: med(report.large.router, (r) => r.p50) };
    const errors = sum(report.large.router, (r) => r.errors) + sum(report.large.floor, (r) => r.errors);
    rows.push({ section: "4 CPU", measure: `256 KiB prompt, 8 paced connections: CPU per call (µs)`, baseline: fmt(floor.cpu), router: fmt(router.cpu), comparison: `${fmt(router.cpu / floor.cpu, 2)}× floor${errors ? `, ${errors} errors` : ""}` });
    rows.push({ section: "2 latency c=1", measure: `256 KiB prompt, 8 paced connections: p50 (µs)`, baseline: us(floor.p50), router: us(router.p50), comparison: `${signed(router.p50 - floor.p50)} µs` });
    checks.push({ target: "256 KiB prompt: CPU per call ≤ 1.5× the floor's", measured: `${fmt(router.cpu / floor.cpu, 2)}×`, met: router.cpu / floor.cpu <= 1.5 });
    checks.push({ target: "256 KiB prompt: p50 ≤ floor + 0.5 ms", measured: `${signed(router.p50 - floor.p50)} µs`, met: router.p50 - floor.p50 <= 0.5 });
  }

  if (report.latency) {
    const direct = { p50: med(report.latency.direct, (r) => r.p50), p99: med(report.latency.direct, (r) => r.p99) };
    const floor = { p50: med(report.latency.floor, (r) => r.p50), p99: med(report.latency.floor, (r) => r.p99) };
    const router = { p50: med(report.latency.router, (r) => r.p50), p99: med(report.latency.router, (r) => r.p99) };
    for (const p of ["p50", "p99"] as const) {
      rows.push({
        section: "2 latency c=1",
        measure: `${p} (µs): direct ${us(direct[p])}`,
        baseline: us(floor[p]),
        router: us(router[p]),
        comparison: `router +${us(router[p] - direct[p])} µs, floor +${us(floor[p] - direct[p])} µs vs direct`,
      });
    }
    checks.push({ target: "added latency at c=1 ≤ 0.25 ms p50", measured: `${us(router.p50 - direct.p50)} µs`, met: router.p50 - direct.p50 <= 0.25 });
    checks.push({ target: "added latency at c=1 ≤ 0.15 ms p50 (issue 19)", measured: `${us(router.p50 - direct.p50)} µs`, met: router.p50 - direct.p50 <= 0.15 });
    checks.push({ target: "added latency at c=1 ≤ 1 ms p99", measured: `${us(router.p99 - direct.p99)} µs`, met: router.p99 - direct.p99 <= 1 });
  }

  if (report.cpu) {
    const entries = Object.entries(report.cpu).map(([name, rounds]) => [name, cpuFigures(rounds)] as const);
    const floor = entries.find(([n]) => n === "floor")?.[1];
    for (const [name, f] of entries) {
      if (name === "floor") continue;
      rows.push({
        section: "4 CPU",
        measure: `${name}: CPU per stream (µs)`,
        baseline: fmt(floor?.perStream ?? NaN),
        router: fmt(f.perStream),
        comparison: `+${fmt(f.perStream - (floor?.perStream ?? NaN))} µs vs floor`,
      });
      rows.push({
        section: "4 CPU",
        measure: `${name}: CPU per additional chunk (µs)`,
        baseline: fmt(floor?.perChunk ?? NaN, 1),
        router: fmt(f.perChunk, 1),
        comparison: `+${fmt(f.perChunk - (floor?.perChunk ?? NaN), 1)} µs vs floor`,
      });
    }
    const router = entries.find(([n]) => n === "router")?.[1];
    if (router) {
      checks.push({ target: "≤ 100 µs CPU per stream (SDK-default stream, no include_usage)", measured: `${fmt(router.perStream)} µs`, met: router.perStream <= 100 });
      checks.push({ target: "≤ 15 µs CPU per additional chunk (SDK-default stream)", measured: `${fmt(router.perChunk, 1)} µs`, met: router.perChunk <= 15 });
    }
    const asks = entries.find(([n]) => n.includes("include_usage"))?.[1];
    if (asks) {
      checks.push({ target: "(same, client asks include_usage: passthrough tap)", measured: `${fmt(asks.perStream)} µs/stream, ${fmt(asks.perChunk, 1)} µs/chunk`, met: asks.perStream <= 100 && asks.perChunk <= 15 });
    }
  }

  for (const [label, data] of [["100", report.ttft100], ["1,000", report.ttft1000]] as const) {
    if (!data) continue;
    const direct = ttftFigures(data.direct);
    const floor = ttftFigures(data.floor);
    const router = ttftFigures(data.router);
    const raised = data[RAISED] ? ttftFigures(data[RAISED]) : undefined;
    for (const p of ["p50", "p99"] as const) {
      rows.push({
        section: `3 TTFT ${label}`,
        measure: `${p} (ms): direct ${fmt(direct[p], 1)}`,
        baseline: fmt(floor[p], 1),
        router: fmt(router[p], 1) + (raised ? ` (raised limit: ${fmt(raised[p], 1)})` : ""),
        comparison: `router +${fmt(router[p] - direct[p], 1)} ms, floor +${fmt(floor[p] - direct[p], 1)} ms vs direct` + (raised ? `; raised +${fmt(raised[p] - direct[p], 1)} ms` : ""),
      });
    }
    rows.push({
      section: `3 TTFT ${label}`,
      measure: `errors / streams; most upstream streams open at once`,
      baseline: `${floor.errors} / ${floor.streams}; ${floor.upstreamMax}`,
      router: `${router.errors} / ${router.streams}; ${router.upstreamMax}` + (raised ? ` (raised: ${raised.errors} / ${raised.streams}; ${raised.upstreamMax})` : ""),
      comparison: `direct: ${direct.errors} / ${direct.streams}; ${direct.upstreamMax}`,
    });
    if (label === "100") {
      checks.push({ target: "added TTFT ≤ 2 ms p50 at 100 paced streams", measured: `${fmt(router.p50 - direct.p50, 2)} ms`, met: router.p50 - direct.p50 <= 2 });
      checks.push({ target: "added TTFT ≤ 15 ms p99 at 100 paced streams", measured: `${fmt(router.p99 - direct.p99, 2)} ms`, met: router.p99 - direct.p99 <= 15 });
    } else {
      checks.push({ target: "1,000 streams: zero errors", measured: `${router.errors} errors in ${router.streams} streams`, met: router.errors === 0 });
      checks.push({
        target: "1,000 streams: TTFT within 10 ms of direct (p50)",
        measured: `+${fmt(router.p50 - direct.p50, 1)} ms (upstream streams at once: ${router.upstreamMax})` + (raised ? `; with the limit raised: +${fmt(raised.p50 - direct.p50, 1)} ms` : ""),
        met: router.p50 - direct.p50 <= 10,
      });
      checks.push({
        target: "1,000 streams: TTFT within 100 ms of direct (p99)",
        measured: `+${fmt(router.p99 - direct.p99, 1)} ms` + (raised ? `; with the limit raised: +${fmt(raised.p99 - direct.p99, 1)} ms` : ""),
        met: router.p99 - direct.p99 <= 100,
      });
    }
  }

  rows.push({ section: "4 memory", measure: "RSS idle (MB)", baseline: fmt(report.floorIdleRss, 1), router: fmt(report.idleRss, 1), comparison: "" });
  checks.push({ target: "RSS ≤ 60 MB idle", measured: `${fmt(report.idleRss, 1)} MB`, met: report.idleRss <= 60 });
  const ttftPeak = report.ttft1000 ? ttftFigures(report.ttft1000.router).peakRss : NaN;
  const floorPeak = report.ttft1000 ? ttftFigures(report.ttft1000.floor).peakRss : NaN;
  const peak = max([ttftPeak, report.soak?.peakMb ?? NaN].filter(Number.isFinite));
  if (Number.isFinite(peak)) {
    rows.push({ section: "4 memory", measure: "RSS peak at 1,000 streams (MB)", baseline: fmt(floorPeak, 1), router: fmt(peak, 1), comparison: "" });
    const raisedTtft = report.ttft1000?.[RAISED] ? ttftFigures(report.ttft1000[RAISED]).peakRss : NaN;
    const raisedPeakAll = max([raisedTtft, report.soakRaised?.peakMb ?? NaN].filter(Number.isFinite));
    checks.push({
      target: "RSS ≤ 150 MB at 1,000 streams",
      measured: `${fmt(peak, 1)} MB` + (Number.isFinite(raisedPeakAll) ? `; with the fetch limit raised from outside: ${fmt(raisedPeakAll, 1)} MB` : ""),
      met: peak <= 150,
    });
  }
  if (report.soak) {
    const soak = report.soak;
    rows.push({
      section: "4 soak",
      measure: `${soak.seconds} s of 1,000 streams: RSS slope (MB/min)`,
      baseline: "",
      router: fmt(soak.slopeMbPerMin, 2),
      comparison: `${fmt(soak.startMb, 1)} → ${fmt(soak.endMb, 1)} MB; idle after ${fmt(soak.idleAfterMb, 1)} MB`,
    });
    rows.push({
      section: "4 soak",
      measure: "streams, errors, TTFT p50/p99 (ms), CPU per stream (µs)",
      baseline: "",
      router: `${soak.streams}, ${soak.errors}`,
      comparison: `TTFT ${fmt(soak.ttftP50, 1)} / ${fmt(soak.ttftP99, 1)} ms; ${fmt(soak.cpuPerStreamUs)} µs/stream`,
    });
    const raisedSlope = report.soakRaised ? `; with the fetch limit raised: ${fmt(report.soakRaised.slopeMbPerMin, 2)} MB/min` : "";
    checks.push({ target: "no RSS growth over the soak (slope < 1 MB/min)", measured: `${fmt(soak.slopeMbPerMin, 2)} MB/min over ${soak.seconds} s${raisedSlope}`, met: soak.slopeMbPerMin < 1 });
    if (soak.errors > 0) checks.push({ target: "soak: zero errors", measured: `${soak.errors} errors`, met: false });
  }

  const raisedPeak = max([report.ttft1000?.[RAISED] ? ttftFigures(report.ttft1000[RAISED]).peakRss : NaN, report.soakRaised?.peakMb ?? NaN].filter(Number.isFinite));
  if (Number.isFinite(raisedPeak)) {
    rows.push({ section: "4 memory", measure: "RSS peak at 1,000 streams, fetch limit raised (MB)", baseline: fmt(floorPeak, 1), router: fmt(raisedPeak, 1), comparison: "what the 150 MB target meets once the router holds 1,000 upstream streams" });
  }
  if (report.soakRaised) {
    const soak = report.soakRaised;
    rows.push({
      section: "4 soak",
      measure: `${soak.seconds} s of 1,000 streams, fetch limit raised: RSS slope (MB/min)`,
      baseline: "",
      router: fmt(soak.slopeMbPerMin, 2),
      comparison: `${fmt(soak.startMb, 1)} → ${fmt(soak.endMb, 1)} MB (peak ${fmt(soak.peakMb, 1)}); idle after ${fmt(soak.idleAfterMb, 1)} MB; ${soak.streams} streams, ${soak.errors} errors; TTFT ${fmt(soak.ttftP50, 1)} / ${fmt(soak.ttftP99, 1)} ms; ${fmt(soak.cpuPerStreamUs)} µs/stream`,
    });
  }
  if (report.bills) {
    const b = report.bills;
    for (const t of [b.dashboard, b.xbill]) {
      rows.push({
        section: "5 bills",
        measure: `${t.path} over ${fmt(b.rows)} rows (ms)`,
        baseline: "",
        router: `p50 ${fmt(t.p50, 1)}`,
        comparison: `p95 ${fmt(t.p95, 1)}, max ${fmt(t.max, 1)}, first ${fmt(t.first, 1)}; ${fmt(t.requests)} requests reported`,
      });
      checks.push({ target: `${t.path.split("?")[0]} over ${fmt(b.rows)} rows ≤ 50 ms`, measured: `p50 ${fmt(t.p50, 1)} ms (p95 ${fmt(t.p95, 1)})`, met: t.p50 <= 50 });
    }
  }
  if (report.scaleout) scaleOutFigures(report.scaleout, rows, checks);
  return { rows, checks };
}

/** The scale-out rows and the targets of issues 15 and 19 for it. */
function scaleOutFigures(so: ScaleOutResult, rows: Row[], checks: TargetCheck[]) {
  const section = "6 scale-out";
  if (so.skipped) {
    rows.push({ section, measure: "two instances on PostgreSQL + Redis", baseline: "", router: "skipped", comparison: so.skipped });
    return;
  }
  if (so.throughput) {
    const t = so.throughput;
    const floor = med(t.floor, (r) => r.rps);
    for (const name of ["router", ONE_INSTANCE, TWO_INSTANCES]) {
      const rps = med(t[name], (r) => r.rps);
      const errors = sum(t[name], (r) => r.errors);
      const label = name === "router" ? "one instance on SQLite" : name;
      rows.push({ section, measure: `non-streaming c=32 (req/s): ${label}`, baseline: fmt(floor), router: fmt(rps), comparison: `${pct(rps / floor)} of floor${errors ? `, ${errors} errors` : ""}` });
      rows.push({
        section,
        measure: `c=32 CPU per request (µs): ${label}`,
        baseline: fmt(med(t.floor, (r) => r.cpuUs)),
        router: fmt(med(t[name], (r) => r.cpuUs)),
        comparison: name === "router" ? "router processes" : `router processes, plus PostgreSQL + Redis ${fmt(med(t[name], (r) => r.servicesCpuUs))} µs`,
      });
    }
    const ratio = med(t[TWO_INSTANCES], (r) => r.rps) / floor;
    checks.push({ target: "scale-out: non-streaming c=32 over two instances ≥ 50% of the floor (issue 19)", measured: pct(ratio), met: ratio >= 0.5 });
  }
  if (so.latency) {
    const l = so.latency;
    const direct = med(l.direct, (r) => r.p50);
    const directP99 = med(l.direct, (r) => r.p99);
    for (const name of ["floor", "router", ONE_INSTANCE]) {
      const label = name === "router" ? "one instance on SQLite" : name;
      rows.push({
        section,
        measure: `c=1 p50 / p99 (µs): ${label}`,
        baseline: `direct ${us(direct)} / ${us(directP99)}`,
        router: `${us(med(l[name], (r) => r.p50))} / ${us(med(l[name], (r) => r.p99))}`,
        comparison: `${signed(med(l[name], (r) => r.p50) - direct)} / ${signed(med(l[name], (r) => r.p99) - directP99)} µs vs direct`,
      });
    }
    const added = med(l[ONE_INSTANCE], (r) => r.p50) - direct;
    checks.push({ target: "scale-out: added latency at c=1 ≤ 0.5 ms p50 (issue 19)", measured: `${us(added)} µs`, met: added <= 0.5 });
  }
  if (so.census) {
    const c = so.census;
    // INFO commandstats also counts the commands a script runs inside Redis: tell them apart.
    const isScript = (name: string) => /^eval/.test(name);
    const entries = Object.entries(c.redisPerCall).sort((x, y) => y[1] - x[1]);
    const scripts = entries.filter(([name]) => isScript(name)).reduce((n, [, v]) => n + v, 0);
    const inner = entries.filter(([name]) => !isScript(name));
    rows.push({
      section,
      measure: "Redis script runs per call (two instances, c=32)",
      baseline: "",
      router: fmt(scripts, 2),
      comparison: `other commands, those run inside the scripts included: ${fmt(inner.reduce((n, [, v]) => n + v, 0), 1)} (${inner.slice(0, 6).map(([name, n]) => `${name} ${fmt(n, 1)}`).join(", ")}); ${fmt(c.redisUsPerCall)} µs Redis server time`,
    });
    if (Object.keys(c.scripts ?? {}).length > 0) {
      const runs = Object.entries(c.scripts).sort((x, y) => y[1].perCall - x[1].perCall);
      rows.push({
        section,
        // USAGE_CLAIM counts each instance's drain poll (every 50 ms, traffic or not) over the census's 20 calls and the second after.
        measure: "Redis scripts of one call, by name (20 sequential calls; USAGE_CLAIM includes idle drain polls)",
        baseline: "",
        router: fmt(runs.reduce((n, [, r]) => n + r.perCall, 0), 2),
        comparison: runs.map(([name, r]) => `${name} ${fmt(r.perCall, 2)} × ${fmt(r.meanUs)} µs`).join(", "),
      });
    }
    rows.push({
      section,
      measure: "PostgreSQL per call (two instances, c=32)",
      baseline: "",
      router: `${fmt(c.pgCommitsPerCall, 3)} commits`,
      comparison: `${fmt(c.pgInsertsPerCall, 2)} rows inserted, ${fmt(c.pgUpdatesPerCall, 2)} updated`,
    });
    rows.push({ section, measure: "CPU per call (µs, two instances, c=32)", baseline: "", router: fmt(c.routerCpuUs), comparison: `routers; PostgreSQL ${fmt(c.pgCpuUs)}, Redis ${fmt(c.redisCpuUs)}` });
  }
  if (so.lag) {
    const g = so.lag;
    rows.push({
      section,
      measure: `invalidation lag, ${g.rotations} key rotations on A (ms)`,
      baseline: "",
      router: `p50 ${fmt(g.p50, 2)}`,
      comparison: `p99 ${fmt(g.p99, 2)}, max ${fmt(g.max, 2)}; until B refuses the old key (one poll of B takes ${fmt(g.pollMs, 2)} ms)`,
    });
    checks.push({ target: "scale-out: invalidation lag well under 100 ms, p99 (issue 15)", measured: `p99 ${fmt(g.p99, 2)} ms`, met: g.p99 < 100 });
  }
}

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

const mark = (met: boolean | undefined) => (met === undefined ? "–" : met ? "met" : "NOT met");

export function renderTable(report: BenchReport): string {
  const { rows, checks } = derive(report);
  const head = ["section", "measure", "floor", "router", "comparison"];
  const body = rows.map((r) => [r.section, r.measure, r.baseline, r.router, r.comparison]);
  const widths = head.map((h, i) => Math.min(70, Math.max(h.length, ...body.map((r) => r[i]!.length))));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
  const out = [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line), "", "targets:"];
  for (const c of checks) out.push(`  ${mark(c.met).padEnd(8)} ${c.target}: ${c.measured}`);
  return out.join("\n");
}

const cell = (text: string) => text.replace(/\|/g, "\\|");

export function renderMarkdown(report: BenchReport): string {
  const { rows, checks } = derive(report);
  const s = report.settings;
  const m = report.machine;
  const out: string[] = [];
  out.push("## Latest run", "");
  out.push(`- Date: ${report.date}${report.elapsedSeconds ? ` (took ${Math.round(report.elapsedSeconds / 60)} min ${report.elapsedSeconds % 60} s)` : ""}`);
  out.push(`- Command: \`${report.command}\``);
  out.push(`- Machine: ${m.nproc} CPUs (${m.cpuModel}), ${m.ramGb} GB RAM, Linux ${m.kernel}`);
  out.push(`- Versions: router ${report.versions.router} (commit ${report.versions.commit}; dist/router built ${report.versions.binaryBuilt}), Bun ${report.versions.bun} (also inside dist/router), ${report.versions.wrk}`);
  out.push(
    `- Settings: ${s.rounds} interleaved rounds; wrk rounds of ${s.seconds} s; TTFT rounds of ${s.ttftSeconds} s; CPU rounds of ${s.cpuSeconds} s; soak ${s.soakSeconds} s; ` +
      `paced mock: first chunk after ${s.paced.firstMs} ms, then ${s.paced.chunks} chunks every ${s.paced.everyMs} ms${s.quick ? "; **quick (smoke) run**" : ""}`,
  );
  if (report.noise && Object.keys(report.noise).length > 0) {
    const parts = Object.entries(report.noise).map(([phase, v]) => `${phase} ${pct(median(v))} / ${pct(max(v))}`);
    out.push(
      `- Other programs' load on the machine during the kept measurements (share of all CPUs, median / worst): ${parts.join("; ")}; ` +
        `${report.repeated ?? 0} measurement(s) repeated because others used more than 20% of the CPUs`,
    );
  }
  out.push("", "Medians over the rounds; \"floor\" is the bare Bun proxy, \"direct\" calls the mock upstream itself.", "");
  out.push("| | measure | floor | router | comparison |", "|---|---|---:|---:|---|");
  for (const r of rows) out.push(`| ${cell(r.section)} | ${cell(r.measure)} | ${cell(r.baseline)} | ${cell(r.router)} | ${cell(r.comparison)} |`);
  out.push("", `### Targets (issues 6 and 19${report.scaleout && !report.scaleout.skipped ? "; scale-out: issues 15 and 19" : ""})`, "", "| target | measured | |", "|---|---|---|");
  for (const c of checks) out.push(`| ${cell(c.target)} | ${cell(c.measured)} | ${c.met === undefined ? "–" : c.met ? "✅ met" : "❌ not met"} |`);

  const ttftErrors = [...Object.entries(report.ttft100 ?? {}), ...Object.entries(report.ttft1000 ?? {})].flatMap(([name, rounds]) =>
    rounds.flatMap((r) => r.errorSamples.map((e) => `${name}: ${e}`)),
  );
  if (ttftErrors.length > 0 || (report.soak?.errorSamples.length ?? 0) > 0) {
    out.push("", "Error samples:", "");
    for (const e of [...ttftErrors.slice(0, 6), ...(report.soak?.errorSamples ?? []).slice(0, 3)]) out.push(`- \`${e}\``);
  }

  if (report.profiles?.length) {
    out.push("", "### CPU profile of the router (JS thread, self time)", "");
    out.push("`bun --cpu-prof src/main.ts serve` under the same setup; Bun's native HTTP threads do not appear here.", "");
    for (const p of report.profiles) {
      out.push(`**${p.workload}** — ${fmt(p.requests)} requests; ${fmt(p.summary.busyMs)} ms busy, ${fmt(p.summary.idleMs)} ms idle`, "");
      out.push("| self % | self ms | function | where |", "|---:|---:|---|---|");
      for (const h of p.summary.functions.slice(0, 15)) out.push(`| ${h.percent.toFixed(1)} | ${fmt(h.selfMs)} | ${cell(h.name)} | ${cell(h.where)} |`);
      out.push("", "| inclusive % | function (src/) | where |", "|---:|---|---|");
      for (const h of p.summary.inclusive.slice(0, 15)) out.push(`| ${h.percent.toFixed(1)} | ${cell(h.name)} | ${cell(h.where)} |`);
      out.push("", "| self % by file | file |", "|---:|---|");
      for (const h of p.summary.files.slice(0, 10)) out.push(`| ${h.percent.toFixed(1)} | ${cell(h.name)} |`);
      out.push("");
    }
  }

  out.push("", "<details><summary>Per-round figures</summary>", "", "```");
  if (report.throughput) {
    for (const [scenario, byTarget] of Object.entries(report.throughput)) {
      for (const [target, rounds] of Object.entries(byTarget)) {
        out.push(`${scenario.padEnd(20)} ${target.padEnd(7)} req/s ${rounds.map((r) => fmt(r.rps)).join(", ")}; CPU µs/req ${rounds.map((r) => fmt(r.cpuUs)).join(", ")}; p99 ms ${rounds.map((r) => fmt(r.p99, 2)).join(", ")}`);
      }
    }
  }
  for (const [target, rounds] of Object.entries(report.large ?? {})) {
    out.push(`large prompt ${target.padEnd(7)} CPU µs/req ${rounds.map((r) => fmt(r.cpuUs)).join(", ")}; p50 µs ${rounds.map((r) => us(r.p50)).join(", ")}; req/s ${rounds.map((r) => fmt(r.rps)).join(", ")}`);
  }
  if (report.latency) {
    for (const [target, rounds] of Object.entries(report.latency)) {
      out.push(`latency c=1 ${target.padEnd(7)} p50 µs ${rounds.map((r) => us(r.p50)).join(", ")}; p99 µs ${rounds.map((r) => us(r.p99)).join(", ")}`);
    }
  }
  if (report.cpu) {
    for (const [target, rounds] of Object.entries(report.cpu)) {
      out.push(`cpu ${target}: ${rounds.map((r) => `${r.chunks}ch ${fmt(r.cpuPerStreamUs)} µs/stream (${r.streams})`).join(", ")}`);
    }
  }
  for (const [label, data] of [["ttft c=100", report.ttft100], ["ttft c=1000", report.ttft1000]] as const) {
    for (const [target, rounds] of Object.entries(data ?? {})) {
      out.push(`${label} ${target}: ${rounds.map((r) => `p50 ${fmt(r.p50, 1)} p99 ${fmt(r.p99, 1)} n=${r.n} err=${r.errors} up=${r.upstreamMax}`).join(" | ")}`);
    }
  }
  if (report.soak) {
    const points = report.soak.rss.filter((_, i) => i % Math.max(1, Math.floor(report.soak!.rss.length / 12)) === 0);
    out.push(`soak RSS (s: MB) ${points.map(([t, v]) => `${t.toFixed(0)}: ${v.toFixed(1)}`).join(", ")}`);
  }
  if (report.soakRaised) {
    const points = report.soakRaised.rss.filter((_, i) => i % Math.max(1, Math.floor(report.soakRaised!.rss.length / 12)) === 0);
    out.push(`soak (limit raised) RSS (s: MB) ${points.map(([t, v]) => `${t.toFixed(0)}: ${v.toFixed(1)}`).join(", ")}`);
  }
  if (report.bills) {
    const b = report.bills;
    out.push(`bills: ${fmt(b.rows)} usage rows and ${fmt(b.rollupRows)} daily rollups seeded in ${fmt(b.seedSeconds, 1)} s; database ${fmt(b.dbMb)} MB`);
  }
  if (report.scaleout?.versions) out.push(`scale-out services: ${report.scaleout.versions.postgres}; ${report.scaleout.versions.redis}`);
  for (const [target, rounds] of Object.entries(report.scaleout?.throughput ?? {})) {
    out.push(`scale-out c=32 ${target}: req/s ${rounds.map((r) => fmt(r.rps)).join(", ")}; router CPU µs/req ${rounds.map((r) => fmt(r.cpuUs)).join(", ")}; PostgreSQL+Redis µs/req ${rounds.map((r) => fmt(r.servicesCpuUs)).join(", ")}`);
  }
  for (const [target, rounds] of Object.entries(report.scaleout?.latency ?? {})) {
    out.push(`scale-out c=1 ${target}: p50 µs ${rounds.map((r) => us(r.p50)).join(", ")}; p99 µs ${rounds.map((r) => us(r.p99)).join(", ")}`);
  }
  if (report.scaleout?.lag) out.push(`scale-out invalidation lag (ms, in order): ${report.scaleout.lag.samples.map((v) => fmt(v, 2)).join(", ")}`);
  out.push("```", "", "</details>");
  return out.join("\n");
}

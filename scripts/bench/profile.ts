/**
 * CPU profiles of the router run from source (`bun --cpu-prof src/main.ts serve`),
 * summarised by self time per function. The profiler samples the JavaScript thread
 * only: time spent in Bun's native HTTP client and server threads shows up as
 * process CPU (/proc) but not here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface HotSpot {
  name: string;
  where: string;
  selfMs: number;
  /** Share of the non-idle samples. */
  percent: number;
}

export interface ProfileSummary {
  file: string;
  busyMs: number;
  idleMs: number;
  /** Self time; native functions are named with their JS caller (`write ← log …`). */
  functions: HotSpot[];
  files: HotSpot[];
  /** Inclusive time of the project's own functions (src/), each counted once per stack. */
  inclusive: HotSpot[];
}

const IDLE = new Set(["(idle)", "(root)"]);

export function findProfile(dir: string): string | undefined {
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  return file ? join(dir, file) : undefined;
}

/** Self time per function and per file, and inclusive time of src/ functions, largest first. */
export function summariseProfile(path: string, root: string, top = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const place = (url: string) => {
    if (!url) return "(native)";
    const file = url.replace(/^file:\/\//, "");
    const modules = file.indexOf("/node_modules/");
    if (modules >= 0) return file.slice(modules + 1);
    return file.startsWith("/") ? relative(root, file) : file;
  };
  const label = (node: ProfileNode) => {
    const name = node.callFrame.functionName || "(anonymous)";
    const where = node.callFrame.url ? `${place(node.callFrame.url)}:${node.callFrame.lineNumber + 1}` : "(native)";
    return { name, where, file: place(node.callFrame.url) };
  };
  /** The nearest caller that is JavaScript with a source location. */
  const jsCaller = (id: number) => {
    for (let p = parent.get(id); p !== undefined; p = parent.get(p)) {
      const node = byId.get(p)!;
      if (node.callFrame.url) return label(node);
    }
    return undefined;
  };

  const deltas = profile.timeDeltas;
  const mean = deltas.length > 0 ? deltas.reduce((s, d) => s + d, 0) / deltas.length : 0;
  // Bun's profiler writes no idle samples (about one a millisecond otherwise): the gap to
  // the next sample holds any wait that followed, and the last frame before each wait (a
  // fetch, a Redis send, a timer's callback) was charged with all of it. A sample counts
  // for at most twice the usual interval, the rest as idle. Waits shorter than that (a
  // paced load's) still count to the frame before them: at a paced load the summary's
  // busy time exceeds the thread's CPU time (docs/benchmarks.md, seventeenth session).
  const interval = deltas.length > 0 ? [...deltas].sort((a, b) => a - b)[Math.floor(deltas.length / 2)]! : mean;
  const longest = 2 * interval;
  const functions = new Map<string, HotSpot>();
  const files = new Map<string, HotSpot>();
  const inclusive = new Map<string, HotSpot>();
  let busy = 0;
  let idle = 0;
  const add = (map: Map<string, HotSpot>, key: string, name: string, where: string, us: number) => {
    const h = map.get(key) ?? { name, where, selfMs: 0, percent: 0 };
    h.selfMs += us / 1000;
    map.set(key, h);
  };
  for (let i = 0; i < profile.samples.length; i++) {
    // A sample lasts until the next one, or the sampling interval's double when the thread waited meanwhile.
    const gap = Math.max(0, i + 1 < deltas.length ? deltas[i + 1]! : interval);
    const us = Math.min(gap, longest);
    idle += gap - us;
    const node = byId.get(profile.samples[i]!);
    if (!node) continue;
    const own = label(node);
    if (IDLE.has(own.name)) {
      idle += us;
      continue;
    }
    busy += us;
    const name = own.name;
    let where = own.where;
    if (!node.callFrame.url) {
      const caller = jsCaller(node.id);
      if (caller) where = `(native) ← ${caller.name} ${caller.where}`;
    }
    add(functions, `${name}@${where}`, name, where, us);
    add(files, own.file, own.file, own.file, us);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = label(byId.get(id)!);
      if (!frame.file.startsWith("src/")) continue;
      const key = `${frame.name}@${frame.where}`;
      if (seen.has(key)) continue;
      seen.add(key);
      add(inclusive, key, frame.name, frame.where, us);
    }
  }
  const rank = (m: Map<string, HotSpot>) =>
    [...m.values()]
      .map((h) => ({ ...h, selfMs: Math.round(h.selfMs * 10) / 10, percent: busy > 0 ? Math.round(((h.selfMs * 1000) / busy) * 1000) / 10 : 0 }))
      .sort((a, b) => b.selfMs - a.selfMs)
      .slice(0, top);
  return {
    file: path,
    busyMs: Math.round(busy / 1000),
    idleMs: Math.round(idle / 1000),
    functions: rank(functions),
    files: rank(files),
    inclusive: rank(inclusive),
  };
}

if (import.meta.main) {
  const path = process.argv[2];
  if (!path) {
    console.error("usage: bun scripts/bench/profile.ts <file.cpuprofile>");
    process.exit(2);
  }
  const summary = summariseProfile(path, join(import.meta.dir, "..", ".."), Number(process.argv[3] ?? 30));
  console.log(`busy ${summary.busyMs} ms, idle ${summary.idleMs} ms`);
  for (const h of summary.functions) console.log(`${h.percent.toFixed(1).padStart(5)}%  ${h.selfMs.toFixed(0).padStart(6)} ms  ${h.name}  ${h.where}`);
  console.log("\ninclusive (src/):");
  for (const h of summary.inclusive) console.log(`${h.percent.toFixed(1).padStart(5)}%  ${h.selfMs.toFixed(0).padStart(6)} ms  ${h.name}  ${h.where}`);
  console.log("\nby file:");
  for (const h of summary.files) console.log(`${h.percent.toFixed(1).padStart(5)}%  ${h.selfMs.toFixed(0).padStart(6)} ms  ${h.name}`);
}

/**
 * `bun scripts/bench-ab.ts`: before/after figures for a change on the request path, the
 * way its commit message needs them. Two variants of the router (two commits, a commit
 * and the working tree, or one build under two environments) are measured by one phase
 * of scripts/bench.ts in alternating runs, each run with its own floor, so a machine
 * that slows down for a while slows both; the medians and ranges are printed per variant.
 *
 *   bun scripts/bench-ab.ts --a HEAD                        # HEAD against the working tree
 *   bun scripts/bench-ab.ts --a 3c592da --b ea00cb6 --phase latency --runs 6
 *   bun scripts/bench-ab.ts --env-b '{"SWITCH":"1"}'        # one build, an environment switch
 *
 * Flags: --a REV and --b REV (default: the working tree; a REV is built in a throwaway
 * worktree), --env-a/--env-b JSON (BENCH_ROUTER_ENV of each variant), --phase
 * throughput | latency | large | cpu (default throughput), --runs N (alternations, default 4),
 * --seconds S (length of a round, default 2).
 */
import { existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runChecked } from "./bench/proc.ts";
import { flag } from "./bench/cli.ts";
import { median } from "./bench/stats.ts";

const ROOT = join(import.meta.dir, "..");
const PHASES = {
  throughput: ["non-streaming c=32 (req/s)", "non-streaming c=32: proxy CPU per request (µs)", "streaming c=32 (req/s)", "streaming c=32: proxy CPU per request (µs)"],
  latency: ["p50 (µs)", "p99 (µs)"],
  large: ["256 KiB prompt, 8 paced connections: CPU per call (µs)", "256 KiB prompt, 8 paced connections: p50 (µs)"],
  cpu: ["router: CPU per stream (µs)", "router: CPU per additional chunk (µs)"],
} as const;
type PhaseName = keyof typeof PHASES;

interface Variant {
  label: string;
  tree: string;
  env: Record<string, string>;
  /** Figures per measure, one per run: the router's column (latency: added over direct). */
  figures: Map<string, number[]>;
}

const run = (cmd: string[], options: { cwd: string; env?: Record<string, string> }): string =>
  runChecked(cmd, { cwd: options.cwd, env: { ...process.env, ...options.env } });

/** A tree holding the revision, built; the working tree itself when none is named. */
function treeOf(rev: string | undefined, cleanups: Array<() => void>): string {
  if (!rev) {
    run([process.execPath, join(ROOT, "scripts", "build.ts")], { cwd: ROOT });
    return ROOT;
  }
  const dir = mkdtempSync(join(tmpdir(), "bench-ab-"));
  run(["git", "worktree", "add", "--detach", dir, rev], { cwd: ROOT });
  cleanups.push(() => {
    Bun.spawnSync(["git", "worktree", "remove", "--force", dir], { cwd: ROOT });
    rmSync(dir, { recursive: true, force: true });
  });
  if (!existsSync(join(dir, "node_modules"))) symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  run([process.execPath, join(dir, "scripts", "build.ts")], { cwd: dir });
  return dir;
}

/** The printed table's router figure of a measure: its fourth column (latency rows: the "router +N µs" part). */
function figureOf(output: string, phase: PhaseName, measure: string): number | undefined {
  for (const line of output.split("\n")) {
    const cells = line.trim().split(/\s{2,}/);
    if (cells.length < 4) continue;
    if (phase === "latency") {
      if (!cells[1]!.startsWith(measure)) continue;
      const added = /router \+([\d,]+) µs/.exec(line);
      if (added) return Number(added[1]!.replace(/,/g, ""));
      continue;
    }
    if (cells[1] === measure) return Number(cells[3]!.replace(/,/g, ""));
  }
  return undefined;
}

async function main() {
  const phase = (flag("--phase") ?? "throughput") as PhaseName;
  if (!(phase in PHASES)) throw new Error(`--phase must be one of ${Object.keys(PHASES).join(", ")}`);
  const runs = Number(flag("--runs") ?? 4);
  const seconds = flag("--seconds") ?? "2";
  const cleanups: Array<() => void> = [];
  try {
    const a = flag("--a");
    const b = flag("--b");
    const treeA = treeOf(a, cleanups);
    const treeB = b === a ? treeA : treeOf(b, cleanups);
    const variants: Variant[] = [
      { label: `A ${a ?? "working tree"}${flag("--env-a") ? ` ${flag("--env-a")}` : ""}`, tree: treeA, env: JSON.parse(flag("--env-a") ?? "{}"), figures: new Map() },
      { label: `B ${b ?? "working tree"}${flag("--env-b") ? ` ${flag("--env-b")}` : ""}`, tree: treeB, env: JSON.parse(flag("--env-b") ?? "{}"), figures: new Map() },
    ];
    for (let i = 1; i <= runs; i++) {
      for (const variant of variants) {
        const output = run(
          [process.execPath, join(ROOT, "scripts", "bench.ts"), "--quick", "--seconds", seconds, "--only", phase, "--no-write", "--no-profile", "--tree", variant.tree],
          { cwd: ROOT, env: { BENCH_ROUTER_ENV: JSON.stringify(variant.env) } },
        );
        const shown: string[] = [];
        for (const measure of PHASES[phase]) {
          const value = figureOf(output, phase, measure);
          if (value === undefined) continue;
          const list = variant.figures.get(measure) ?? [];
          list.push(value);
          variant.figures.set(measure, list);
          shown.push(`${measure} ${value}`);
        }
        console.log(`run ${i} ${variant.label}: ${shown.join("; ")}`);
      }
    }
    console.log(`\n${phase}, ${runs} alternating runs of ${seconds} s rounds: median (min-max) of the router's figure${phase === "latency" ? " (added over direct)" : ""}`);
    for (const measure of PHASES[phase]) {
      const parts = variants.map((v) => {
        const values = v.figures.get(measure) ?? [];
        return values.length ? `${v.label.split(" ")[0]} ${median(values)} (${Math.min(...values)}-${Math.max(...values)})` : `${v.label.split(" ")[0]} –`;
      });
      console.log(`  ${measure}: ${parts.join("  vs  ")}`);
    }
    for (const v of variants) console.log(`  ${v.label.split(" ")[0]} = ${v.label.slice(2)}`);
  } finally {
    for (const cleanup of cleanups.reverse()) cleanup();
  }
}

await main();

/** The benchmark's command-line flags and the durations they imply (full or --quick). */
import { join } from "node:path";

export const ROOT = join(import.meta.dir, "..", "..");
export const PHASES = ["throughput", "large", "latency", "cpu", "ttft", "soak", "scaleout", "bills", "profile"] as const;
export type Phase = (typeof PHASES)[number];

// ---------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------

export interface Settings {
  quick: boolean;
  rounds: number;
  /** Seconds of one wrk round. */
  seconds: number;
  /** Seconds of one TTFT round. */
  ttftSeconds: number;
  /** Seconds of one CPU-per-stream round. */
  cpuSeconds: number;
  soakSeconds: number;
  /** Measurements that may be repeated because other programs loaded the machine. */
  repeats: number;
  /** Also soak a router started with BUN_CONFIG_MAX_HTTP_REQUESTS raised (1,000 real upstream streams). */
  soakRaised: boolean;
  rows: number;
  billSamples: number;
  paced: { firstMs: number; everyMs: number; chunks: number };
  phases: Set<Phase>;
  write: boolean;
  rebuild: boolean;
  keep: boolean;
  /** Source tree of the router under test (its dist/router and src/main.ts); default this checkout. */
  tree: string;
  argv: string[];
}

export function parseSettings(argv: string[]): Settings {
  const quick = argv.includes("--quick");
  const value = (flag: string): string | undefined => {
    const i = argv.indexOf(flag);
    if (i < 0) return undefined;
    const v = argv[i + 1];
    if (v === undefined || v.startsWith("--")) throw new Error(`${flag} needs a value`);
    return v;
  };
  const number = (flag: string, fallback: number) => {
    const v = value(flag);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} must be a positive number, got ${v}`);
    return n;
  };
  const withValue = ["--soak", "--rounds", "--seconds", "--rows", "--only", "--tree", "--repeats"];
  const known = new Set(["--quick", "--soak-raised", "--profile", "--no-profile", "--write", "--no-write", "--rebuild", "--keep", ...withValue]);
  for (let i = 0; i < argv.length; i++) {
    if (!known.has(argv[i]!)) throw new Error(`unknown flag ${argv[i]}`);
    if (withValue.includes(argv[i]!)) i++;
  }
  const only = value("--only");
  const phases = new Set<Phase>(only ? (only.split(",") as Phase[]) : PHASES.filter((p) => p !== "profile" || !quick));
  for (const p of phases) if (!PHASES.includes(p)) throw new Error(`unknown phase ${p} (phases: ${PHASES.join(", ")})`);
  if (argv.includes("--profile")) phases.add("profile");
  if (argv.includes("--no-profile")) phases.delete("profile");
  const seconds = number("--seconds", quick ? 1 : 6);
  return {
    quick,
    rounds: Math.round(number("--rounds", 3)),
    seconds: Math.max(1, Math.round(seconds)),
    ttftSeconds: quick ? 2 : Math.max(2, Math.round(seconds * 1.34)),
    cpuSeconds: quick ? 1 : Math.max(2, Math.round(seconds * 0.84)),
    soakSeconds: number("--soak", quick ? 10 : 120),
    soakRaised: argv.includes("--soak-raised"),
    repeats: Math.round(number("--repeats", quick ? 2 : 6)),
    rows: Math.round(number("--rows", quick ? 100_000 : 1_000_000)),
    billSamples: quick ? 10 : 30,
    paced: quick ? { firstMs: 100, everyMs: 20, chunks: 10 } : { firstMs: 200, everyMs: 50, chunks: 20 },
    phases,
    write: argv.includes("--write") || (!quick && !argv.includes("--no-write") && !only),
    rebuild: argv.includes("--rebuild"),
    keep: argv.includes("--keep"),
    tree: value("--tree") ?? ROOT,
    argv,
  };
}


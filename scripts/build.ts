/**
 * Compiles the router into one executable, dist/router: the CLI, server, embedded
 * migrations and console assets, with the Bun runtime inside. Copied alone to a
 * machine of the same platform, it needs nothing else.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
/** Every module started with `new Worker(workerUrl(…))`. */
const WORKERS = ["src/store/sqlite/upkeep-worker.ts", "src/store/sqlite/backup-worker.ts"];
mkdirSync(join(root, "dist"), { recursive: true });
const started = performance.now();
const proc = Bun.spawnSync(
  // --splitting: the three console pages share one copy of Preact, uPlot and the common UI.
  // Workers are entrypoints of their own: a Worker in an executable loads a bundled entry (src/core/worker-url.ts).
  [process.execPath, "build", "--compile", "--minify", "--splitting", "src/main.ts", ...WORKERS, "--outfile", "dist/router"],
  { cwd: root, stdout: "pipe", stderr: "inherit" },
);
if (proc.exitCode !== 0) {
  process.stderr.write(proc.stdout.toString());
  process.exit(proc.exitCode ?? 1);
}
console.log(`built dist/router in ${Math.round(performance.now() - started)} ms`);

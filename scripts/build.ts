/**
 * Compiles the router into one executable, dist/router: the CLI, server, embedded
 * migrations and console assets, with the Bun runtime inside. Copied alone to a
 * machine of the same platform, it needs nothing else.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
mkdirSync(join(root, "dist"), { recursive: true });
const started = performance.now();
const proc = Bun.spawnSync(
  // --splitting: the three console pages share one copy of Preact, uPlot and the common UI.
  // The checkpoint worker is an entrypoint of its own: a Worker in an executable loads a bundled entry.
  [process.execPath, "build", "--compile", "--minify", "--splitting", "src/main.ts", "src/store/checkpoint-worker.ts", "--outfile", "dist/router"],
  { cwd: root, stdout: "pipe", stderr: "inherit" },
);
if (proc.exitCode !== 0) {
  process.stderr.write(proc.stdout.toString());
  process.exit(proc.exitCode ?? 1);
}
console.log(`built dist/router in ${Math.round(performance.now() - started)} ms`);

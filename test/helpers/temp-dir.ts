import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Directories made for this test run, removed once its last test file ended (preload.ts). */
const made: string[] = [];

/**
 * A fresh directory under the system's temp directory, removed with everything in it
 * after the run: data directories, certificates and copies of the 110 MB executable
 * (`isolatedBinary`) left behind by every run had filled a developer's disk.
 */
export function tempDir(prefix = "router-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // Scripts that borrow the helpers (the benchmark's certificates) end with an exit event; `bun test` fires none.
  if (made.length === 0) process.once("exit", removeTempDirs);
  made.push(dir);
  return dir;
}

/** Removes the directories `tempDir` made (the run's global afterAll, or a script's exit). */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

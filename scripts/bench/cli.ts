/** What the benchmark's command-line tools share: their flags and their variant files. */
import { readFileSync } from "node:fs";

/** The value after `name` on the command line (`--rounds 8` → "8"), or undefined. */
export function flag(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

/** One router to measure: a binary, with extra environment and flags (bench-variants, tail-lab). */
export interface VariantSpec {
  name: string;
  bin: string;
  env?: Record<string, string>;
  args?: string[];
}

export const readVariants = (file: string): VariantSpec[] => JSON.parse(readFileSync(file, "utf8")) as VariantSpec[];

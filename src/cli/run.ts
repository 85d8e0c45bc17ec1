import { UsageError } from "./flags.ts";

/**
 * Runs a command body and turns failures into one line on stderr and a non-zero
 * exit: 2 for command-line mistakes, 1 for everything else. Users see the
 * reason, never a stack trace.
 */
export async function runOrExit(body: () => Promise<void> | void): Promise<void> {
  try {
    await body();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`router: ${message}\n`);
    process.exit(error instanceof UsageError ? 2 : 1);
  }
}

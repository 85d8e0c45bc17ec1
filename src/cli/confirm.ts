import type { ArgsDef } from "citty";
import { UsageError } from "./flags.ts";

/** `--yes` for commands that delete: without it they ask, and only a terminal can answer. */
export const yesArg = {
  yes: { type: "boolean", alias: "y", description: "Do it without asking (needed when stdin is not a terminal)" },
} as const satisfies ArgsDef;

/**
 * Asks before something is deleted: `--yes` skips the question; on a terminal the user
 * answers y or yes (anything else, or end of input, cancels: exit 1 with a line);
 * anywhere else (a script, a pipe) there is no one to ask, so the command is a usage
 * error (exit 2) naming `--yes`.
 */
export async function confirmDeletion(what: string, args: Readonly<Record<string, unknown>>): Promise<void> {
  if (args.yes === true) return;
  if (!process.stdin.isTTY) throw new UsageError(`refusing to delete ${what} without --yes (stdin is not a terminal, so nobody can confirm)`);
  process.stderr.write(`Delete ${what}? [y/N] `);
  let answer = "";
  for await (const line of console) {
    answer = line;
    break;
  }
  if (!/^\s*y(es)?\s*$/i.test(answer)) {
    process.stderr.write("router: cancelled; nothing was deleted\n");
    process.exit(1);
  }
}

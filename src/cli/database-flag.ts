import { shownUrl } from "../store/postgres/url.ts";
import { UsageError } from "./flags.ts";

/**
 * A PostgreSQL URL given to a command, from its flag or else from ROUTER_DATABASE.
 * Checked before anything connects, and never echoed with its password. A password on
 * the command line works, with a warning: other users of the machine can read it in the
 * process list, while the environment stays private to the process.
 */
export function databaseUrl(fromFlag: string | undefined, flag: string, env: NodeJS.ProcessEnv = process.env, warn = printWarning): string | undefined {
  const given = fromFlag !== undefined && fromFlag !== "";
  const value = given ? fromFlag : env.ROUTER_DATABASE || undefined;
  if (value === undefined) return undefined;
  const source = given ? `--${flag}` : "ROUTER_DATABASE";
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${source} is not a URL; give postgres://user@host:5432/database`);
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new UsageError(`${source} must be a postgres:// or postgresql:// URL, got ${shownUrl(value)}`);
  }
  if (!url.hostname) throw new UsageError(`${source} names no host: ${shownUrl(value)}`);
  if (given && url.password) {
    warn(`--${flag} holds a password, which other users of this machine can see in the process list; set ROUTER_DATABASE instead`);
  }
  return value;
}

function printWarning(message: string): void {
  process.stderr.write(`router: warning: ${message}\n`);
}

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
  const warning = given ? passwordFlagWarning(flag, "ROUTER_DATABASE", value) : undefined;
  if (warning) warn(warning);
  return value;
}

/**
 * The warning for a URL that carries a password and was given as `--flag` (undefined
 * otherwise): the process list shows it to every user of the machine, the environment
 * does not. Names the flag and the variable, never the URL.
 */
export function passwordFlagWarning(flag: string, envName: string, value: string | undefined): string | undefined {
  if (value === undefined || value === "") return undefined;
  let password = "";
  try {
    password = new URL(value).password;
  } catch {
    return undefined;
  }
  return password ? `--${flag} holds a password, which other users of this machine can see in the process list; set ${envName} instead` : undefined;
}

function printWarning(message: string): void {
  process.stderr.write(`router: warning: ${message}\n`);
}

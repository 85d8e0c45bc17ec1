import type { ArgsDef } from "citty";

/** A mistake on the command line: printed as one clear line, exit code 2, no stack trace. */
export class UsageError extends Error {}

/**
 * citty accepts any flag; a typo (`--prot 80`) must not be silently ignored, so
 * every `--flag` is checked against the command's definitions.
 */
export function rejectUnknownFlags(rawArgs: readonly string[], defs: ArgsDef): void {
  const known = new Set<string>(["help", "h"]);
  for (const [name, def] of Object.entries(defs)) {
    known.add(name);
    known.add(kebab(name));
    const aliases = "alias" in def ? def.alias : undefined;
    for (const alias of typeof aliases === "string" ? [aliases] : (aliases ?? [])) known.add(alias);
    if (def.type === "boolean") known.add(`no-${kebab(name)}`);
  }
  for (const raw of rawArgs) {
    if (raw === "--") break;
    const match = /^--?([^=]+)/.exec(raw);
    if (!match || /^-\d/.test(raw)) continue;
    if (!known.has(match[1]!)) throw new UsageError(`unknown flag ${raw.split("=")[0]}; see --help`);
  }
}

/**
 * Anything after the positionals a command declares is a mistake (`router serve 8080`
 * must not start on the default port); a key there is called out, since it would
 * stay in shell history.
 */
export function rejectStrayArguments(args: { _: readonly string[] }, defs: ArgsDef = {}): void {
  const declared = Object.values(defs).filter((def) => def.type === "positional").length;
  if (args._.some((value) => /^sk-[A-Za-z0-9_-]{10,}/.test(value))) {
    throw new UsageError(
      "a key is never taken as an argument (it would stay in shell history): put your API key in ROUTER_KEY, a provider secret in --secret-file FILE or --secret -",
    );
  }
  const stray = args._.slice(declared);
  if (stray.length > 0) throw new UsageError(`unexpected argument "${stray[0]}"; see --help`);
}

/**
 * A string flag given with nothing after it (`--page` last on the line, `--size=`)
 * reaches the command as "", which reads as "not given": it is a mistake, not a flag to drop.
 */
export function rejectEmptyValues(rawArgs: readonly string[], args: Readonly<Record<string, unknown>>, defs: ArgsDef): void {
  for (const [name, def] of Object.entries(defs)) {
    if (def.type !== "string" || args[name] !== "") continue;
    const flag = `--${kebab(name)}`;
    if (rawArgs.some((raw) => raw === flag || raw.startsWith(`${flag}=`))) throw new UsageError(`${flag} needs a value; see --help`);
  }
}

/**
 * The `setup` of a command made of subcommands (`router`, `router keys`, …): citty
 * answers a missing or unknown subcommand with its help screen and exit code 1; here it
 * is one line and a usage error (2).
 */
export function requireSubCommand(path: string, names: readonly string[]): (context: { rawArgs: readonly string[] }) => void {
  return ({ rawArgs }) => {
    const chosen = rawArgs.find((arg) => !arg.startsWith("-"));
    if (chosen !== undefined && names.includes(chosen)) return;
    const why = chosen === undefined ? "missing command" : `unknown command "${chosen}"`;
    process.stderr.write(`router: ${why}: ${path} ${names.join("|")}; see ${path} --help\n`);
    process.exit(2);
  };
}

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/**
 * A flag's value: the command line wins, then `ROUTER_<FLAG>` from the
 * environment (e.g. ROUTER_PORT, ROUTER_MAX_BODY), then undefined.
 */
export function flagOrEnv(args: Record<string, unknown>, name: string, env = process.env): string | undefined {
  const fromArgs = args[name];
  if (fromArgs !== undefined && fromArgs !== "") return String(fromArgs);
  const fromEnv = env[`ROUTER_${kebab(name).replace(/-/g, "_").toUpperCase()}`];
  return fromEnv === undefined || fromEnv === "" ? undefined : fromEnv;
}

/**
 * How to name a flag's value in an error: `--port` when the command line gave it,
 * `ROUTER_PORT` when it came from the environment (a unit file, a container), where the
 * user has to look for it.
 */
export function optionName(args: Record<string, unknown>, name: string, env = process.env): string {
  const fromArgs = args[name];
  if (fromArgs !== undefined && fromArgs !== "") return `--${kebab(name)}`;
  const envName = `ROUTER_${kebab(name).replace(/-/g, "_").toUpperCase()}`;
  return env[envName] !== undefined && env[envName] !== "" ? envName : `--${kebab(name)}`;
}

/** A name as errors show it: an optionName() as it is, a bare flag name as `--flag`. */
const shown = (name: string) => (name.startsWith("--") || name.startsWith("ROUTER_") ? name : `--${kebab(name)}`);

export function parseIntegerFlag(name: string, value: string | undefined, fallback: number, min = 0, max = Infinity): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value.trim()) || Number(value) < min || Number(value) > max) {
    const range = max === Infinity ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new UsageError(`${shown(name)} must be an integer ${range}, got "${value}"`);
  }
  return Number(value);
}

export function parseBooleanFlag(name: string, value: string | undefined): boolean {
  if (value === undefined) return false;
  const v = value.toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off"].includes(v)) return false;
  throw new UsageError(`${shown(name)} must be true or false, got "${value}"`);
}

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

export function parseIntegerFlag(name: string, value: string | undefined, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value.trim()) || Number(value) < min) {
    throw new UsageError(`--${kebab(name)} must be an integer of at least ${min}, got "${value}"`);
  }
  return Number(value);
}

export function parseBooleanFlag(name: string, value: string | undefined): boolean {
  if (value === undefined) return false;
  const v = value.toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off"].includes(v)) return false;
  throw new UsageError(`--${kebab(name)} must be true or false, got "${value}"`);
}

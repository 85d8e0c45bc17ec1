/**
 * Checks run as the owner types, mirroring what the router refuses, so a mistake
 * shows next to its row before anything is saved. The router checks again.
 */
import { isValidEmail, normaliseEmail } from "../../../src/accounts/validation.ts";
import { mapperEntries, mapperText } from "../../../src/wire/mapper-text.ts";

export interface Row {
  left: string;
  right: string;
}

export interface RowError {
  left?: string;
  right?: string;
}

export interface Checked {
  rows: RowError[];
  /** A problem of the whole list (a cycle). */
  list?: string;
  ok: boolean;
}

/** A model pattern: `*` is the only wildcard; no spaces, commas or `=` (they separate entries). */
export function patternError(pattern: string): string | undefined {
  const text = pattern.trim();
  if (!text) return "Enter a model name or pattern";
  if (/\s/.test(text)) return "No spaces in a pattern";
  if (/[,=]/.test(text)) return 'No "," or "=" in a pattern';
  return undefined;
}

export function levelError(level: string): string | undefined {
  const text = level.trim();
  if (!text) return "Enter a Level";
  if (!/^\d+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text))) return "A Level is a positive integer";
  return undefined;
}

function modelNameError(name: string): string | undefined {
  const base = patternError(name);
  if (base) return base === "Enter a model name or pattern" ? "Enter the target model" : base;
  if (name.includes("*")) return "The target is a model name, not a pattern";
  return undefined;
}

function finish(rows: RowError[], list?: string): Checked {
  return { rows, list, ok: !list && rows.every((r) => !r.left && !r.right) };
}

function duplicates(rows: Row[], errors: RowError[], what: string): void {
  const seen = new Set<string>();
  rows.forEach((row, i) => {
    const key = row.left.trim();
    if (key && seen.has(key) && !errors[i]!.left) errors[i]!.left = `${what} already has an entry above`;
    seen.add(key);
  });
}

/** MODEL_MAPPER: `<source_pattern>=<target_model>`. */
export function checkModelMapper(rows: Row[]): Checked {
  const errors = rows.map((r) => ({ left: patternError(r.left), right: modelNameError(r.right) }));
  duplicates(rows, errors, "This pattern");
  return finish(errors);
}

/** LEVEL_MAPPER: `<model_pattern>=<level>`. */
export function checkLevelMapper(rows: Row[]): Checked {
  const errors = rows.map((r) => ({ left: patternError(r.left), right: levelError(r.right) }));
  duplicates(rows, errors, "This pattern");
  return finish(errors);
}

/** SWITCH_OVER: `<primary_level>=<backup_level>`, one backup per Level, no cycles. */
export function checkSwitchOver(rows: Row[]): Checked {
  const errors: RowError[] = rows.map((r) => {
    const left = levelError(r.left);
    const right = levelError(r.right);
    if (!left && !right && Number(r.left) === Number(r.right)) return { right: "A Level cannot back itself up" };
    return { left, right };
  });
  duplicates(rows, errors, "This Level");
  const backups = new Map<number, number>();
  rows.forEach((r, i) => {
    if (!errors[i]!.left && !errors[i]!.right && !backups.has(Number(r.left))) backups.set(Number(r.left), Number(r.right));
  });
  for (const start of backups.keys()) {
    const seen = [start];
    for (let next = backups.get(start); next !== undefined; next = backups.get(next)) {
      if (seen.includes(next)) return finish(errors, `Cycle: ${[...seen, next].join(" → ")}. Traffic would never settle.`);
      seen.push(next);
    }
  }
  return finish(errors);
}

/** RESOURCES and account Resources: comma-separated API path patterns starting with `/` (or `*`). */
export function resourcesError(text: string): string | undefined {
  for (const entry of text.split(",").map((e) => e.trim()).filter(Boolean)) {
    if (!/^(\*|\/[^\s,]*)$/.test(entry)) return `"${entry}" is not an API path pattern (it must start with /)`;
  }
  return undefined;
}

/** AllowModels: comma-separated model patterns. */
export function modelListError(text: string): string | undefined {
  for (const entry of text.split(",").map((e) => e.trim()).filter(Boolean)) {
    const error = patternError(entry);
    if (error) return `"${entry}": ${error}`;
  }
  return undefined;
}

/** AllowIPs: comma-separated IPv4/IPv6 addresses or CIDR ranges (a light check; the router decides). */
export function ipListError(text: string): string | undefined {
  for (const entry of text.split(",").map((e) => e.trim()).filter(Boolean)) {
    const [address, bits, extra] = entry.split("/");
    const ipv4 = /^(\d{1,3})(\.\d{1,3}){3}$/.test(address!) && address!.split(".").every((p) => Number(p) <= 255);
    const ipv6 = /^[0-9a-fA-F:.]+$/.test(address!) && address!.includes(":");
    const max = ipv4 ? 32 : 128;
    const bitsOk = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= max);
    if (extra !== undefined || !(ipv4 || ipv6) || !bitsOk) return `"${entry}" is not an IP address or CIDR range`;
  }
  return undefined;
}

/** An email address as the router checks it (accounts, XAI_MAIL, the test mail): a host without a dot is one. */
export const isEmail = (text: string) => isValidEmail(normaliseEmail(text));

/** An optional non-negative number field (limits): "" is fine. */
export function limitError(text: string, integer: boolean, bound?: number | null): string | undefined {
  if (text.trim() === "") return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0) return "Enter a non-negative number";
  if (integer && !Number.isInteger(n)) return "Enter a whole number";
  if (bound !== null && bound !== undefined && n > bound) return `At most ${bound} (your own limit)`;
  return undefined;
}

/** Rows → an object of name → value (a key's Azure deployments and API versions), order kept. */
export function rowsToObject(rows: Row[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const row of rows) if (row.left.trim()) out[row.left.trim()] = row.right.trim();
  return out;
}

/** Rows → a mapper item's text form `a=b,c=d` (order kept), as `PUT /x-config` takes and GET shows it. */
export function rowsToMapper(rows: Row[]): string {
  return mapperText(rows.filter((row) => row.left.trim()).map((row) => ({ left: row.left.trim(), right: row.right.trim() })));
}

/** A mapper item as `GET /x-config` exports it (`a=b,c=d`; unset: none) → rows, in order. */
export function mapperToRows(value: unknown): Row[] {
  return mapperEntries(value);
}

export function objectToRows(value: unknown): Row[] {
  if (!value || typeof value !== "object") return [];
  return Object.entries(value as Record<string, unknown>).map(([left, right]) => ({ left, right: String(right) }));
}

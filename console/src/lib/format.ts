const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

export const formatInt = (n: number | null | undefined) => (n === null || n === undefined ? "—" : integer.format(n));

/** Decimals of every money figure: a hundredth of a cent, enough for one call's cost. */
export const CREDIT_DECIMALS = 4;

/**
 * Credits (1 credit = 1 USD) with a fixed number of decimals, so figures line up and
 * compare at a glance; an amount too small to show is "< 0.0001" rather than zero.
 * The unit is the column's or the label's (or use formatCredits).
 */
export function formatCredit(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  const smallest = 10 ** -CREDIT_DECIMALS;
  if (n !== 0 && Math.abs(n) < smallest / 2) return n > 0 ? `< ${smallest.toFixed(CREDIT_DECIMALS)}` : `> -${smallest.toFixed(CREDIT_DECIMALS)}`;
  return n.toLocaleString("en-US", { minimumFractionDigits: CREDIT_DECIMALS, maximumFractionDigits: CREDIT_DECIMALS });
}

/** A money figure standing alone, with its unit: `12.3400 credits`. */
export const formatCredits = (n: number | null | undefined) => (n === null || n === undefined ? "—" : `${formatCredit(n)} credits`);

export const formatLimit = (n: number | null | undefined) => (n === null || n === undefined ? "unlimited" : integer.format(n));

/** The router's business time zone (from /dashboard/status), once known; before that the browser's. */
let displayZone: string | undefined;

export function setDisplayTimeZone(zone: string | undefined): void {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    displayZone = zone;
  } catch {
    displayZone = undefined;
  }
}

/**
 * A moment in the router's business time zone, named (`11/29/2026, 10:32:02 AM GMT+9`):
 * bills and the date filters count business days in that zone, so a call listed under
 * a day shows a time on that day, whatever the browser's own zone.
 */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, { year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "2-digit", second: "2-digit", timeZone: displayZone, timeZoneName: "short" });
}

/** `YYYY-MM-DD` of a Date in UTC. */
export const isoDay = (date: Date) => date.toISOString().slice(0, 10);

/** The day `days` before `day` (`YYYY-MM-DD`). */
export function shiftDay(day: string, days: number): string {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + days);
  return isoDay(date);
}

/**
 * A value for a CSV cell: quoted when it holds a separator, quote or line break. Text a
 * spreadsheet would read as a formula (starting with = + - @, a tab or a carriage
 * return: a model name is whatever a client sent) gets a leading ' so it stays text.
 * Numbers are written as they are: a negative amount is not a formula.
 */
export function csvCell(value: unknown): string {
  const raw = value === null || value === undefined ? "" : String(value);
  const text = typeof value !== "number" && /^[=+\-@\t\r]/.test(raw) ? `'${raw}` : raw;
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Saves text as a file through a blob: URL (nothing leaves the browser). */
export function download(name: string, text: string, type = "text/csv"): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Optional number from an input's text: "" is undefined, otherwise the number (NaN when not one). */
export function numberOrEmpty(text: string): number | undefined {
  return text.trim() === "" ? undefined : Number(text);
}

/** A duration in milliseconds as read at a glance: `840 ms`, `1.20 s`, `2 min 5 s`. */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${integer.format(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

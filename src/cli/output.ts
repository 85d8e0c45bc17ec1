/**
 * What the admin commands print: aligned tables and `label: value` records for
 * people, the server's JSON as is for scripts (`--json`). Text that came from the
 * server is cleaned of control characters, so a notice or an account alias cannot
 * move the cursor or recolour the terminal, and of bidirectional controls, so a model
 * name a client sent with U+202E cannot reverse the rest of its row.
 */

import { BIDI_CONTROLS } from "../core/bidi.ts";

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
  /** Numbers read best right-aligned. */
  align?: "left" | "right";
  /** Longer cells are cut with "…" (default 48 characters). */
  max?: number;
}

const DEFAULT_MAX = 48;

/** Width on a terminal: wide characters (CJK, emoji) take two columns. */
const width = (text: string) => Bun.stringWidth(text);

/** One line of printable text from any value: `-` for nothing, compact JSON for objects. */
export function cell(value: unknown, max = DEFAULT_MAX): string {
  let text: string;
  if (value === null || value === undefined || value === "") text = "-";
  else if (typeof value === "boolean") text = value ? "yes" : "no";
  else if (typeof value === "object") text = JSON.stringify(value);
  else text = String(value);
  text = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ").replace(BIDI_CONTROLS, "");
  return truncate(text, max);
}

function truncate(text: string, max: number): string {
  if (width(text) <= max) return text;
  let out = "";
  for (const char of text) {
    if (width(out + char) > max - 1) break;
    out += char;
  }
  return out + "…";
}

function pad(text: string, to: number, align: "left" | "right"): string {
  const fill = " ".repeat(Math.max(0, to - width(text)));
  return align === "right" ? fill + text : text + fill;
}

/** The narrowest a column is squeezed to when a table is wider than the terminal. */
const MIN_SQUEEZED = 6;

/** The terminal's width when printing to one; tables are not cut when printing to a pipe or a file. */
const terminalColumns = () => (process.stdout.isTTY ? process.stdout.columns : undefined);

/**
 * Narrows the widest columns, one character at a time, until a line fits `limit`
 * (columns are joined by two spaces); no column goes below MIN_SQUEEZED or its header.
 */
function squeeze(widths: number[], headers: readonly string[], limit: number): void {
  const total = () => widths.reduce((sum, w) => sum + w, 0) + 2 * (widths.length - 1);
  while (total() > limit) {
    let widest = -1;
    for (let i = 0; i < widths.length; i++) {
      const floor = Math.max(MIN_SQUEEZED, width(headers[i]!));
      if (widths[i]! > floor && (widest === -1 || widths[i]! > widths[widest]!)) widest = i;
    }
    if (widest === -1) return;
    widths[widest]!--;
  }
}

/**
 * An aligned table with a header line; `empty` is printed instead when there are no
 * rows. On a terminal narrower than the table, the widest columns are cut to fit.
 */
export function formatTable<T>(rows: readonly T[], columns: ReadonlyArray<Column<T>>, empty = "(none)", maxWidth = terminalColumns()): string {
  if (rows.length === 0) return empty + "\n";
  let cells = rows.map((row) => columns.map((column) => cell(column.value(row), column.max ?? DEFAULT_MAX)));
  const widths = columns.map((column, i) => Math.max(width(column.header), ...cells.map((line) => width(line[i]!))));
  if (maxWidth !== undefined && maxWidth > 0) {
    squeeze(widths, columns.map((column) => column.header), maxWidth);
    cells = cells.map((line) => line.map((text, i) => truncate(text, widths[i]!)));
  }
  const line = (values: readonly string[]) =>
    values
      .map((value, i) => pad(value, widths[i]!, columns[i]!.align ?? "left"))
      .join("  ")
      .trimEnd();
  return [line(columns.map((column) => column.header)), ...cells.map(line)].join("\n") + "\n";
}

/** `label  value` lines, labels aligned: one record (an account, a key). */
export function formatRecord(pairs: ReadonlyArray<readonly [string, unknown]>, max = 100): string {
  const labelWidth = Math.max(...pairs.map(([label]) => width(label)));
  return pairs.map(([label, value]) => `${pad(label, labelWidth, "left")}  ${cell(value, max)}`).join("\n") + "\n";
}

export function print(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : text + "\n");
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + "\n");
}

const two = (n: number) => String(n).padStart(2, "0");

/**
 * A server time (ISO, UTC) in this terminal's local time, with its offset so it cannot
 * be misread: `2025-03-01T12:00:00.000Z` → `2025-03-01 13:00:00 +01:00` in Paris,
 * `2025-03-01 12:00:00 +00:00` where the zone is UTC.
 */
export function time(iso: unknown): string | null {
  if (typeof iso !== "string") return null;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const offset = -date.getTimezoneOffset();
  const sign = offset < 0 ? "-" : "+";
  const zone = `${sign}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())} ${zone}`;
}

/**
 * A list for `--json`: the server's array as is, or with `--page-info` an object that adds
 * its paging headers (X-Page, X-Per-Page, X-Total-Count, X-Total-Pages), so a script can page
 * without the headers it never sees.
 */
export function printJsonList(items: readonly unknown[], headers: Headers, pageInfo: boolean): void {
  if (!pageInfo) return printJson(items);
  const number = (name: string) => {
    const value = headers.get(name);
    return value === null || !Number.isFinite(Number(value)) ? null : Number(value);
  };
  printJson({ page: number("x-page"), size: number("x-per-page"), total: number("x-total-count"), pages: number("x-total-pages"), items });
}

/** "page 2 of 5, 97 in all" from the list headers, when there is more than one page. */
export function pageFooter(headers: Headers): string | undefined {
  const total = Number(headers.get("x-total-count"));
  const pages = Number(headers.get("x-total-pages"));
  const page = Number(headers.get("x-page"));
  if (!Number.isFinite(pages) || pages <= 1) return undefined;
  const next = page < pages ? `; next: --page ${page + 1}` : "";
  return `page ${page} of ${pages}, ${total} in all${next}`;
}

export function formatBytes(bytes: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} bytes` : `${value.toFixed(1)} ${units[unit]}`;
}

/**
 * Lines of fixed-width columns, for output that arrives a row at a time (`--follow`):
 * the widths cannot follow the rows, so each column has its own and longer cells are cut.
 */
export function fixedColumns<T>(columns: ReadonlyArray<Column<T> & { width: number }>): { header: string; line: (row: T) => string } {
  const join = (values: readonly string[]) =>
    values
      .map((value, i) => pad(truncate(value, columns[i]!.width), columns[i]!.width, columns[i]!.align ?? "left"))
      .join("  ")
      .trimEnd();
  return {
    header: join(columns.map((column) => column.header)),
    line: (row) => join(columns.map((column) => cell(column.value(row), column.width))),
  };
}

import { badRequest } from "../../core/errors.ts";

/** The longest range a bill covers, in business days (one leap year). */
export const MAX_RANGE_DAYS = 366;

/** An inclusive range of business dates (`YYYY-MM-DD`). */
export interface DateRange {
  start: string;
  end: string;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_MS = 86_400_000;

const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeap(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Day number (days since 1970-01-01) of a valid calendar date, or undefined when it is not one. */
export function dayNumber(value: string): number | undefined {
  const match = DATE.exec(value);
  if (!match) return undefined;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return Math.round(date.getTime() / DAY_MS);
}

/** `YYYY-MM-DD` of a day number (inverse of `dayNumber`). */
export function dateOf(dayNo: number): string {
  const date = new Date(dayNo * DAY_MS);
  const year = String(date.getUTCFullYear()).padStart(4, "0");
  const month = String(date.getUTCMonth() + 1).padStart(2, "0");
  const day = String(date.getUTCDate()).padStart(2, "0");
  return `${year}-${month}-${day}`;
}

/** Every date of the range, ascending. */
export function datesIn(range: DateRange): string[] {
  const first = dayNumber(range.start)!;
  const last = dayNumber(range.end)!;
  const dates: string[] = [];
  for (let day = first; day <= last; day++) dates.push(dateOf(day));
  return dates;
}

/** Number of days in an inclusive range. */
export function rangeLength(range: DateRange): number {
  return dayNumber(range.end)! - dayNumber(range.start)! + 1;
}

function dateParam(query: URLSearchParams, name: string): string | undefined {
  const raw = query.get(name);
  if (raw === null || raw === "") return undefined;
  if (dayNumber(raw) === undefined) throw badRequest(`${name} must be a calendar date as YYYY-MM-DD (got ${JSON.stringify(raw.slice(0, 40))})`, name);
  return raw;
}

function daysParam(query: URLSearchParams): number | undefined {
  const raw = query.get("days");
  if (raw === null || raw === "") return undefined;
  const value = /^\d{1,6}$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= 1 && value <= MAX_RANGE_DAYS)) throw badRequest(`days must be an integer from 1 to ${MAX_RANGE_DAYS}`, "days");
  return value;
}

/**
 * The bill range of a query (docs/reports.md): `date`, or `start` with optional `end`
 * (default today), or `days` (the last N business days ending today); nothing means
 * today. Only one form per request. `today` is the business date in the configured zone.
 * Throws a 400 naming the offending parameter.
 */
export function parseBillRange(query: URLSearchParams, today: string): DateRange {
  const present = (name: string) => (query.get(name) ?? "") !== "";
  if (present("date") && (present("start") || present("end") || present("days"))) {
    throw badRequest("date cannot be combined with start, end or days", "date");
  }
  if (present("days") && (present("start") || present("end"))) {
    throw badRequest("days cannot be combined with start or end", "days");
  }
  if (present("end") && !present("start")) throw badRequest("end needs start", "end");

  const date = dateParam(query, "date");
  if (date !== undefined) return { start: date, end: date };

  const days = daysParam(query);
  if (days !== undefined) return { start: dateOf(dayNumber(today)! - days + 1), end: today };

  const start = dateParam(query, "start");
  if (start === undefined) return { start: today, end: today };
  const end = dateParam(query, "end") ?? today;
  if (start > end) {
    throw badRequest(`start (${start}) is after end (${end}${present("end") ? "" : ", today"})`, "start");
  }
  const length = rangeLength({ start, end });
  if (length > MAX_RANGE_DAYS) {
    throw badRequest(`The range from start to end covers ${length} days; at most ${MAX_RANGE_DAYS} are allowed`, "start");
  }
  return { start, end };
}

import type { Clock } from "../../core/clock.ts";
import { badRequest } from "../../core/errors.ts";
import { positiveIntParam } from "../../http/pagination.ts";
import type { OperationLogRow, Page, Store } from "../../store/store.ts";

/** Spec 8: an operation-log page holds 24 rows unless `size` says otherwise. */
export const LOG_PAGE_SIZE = 24;
export const LOG_MAX_PAGE_SIZE = 100;

export interface LogQuery {
  page: number;
  size: number;
  /** Exact action, or a pattern where `*` matches any run of characters (`account.*`). */
  action?: string;
  targetId?: number;
  /** Inclusive bounds, epoch ms. */
  since?: number;
  until?: number;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2})?$/;
const HOUR_MS = 3_600_000;

/** `YYYY-MM-DD` plus `days`, or undefined when the date does not exist (2025-02-30). */
function shiftDate(date: string, days: number): string | undefined {
  const m = DATE.exec(date);
  if (!m) return undefined;
  const at = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  if (at.toISOString().slice(0, 10) !== date) return undefined;
  return new Date(at.getTime() + days * 24 * HOUR_MS).toISOString().slice(0, 10);
}

/** First millisecond of a business date in the clock's time zone (zone offsets lie within ±15 hours of UTC). */
export function startOfBusinessDate(clock: Clock, date: string): number {
  let low = Date.parse(`${date}T00:00:00Z`) - 15 * HOUR_MS;
  let high = low + 30 * HOUR_MS;
  while (high - low > 1) {
    const mid = low + Math.floor((high - low) / 2);
    if (clock.businessDate(mid) < date) low = mid;
    else high = mid;
  }
  return high;
}

/**
 * `since`/`until`: a date (`2025-03-01`, a whole business day in the server's time
 * zone) or an ISO datetime (`2025-03-01T08:00:00Z`; without an offset it is UTC).
 * Both bounds are inclusive: `until=2025-03-01` takes in that entire day.
 */
export function timeBound(clock: Clock, query: URLSearchParams, name: "since" | "until"): number | undefined {
  const raw = query.get(name)?.trim();
  if (!raw) return undefined;
  if (DATE.test(raw)) {
    const next = shiftDate(raw, 1);
    if (next === undefined) throw badRequest(`${name}: ${raw} is not a valid date`, name);
    return name === "since" ? startOfBusinessDate(clock, raw) : startOfBusinessDate(clock, next) - 1;
  }
  const at = DATETIME.test(raw) ? Date.parse(/(?:Z|[+-]\d{2}:\d{2})$/.test(raw) ? raw : `${raw}Z`) : NaN;
  if (!Number.isFinite(at)) throw badRequest(`${name} must be an ISO date (YYYY-MM-DD) or datetime (YYYY-MM-DDTHH:MM:SSZ)`, name);
  return at;
}

/** Reads the query string of `GET /dashboard/logs`. */
export function readLogQuery(clock: Clock, query: URLSearchParams): LogQuery {
  const action = query.get("action")?.trim() || undefined;
  if (action !== undefined && action.length > 100) throw badRequest("action must be at most 100 characters", "action");
  const out: LogQuery = {
    page: positiveIntParam(query, "page", 1)!,
    size: positiveIntParam(query, "size", LOG_PAGE_SIZE, LOG_MAX_PAGE_SIZE)!,
    action,
    targetId: positiveIntParam(query, "target"),
    since: timeBound(clock, query, "since"),
    until: timeBound(clock, query, "until"),
  };
  if (out.since !== undefined && out.until !== undefined && out.since > out.until) {
    throw badRequest("since must not be after until", "since");
  }
  return out;
}

export function listOperations(store: Pick<Store, "operations">, tenantId: number, query: LogQuery): Promise<Page<OperationLogRow>> {
  return store.operations.list(tenantId, { action: query.action, targetId: query.targetId, since: query.since, until: query.until }, query.page, query.size);
}

import type { Clock } from "../core/clock.ts";
import { badRequest } from "../core/errors.ts";
import { timeBound } from "../admin/oplog/query.ts";
import { pageParams, positiveIntParam } from "../http/pagination.ts";
import type { RequestLogFilter } from "../store/store.ts";

/** The filters of `GET /x-requests` as read from its query, before the caller's scope narrows them. */
export interface RequestLogQuery {
  page: number;
  size: number;
  /** An account ID, name or email; resolved within the caller's scope. */
  account?: string;
  filter: Omit<RequestLogFilter, "tenantId" | "accountId" | "under">;
}

const STATUS_CODE = /^[1-5]\d\d$/;
const STATUS_CLASS = /^([1-5])xx$/i;
const REQUEST_ID = /^[\w.-]{1,100}$/;

/** `429` → 429..429, `5xx` → 500..599. */
function statusBounds(raw: string): { statusFrom: number; statusTo: number } {
  if (STATUS_CODE.test(raw)) return { statusFrom: Number(raw), statusTo: Number(raw) };
  const cls = STATUS_CLASS.exec(raw);
  if (cls) return { statusFrom: Number(cls[1]) * 100, statusTo: Number(cls[1]) * 100 + 99 };
  throw badRequest("status must be an HTTP status (429) or a class (5xx)", "status");
}

/** Reads the query string; every malformed parameter is a 400 naming it. */
export function readRequestLogQuery(clock: Clock, query: URLSearchParams): RequestLogQuery {
  const { page, size } = pageParams(query);
  const filter: RequestLogQuery["filter"] = {};
  const model = query.get("model")?.trim();
  if (model) {
    if (model.length > 200) throw badRequest("model must be at most 200 characters", "model");
    filter.model = model;
  }
  const status = query.get("status")?.trim();
  if (status) Object.assign(filter, statusBounds(status));
  // Not `key`: a `?key=` is refused before any route as an API key in the URL (http/auth.ts).
  filter.keyId = positiveIntParam(query, "key_id");
  filter.level = positiveIntParam(query, "level");
  filter.since = timeBound(clock, query, "since");
  filter.until = timeBound(clock, query, "until");
  if (filter.since !== undefined && filter.until !== undefined && filter.since > filter.until) throw badRequest("since must not be after until", "since");
  const requestId = query.get("request_id")?.trim();
  if (requestId) {
    if (!REQUEST_ID.test(requestId)) throw badRequest("request_id must be a request id such as req_…", "request_id");
    filter.requestId = requestId;
  }
  const account = query.get("account")?.trim() || undefined;
  return { page, size, account, filter };
}

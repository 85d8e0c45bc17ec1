/**
 * The Requests page's filters (`GET /x-requests`, docs/api.md "Request log"): read from
 * and written to the page's query string, so a link (a bill's day) opens the page
 * filtered and a reload keeps them. Filters and dates only: never a secret.
 */

export interface RequestFilters {
  /** An account ID, name or email (owners and managers). */
  account: string;
  model: string;
  /** A status (`429`) or a class (`5xx`). */
  status: string;
  /** Owner only: a provider key ID (sent as `key_id`: `?key=` is refused as a key in the URL). */
  keyId: string;
  /** Owner only. */
  level: string;
  /** `YYYY-MM-DD` (a whole business day in the server's zone). */
  since: string;
  until: string;
  requestId: string;
}

export const NO_FILTERS: RequestFilters = { account: "", model: "", status: "", keyId: "", level: "", since: "", until: "", requestId: "" };

/** The page's query-string names of the filters (the API's names). */
const NAMES: Record<keyof RequestFilters, string> = {
  account: "account",
  model: "model",
  status: "status",
  keyId: "key_id",
  level: "level",
  since: "since",
  until: "until",
  requestId: "request_id",
};

export function filtersFromSearch(search: string): RequestFilters {
  const params = new URLSearchParams(search);
  const filters = { ...NO_FILTERS };
  for (const [member, name] of Object.entries(NAMES) as Array<[keyof RequestFilters, string]>) filters[member] = params.get(name)?.trim() ?? "";
  return filters;
}

/** The filters that have a value, under the API's names (for the query string of the page and of the API). */
export function filterParams(filters: RequestFilters, owner: boolean): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [member, name] of Object.entries(NAMES) as Array<[keyof RequestFilters, string]>) {
    if (!owner && (member === "keyId" || member === "level")) continue;
    const value = filters[member].trim();
    if (value) params[name] = value;
  }
  return params;
}

/** What is wrong with each filter, before anything is sent (the server says the same with a 400). */
export function filterErrors(filters: RequestFilters): Partial<Record<keyof RequestFilters, string>> {
  const errors: Partial<Record<keyof RequestFilters, string>> = {};
  if (filters.status && !/^([1-5]\d\d|[1-5]xx)$/i.test(filters.status.trim())) errors.status = "A status such as 429, or a class such as 5xx";
  if (filters.keyId && !/^[1-9]\d*$/.test(filters.keyId.trim())) errors.keyId = "A key ID (a positive integer)";
  if (filters.level && !/^[1-9]\d*$/.test(filters.level.trim())) errors.level = "A Level (a positive integer)";
  if (filters.requestId && !/^[\w.-]{1,100}$/.test(filters.requestId.trim())) errors.requestId = "A request ID such as req_…";
  if (filters.since && filters.until && filters.since > filters.until) errors.until = "Until is before since";
  return errors;
}

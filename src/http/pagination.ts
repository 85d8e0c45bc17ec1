import { badRequest } from "../core/errors.ts";

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** A positive integer query parameter; absent or empty means `fallback`. */
export function positiveIntParam(query: URLSearchParams, name: string, fallback?: number, max?: number): number | undefined {
  const raw = query.get(name);
  if (raw === null || raw === "") return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < 1 || (max !== undefined && value > max)) {
    throw badRequest(`${name} must be an integer from 1${max === undefined ? "" : ` to ${max}`}`, name);
  }
  return value;
}

/** `page` (1-based, default 1) and `size` (default 20, at most 100) of a list request. */
export function pageParams(query: URLSearchParams): { page: number; size: number } {
  return {
    page: positiveIntParam(query, "page", 1)!,
    size: positiveIntParam(query, "size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)!,
  };
}

/** The four pagination headers of list responses (spec 4.1). */
export function paginationHeaders(total: number, page: number, size: number): Record<string, string> {
  return {
    "x-total-count": String(total),
    "x-total-pages": String(Math.ceil(total / size)),
    "x-page": String(page),
    "x-per-page": String(size),
  };
}

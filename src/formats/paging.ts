import { badRequest } from "../core/errors.ts";

/** A page size from a query parameter: the fallback when absent, 400 outside 1..max. */
export function pageSize(value: string | null, fallback: number, max: number, param: string): number {
  if (value === null || value === "") return fallback;
  const size = Number(value);
  if (!Number.isInteger(size) || size < 1 || size > max) throw badRequest(`${param} must be an integer from 1 to ${max}`, param);
  return size;
}

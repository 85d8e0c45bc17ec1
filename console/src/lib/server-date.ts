import { api } from "./api.ts";
import { isoDay } from "./format.ts";
import type { BillInfo } from "./types.ts";

/**
 * The router's business date (`YYYY-MM-DD` in its configured time zone): a bill
 * without date parameters covers exactly today, so its one day is the server's date.
 * Falls back to the UTC date of the answer's Date header.
 */
export async function serverToday(): Promise<string> {
  const { data, headers } = await api.get<BillInfo>("/dashboard/bill");
  const day = data.daily_costs?.[0]?.date;
  if (day) return day;
  const date = headers.get("date");
  return isoDay(date ? new Date(date) : new Date());
}

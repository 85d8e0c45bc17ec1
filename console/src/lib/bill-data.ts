import type { Series } from "../ui/chart.tsx";
import { csvCell } from "./format.ts";
import type { BillInfo } from "./types.ts";

/** Models of a bill, most expensive first (the order of usage_summary). */
export const billModels = (bill: BillInfo) => Object.keys(bill.usage_summary);

/** One series per model: its value on each day (0 when unused). */
export function perModelSeries(bill: BillInfo, pick: (item: BillInfo["daily_costs"][number]["line_items"][number]) => number): Series[] {
  return billModels(bill).map((model) => ({
    label: model,
    values: bill.daily_costs.map((day) => {
      const item = day.line_items.find((i) => i.name === model);
      return item ? pick(item) : 0;
    }),
  }));
}

export interface LineRow {
  date: string;
  model: string;
  requests: number;
  prompt: number;
  completion: number;
  reasoning: number;
  cost: number;
}

export function lineRows(bill: BillInfo): LineRow[] {
  return bill.daily_costs.flatMap((day) =>
    day.line_items.map((item) => ({
      date: day.date,
      model: item.name,
      requests: item.usage.requests,
      prompt: item.usage.prompt,
      completion: item.usage.completion,
      reasoning: item.usage.reasoning,
      cost: item.cost,
    })),
  );
}

export function lineRowsCsv(rows: LineRow[]): string {
  const header = ["date", "model", "requests", "prompt_tokens", "completion_tokens", "reasoning_tokens", "credits"];
  const lines = rows.map((r) => [r.date, r.model, r.requests, r.prompt, r.completion, r.reasoning, r.cost].map(csvCell).join(","));
  return [header.join(","), ...lines].join("\r\n") + "\r\n";
}

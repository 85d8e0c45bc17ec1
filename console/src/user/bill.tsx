import { useEffect, useState } from "preact/hooks";
import { api, query } from "../lib/api.ts";
import { billModels, lineRows, lineRowsCsv, perModelSeries } from "../lib/bill-data.ts";
import { download, formatCredit, formatCredits, formatInt } from "../lib/format.ts";
import { requestsLink } from "../lib/pages.ts";
import { serverToday } from "../lib/server-date.ts";
import type { BillInfo } from "../lib/types.ts";
import { TimeChart } from "../ui/chart.tsx";
import { DateRange, lastDays, type Range } from "../ui/date-range.tsx";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { DataTable } from "../ui/table.tsx";
import { useLoad } from "../ui/use-load.ts";
import { Stat } from "./live.tsx";

/** Bill history: daily cost and tokens per model, the line items and a CSV of them. */
export function BillPanel() {
  const [today, setToday] = useState<string | null>(null);
  const [range, setRange] = useState<Range | null>(null);
  const [dateError, setDateError] = useState<unknown>(null);
  useEffect(() => {
    serverToday()
      .then((day) => {
        setToday(day);
        setRange(lastDays(day, 7));
      })
      .catch(setDateError);
  }, []);
  const bill = useLoad(
    async () => (range && range.start <= range.end ? (await api.get<BillInfo>(`/dashboard/bill${query({ start: range.start, end: range.end })}`)).data : undefined),
    [range?.start, range?.end],
  );
  if (dateError) return <ErrorNote error={dateError} />;
  if (!today || !range) return <Loading />;
  const data = bill.data;
  const rows = data ? lineRows(data) : [];
  return (
    <div>
      <DateRange value={range} today={today} onChange={setRange} />
      <ErrorNote error={bill.error} />
      {bill.loading && !data && <Loading />}
      {data && (
        <>
          <div class="stats">
            <Stat label="Requests" value={formatInt(data.total_requests)} />
            <Stat label="Input tokens" value={formatInt(data.total_prompt)} />
            <Stat label="Output tokens" value={formatInt(data.total_completion)} />
            <Stat label="Credits used" value={formatCredits(data.total_credit_used)} />
          </div>
          <div class="charts">
            <TimeChart
              testId="bill-cost-chart"
              title="Daily cost by model (credits)"
              days={data.daily_costs.map((d) => d.date)}
              series={billModels(data).length ? perModelSeries(data, (i) => i.cost) : []}
              format={(v) => formatCredit(v)}
            />
            <TimeChart
              testId="bill-tokens-chart"
              title="Daily tokens by model"
              days={data.daily_costs.map((d) => d.date)}
              series={billModels(data).length ? perModelSeries(data, (i) => i.usage.prompt + i.usage.completion) : []}
              format={(v) => formatInt(v)}
            />
          </div>
          <div class="toolbar">
            <h3>Line items</h3>
            <button type="button" disabled={rows.length === 0} onClick={() => download(`bill-${range.start}-${range.end}.csv`, lineRowsCsv(rows))}>
              Download CSV
            </button>
          </div>
          <DataTable
            caption="Line items per day and model"
            rows={rows}
            rowKey={(r) => `${r.date}/${r.model}`}
            empty="No usage in this range."
            columns={[
              // A day's line links to that day's calls of that model on the Requests page.
              {
                label: "Date",
                render: (r) => (
                  <a href={requestsLink({ since: r.date, until: r.date, model: r.model })} aria-label={`Calls of ${r.model} on ${r.date}`}>
                    {r.date}
                  </a>
                ),
                sortValue: (r) => r.date,
              },
              { label: "Model", render: (r) => <span class="mono">{r.model}</span> },
              { label: "Requests", numeric: true, render: (r) => formatInt(r.requests) },
              { label: "Input tokens", numeric: true, render: (r) => formatInt(r.prompt) },
              { label: "Output tokens", numeric: true, render: (r) => formatInt(r.completion) },
              { label: "Credits", numeric: true, render: (r) => formatCredit(r.cost) },
            ]}
          />
        </>
      )}
    </div>
  );
}

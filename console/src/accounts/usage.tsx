import { useEffect, useState } from "preact/hooks";
import { api, query } from "../lib/api.ts";
import { formatCredit, formatCredits, formatInt } from "../lib/format.ts";
import { requestsLink } from "../lib/pages.ts";
import { serverToday } from "../lib/server-date.ts";
import type { BillInfo } from "../lib/types.ts";
import { BarChart, TimeChart } from "../ui/chart.tsx";
import { DateRange, lastDays, type Range } from "../ui/date-range.tsx";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { TextField } from "../ui/field.tsx";
import { DataTable } from "../ui/table.tsx";
import { useLoad } from "../ui/use-load.ts";

/** Descendants' usage (/x-bill): ranking table and charts by account, by model and per day. */
export function UsagePanel() {
  const [today, setToday] = useState<string | null>(null);
  const [range, setRange] = useState<Range | null>(null);
  const [user, setUser] = useState("");
  const [applied, setApplied] = useState("");
  const [dateError, setDateError] = useState<unknown>(null);
  useEffect(() => {
    serverToday()
      .then((day) => (setToday(day), setRange(lastDays(day, 7))))
      .catch(setDateError);
  }, []);
  const bill = useLoad(
    async () => (range && range.start <= range.end ? (await api.get<BillInfo>(`/x-bill${query({ start: range.start, end: range.end, user: applied })}`)).data : undefined),
    [range?.start, range?.end, applied],
  );
  if (dateError) return <ErrorNote error={dateError} />;
  if (!today || !range) return <Loading />;
  const data = bill.data;
  const ranking = data?.usage_users ?? [];
  const models = data ? Object.entries(data.usage_summary) : [];
  return (
    <div>
      <DateRange value={range} today={today} onChange={setRange} />
      <form class="toolbar" onSubmit={(e) => (e.preventDefault(), setApplied(user.trim()))}>
        <TextField label="Only this account and its subtree" value={user} onInput={setUser} placeholder="ID, name or email (empty: all)" />
        <button type="submit">Apply</button>
      </form>
      <ErrorNote error={bill.error} />
      {bill.loading && !data && <Loading />}
      {data && (
        <>
          <p>
            {formatInt(data.total_requests)} requests, {formatInt(data.total_prompt + data.total_completion)} tokens, {formatCredits(data.total_credit_used)}
            {applied ? ` for ${applied} and below` : " for all your descendants"}.{" "}
            <a href={requestsLink({ since: range.start, until: range.end, account: applied })}>See these calls</a>
          </p>
          <div class="charts">
            <BarChart testId="usage-by-account" title="Credits by account" labels={ranking.map((u) => u.alias || u.name)} values={ranking.map((u) => u.total_credit_used)} format={formatCredit} />
            <BarChart testId="usage-by-model" title="Credits by model" labels={models.map(([m]) => m)} values={models.map(([, u]) => u.cost)} format={formatCredit} />
            <TimeChart
              testId="usage-per-day"
              title="Credits per day"
              days={data.daily_costs.map((d) => d.date)}
              series={data.total_requests ? [{ label: "Credits", values: data.daily_costs.map((d) => d.total_credit_used) }] : []}
              format={formatCredit}
            />
          </div>
          <h3>Ranking</h3>
          <DataTable
            caption="Usage by account"
            rows={ranking}
            rowKey={(u) => u.id}
            empty="No descendant made a request in this range."
            columns={[
              { label: "Account", render: (u) => `${u.alias || u.name} (ID ${u.id})` },
              { label: "Email", render: (u) => u.email },
              { label: "Requests", numeric: true, render: (u) => `${formatInt(u.total_requests)} (${u.usage_analysis.request_percentage}%)` },
              { label: "Tokens", numeric: true, render: (u) => formatInt(u.total_prompt + u.total_completion) },
              { label: "Credits", numeric: true, render: (u) => `${formatCredit(u.total_credit_used)} (${u.usage_analysis.cost_percentage}%)` },
              { label: "Top model (cost)", render: (u) => u.top_cost_model ?? "—" },
              { label: "Top model (requests)", render: (u) => u.top_request_model ?? "—" },
            ]}
          />
        </>
      )}
    </div>
  );
}

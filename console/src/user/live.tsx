import { useEffect, useState } from "preact/hooks";
import { api } from "../lib/api.ts";
import { formatCredit, formatCredits, formatInt } from "../lib/format.ts";
import type { LiveUsage, UsageTotals } from "../lib/types.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { CheckField } from "../ui/field.tsx";
import { DataTable } from "../ui/table.tsx";

const POLL_MS = 5000;

function Totals({ title, totals, id }: { title: string; totals: UsageTotals; id: string }) {
  const models = Object.entries(totals.ModelUsage ?? {}).map(([model, u]) => ({ model, ...u }));
  return (
    <section class="card" aria-labelledby={id} data-testid={id}>
      <h3 id={id}>{title}</h3>
      <div class="stats">
        <Stat label="Requests" value={formatInt(totals.Requests)} />
        <Stat label="Tokens" value={formatInt(totals.Prompt + totals.Completion)} hint={`${formatInt(totals.Prompt)} in, ${formatInt(totals.Completion)} out`} />
        <Stat label="Reasoning tokens" value={formatInt(totals.Reasoning)} />
        <Stat label="Credits used" value={formatCredits(totals.CreditUsed)} />
      </div>
      <DataTable
        caption={`${title} per model`}
        rows={models}
        rowKey={(r) => r.model}
        empty="No calls yet."
        columns={[
          { label: "Model", render: (r) => <span class="mono">{r.model}</span> },
          { label: "Requests", numeric: true, render: (r) => formatInt(r.Requests) },
          { label: "Input tokens", numeric: true, render: (r) => formatInt(r.Prompt) },
          { label: "Output tokens", numeric: true, render: (r) => formatInt(r.Completion) },
          { label: "Credits", numeric: true, render: (r) => formatCredit(r.CreditUsed) },
        ]}
      />
    </section>
  );
}

export function Stat(props: { label: string; value: string; hint?: string }) {
  return (
    <div class="stat">
      <div class="label">{props.label}</div>
      <div class="value">{props.value}</div>
      {props.hint && <div class="hint">{props.hint}</div>}
    </div>
  );
}

/**
 * Today and this month, polled every 5 s while the tab is open, unless the user pauses
 * it: numbers that change under the reader (or under a screen reader's cursor) must be
 * stoppable (WCAG 2.2.2).
 */
export function LivePanel() {
  const [live, setLive] = useState<LiveUsage | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [updated, setUpdated] = useState<Date | null>(null);
  const [auto, setAuto] = useState(true);
  useEffect(() => {
    if (!auto) return;
    let active = true;
    const tick = async () => {
      try {
        const { data } = await api.get<LiveUsage>("/dashboard/live");
        if (!active) return;
        setLive(data);
        setUpdated(new Date());
        setError(null);
      } catch (e) {
        if (active) setError(e);
      }
    };
    void tick();
    const timer = setInterval(tick, POLL_MS);
    return () => {
      active = false;
      clearInterval(timer);
    };
  }, [auto]);
  if (!live) return error ? <ErrorNote error={error} /> : <Loading />;
  return (
    <div>
      <p class="hint">
        Balance <strong>{formatCredits(live.account.balance)}</strong>
        {updated && ` · last update ${updated.toLocaleTimeString()}`}
      </p>
      <CheckField label="Refresh every 5 s" checked={auto} onChange={setAuto} />
      <ErrorNote error={error} />
      <Totals title="Today" totals={live.daily_usage} id="live-today" />
      <Totals title="This month" totals={live.monthly_usage} id="live-month" />
    </div>
  );
}

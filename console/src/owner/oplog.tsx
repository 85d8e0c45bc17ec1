import { useState } from "preact/hooks";
import { api, query } from "../lib/api.ts";
import { formatTime } from "../lib/format.ts";
import type { LogRow } from "../lib/types.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { TextField } from "../ui/field.tsx";
import { DataTable, Pager } from "../ui/table.tsx";
import { useLoad } from "../ui/use-load.ts";

const SIZE = 24;

interface LogPage {
  logs: LogRow[];
  total: number;
  page: number;
  has_more: boolean;
}

/** The operation log, newest first, 24 rows a page, filtered by action, target account and dates. */
export function OplogPanel() {
  const [action, setAction] = useState("");
  const [target, setTarget] = useState("");
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const [page, setPage] = useState(1);
  const targetError = target && !/^\d+$/.test(target) ? "An account ID" : undefined;
  const rangeError = since && until && since > until ? "Since is after until" : undefined;
  const filters = { action: action.trim(), target: targetError ? "" : target, since, until: rangeError ? "" : until };
  const logs = useLoad(
    async () => (await api.get<LogPage>(`/dashboard/logs${query({ ...filters, page, size: SIZE })}`)).data,
    [filters.action, filters.target, filters.since, filters.until, page],
  );
  const reset = (set: (v: string) => void) => (v: string) => (set(v), setPage(1));
  return (
    <div>
      <div class="toolbar" role="search" aria-label="Filter the operation log">
        <TextField label="Action" value={action} onInput={reset(setAction)} placeholder="account.* or key.delete" />
        <TextField label="Target account ID" inputMode="numeric" value={target} onInput={reset(setTarget)} error={targetError} />
        <TextField label="Since" type="date" value={since} onInput={reset(setSince)} />
        <TextField label="Until" type="date" value={until} onInput={reset(setUntil)} error={rangeError} />
      </div>
      <ErrorNote error={logs.error} />
      {logs.loading && !logs.data && <Loading />}
      {logs.data && (
        <>
          <DataTable
            caption="Operation log"
            rows={logs.data.logs}
            rowKey={(r) => r.id}
            empty="No operations match these filters."
            columns={[
              { label: "Time", render: (r) => formatTime(r.time) },
              { label: "Action", render: (r) => <span class="mono">{r.action}</span> },
              { label: "By", numeric: true, render: (r) => r.operator_id ?? "CLI" },
              { label: "Target", numeric: true, render: (r) => r.target_id ?? "—" },
              { label: "Details", render: (r) => <code class="mono">{JSON.stringify(r.details)}</code> },
              { label: "IP", render: (r) => r.ip ?? "—" },
            ]}
          />
          <Pager label="Operation log" page={page} pages={Math.ceil(logs.data.total / SIZE)} total={logs.data.total} hasMore={logs.data.has_more} onPage={setPage} />
        </>
      )}
    </div>
  );
}

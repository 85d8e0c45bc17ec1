import { useEffect, useId, useRef } from "preact/hooks";
import { api } from "../lib/api.ts";
import { formatCredit, formatInt, formatMs, formatTime } from "../lib/format.ts";
import type { RequestAttempt, RequestRecord } from "../lib/types.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { DataTable, type Column } from "../ui/table.tsx";
import { useLoad } from "../ui/use-load.ts";
import { accountName, StatusBadge } from "./cells.tsx";

/** The attempts in order; the key columns only where the server gave keys (owners: managers see none). */
function Attempts({ attempts }: { attempts: RequestAttempt[] }) {
  const withKeys = attempts.some((a) => a.key_id !== undefined);
  const rows = attempts.map((attempt, index) => ({ ...attempt, n: index + 1 }));
  const columns: Column<(typeof rows)[number]>[] = [
    { label: "#", numeric: true, render: (a) => a.n },
    { label: "Answered", render: (a) => (a.answered ? <span class="badge on">Answered</span> : "No") },
    ...(withKeys ? [{ label: "Key", render: (a: (typeof rows)[number]) => (a.key_id === undefined ? "—" : `${a.key_name || "(no name)"} #${a.key_id}`) }] : []),
    { label: "Level", numeric: true, render: (a) => a.level },
    { label: "Status", render: (a) => (a.status === null ? "none" : a.status) },
    { label: "Translated to", detail: true, render: (a) => a.translated_to ?? "— (the key's own format)" },
    // On a phone these open under the row's More.
    { label: "Error", detail: true, render: (a) => a.error ?? "—" },
    { label: "Message", detail: true, render: (a) => (a.message ? <span class="message">{a.message}</span> : "—") },
    { label: "Duration", numeric: true, detail: true, render: (a) => formatMs(a.duration_ms) },
  ];
  return <DataTable caption="Upstream attempts" rows={rows} rowKey={(a) => a.n} empty="No upstream attempt: the router refused the call before routing it." columns={columns} />;
}

function Detail({ record }: { record: RequestRecord }) {
  const t = record.tokens;
  return (
    <>
      <dl class="info">
        <dt>Request ID</dt>
        <dd class="mono">{record.request_id}</dd>
        <dt>Time</dt>
        <dd>{formatTime(record.time)}</dd>
        <dt>Account</dt>
        <dd>{accountName(record)}</dd>
        <dt>Endpoint</dt>
        <dd>
          <span class="mono">{record.endpoint}</span> ({record.family}){record.stream ? ", streamed" : ""}
        </dd>
        <dt>Requested model</dt>
        <dd class="mono">{record.requested_model ?? "—"}</dd>
        <dt>Effective model</dt>
        <dd class="mono">{record.effective_model ?? "—"}</dd>
        <dt>Status</dt>
        <dd>
          <StatusBadge status={record.status} />
        </dd>
        <dt>Time to first byte</dt>
        <dd>{formatMs(record.ttfb_ms)}</dd>
        <dt>Duration</dt>
        <dd>{formatMs(record.duration_ms)}</dd>
        <dt>Tokens</dt>
        <dd>
          {formatInt(t.prompt)} in, {formatInt(t.completion)} out, {formatInt(t.cache_read)} cache read, {formatInt(t.cache_write)} cache write, {formatInt(t.reasoning)} reasoning
        </dd>
        <dt>Cost</dt>
        <dd>
          {formatCredit(record.cost)} credits{record.source === "estimated" ? " (estimated: the upstream reported no counts)" : ""}
        </dd>
        <dt>Client IP</dt>
        <dd>{record.client_ip ?? "—"}</dd>
        <dt>User agent</dt>
        <dd>{record.user_agent ?? "—"}</dd>
      </dl>
      <h4>Upstream attempts</h4>
      <Attempts attempts={record.attempts} />
    </>
  );
}

/**
 * One call in full, in a panel at the side (a modal dialog: focus moves into it,
 * Escape or Close shuts it and focus goes back to the row's button).
 */
export function RequestDrawer(props: { requestId: string; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const record = useLoad(async () => (await api.get<RequestRecord>(`/x-requests/${encodeURIComponent(props.requestId)}`)).data, [props.requestId]);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
  }, []);
  return (
    <dialog ref={ref} class="drawer" aria-labelledby={titleId} onCancel={(e) => (e.preventDefault(), props.onClose())}>
      <div class="drawer-head">
        <h3 id={titleId}>Call {props.requestId}</h3>
        <button type="button" onClick={props.onClose}>
          Close
        </button>
      </div>
      <ErrorNote error={record.error} />
      {record.loading && !record.data && <Loading />}
      {record.data && <Detail record={record.data} />}
    </dialog>
  );
}

import { useState } from "preact/hooks";
import { formatCredit, formatInt, formatMs, formatTime } from "../lib/format.ts";
import type { RequestRecord } from "../lib/types.ts";
import { useConsole } from "../shell/context.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { CheckField } from "../ui/field.tsx";
import { ResultStatus } from "../ui/result-status.tsx";
import { DataTable, Pager } from "../ui/table.tsx";
import { accountName, ModelCell, StatusBadge } from "./cells.tsx";
import { RequestDrawer } from "./drawer.tsx";
import { FilterForm } from "./filter-form.tsx";
import { filterParams, filtersFromSearch, type RequestFilters } from "./filters.ts";
import { TAIL_MS, useRequestLog } from "./use-request-log.ts";

/** Writes the applied filters into the address (a reload or a shared link keeps them; no secret is in them). */
function showInAddress(params: Record<string, string>): void {
  const search = new URLSearchParams(params).toString();
  history.replaceState(null, "", `${location.pathname}${search ? `?${search}` : ""}${location.hash}`);
}

/**
 * Model calls, newest first, as the server scopes them (an owner its tenant, a manager
 * its subtree, any other account its own): filters, pages, a live tail, and a drawer
 * with one call's detail and attempts.
 */
export function RequestsPanel() {
  const { status } = useConsole();
  const [filters, setFilters] = useState<RequestFilters>(() => filtersFromSearch(location.search));
  const [page, setPage] = useState(1);
  const [live, setLive] = useState(false);
  const [opened, setOpened] = useState<string | null>(null);
  const params = filterParams(filters, status.isOwner);
  const log = useRequestLog(params, page, live);
  const apply = (next: RequestFilters) => {
    setFilters(next);
    setPage(1);
    showInAddress(filterParams(next, status.isOwner));
  };
  const close = () => {
    const id = opened;
    setOpened(null);
    // Focus goes back to the button that opened the drawer.
    requestAnimationFrame(() => document.querySelector<HTMLButtonElement>(`button[data-request="${CSS.escape(id ?? "")}"]`)?.focus());
  };
  return (
    <div>
      <FilterForm value={filters} owner={status.isOwner} others={status.isOwner || status.manage} onApply={apply} />
      <div class="toolbar">
        <CheckField label={`Live tail (new calls every ${TAIL_MS / 1000} s)`} checked={live} onChange={setLive} />
        <button type="button" onClick={log.reload}>
          Refresh
        </button>
      </div>
      {log.waiting > 0 && (
        <p class="note">
          {log.waiting} new {log.waiting === 1 ? "call" : "calls"} since this page was opened.{" "}
          <button type="button" onClick={() => setPage(1)}>
            Show the newest
          </button>
        </p>
      )}
      {/* Said once when calls start waiting; the count above is not live, since on a busy
          router it changes with every poll and would be read out every few seconds. */}
      <p class="sr-only" role="status">
        {log.waiting > 0 ? "There are new calls since this page was opened: Show the newest lists them." : ""}
      </p>
      <ErrorNote error={log.error} />
      <ResultStatus query={JSON.stringify(params)} loading={log.loading} text={`${log.total} ${log.total === 1 ? "call matches" : "calls match"} these filters.`} />
      {log.loading && !log.rows && <Loading />}
      {log.rows && (
        <>
          <DataTable<RequestRecord>
            caption="Model calls"
            rows={log.rows}
            rowKey={(r) => r.request_id}
            empty="No calls match these filters."
            columns={[
              // The time opens the call's detail (a button, so the row needs no column of its own for it).
              {
                label: "Time",
                render: (r) => (
                  <button type="button" class="link" data-request={r.request_id} aria-label={`Details of call ${r.request_id}`} onClick={() => setOpened(r.request_id)}>
                    {formatTime(r.time)}
                  </button>
                ),
                sortValue: (r) => r.time,
              },
              { label: "Account", detail: true, render: accountName },
              { label: "Model", render: (r) => <ModelCell record={r} /> },
              { label: "Status", numeric: true, render: (r) => <StatusBadge status={r.status} />, sortValue: (r) => r.status },
              {
                label: "Tokens",
                numeric: true,
                detail: true,
                render: (r) => <span title={`${formatInt(r.tokens.prompt)} in, ${formatInt(r.tokens.completion)} out`}>{formatInt(r.tokens.prompt + r.tokens.completion)}</span>,
                sortValue: (r) => r.tokens.prompt + r.tokens.completion,
              },
              { label: "Cost", numeric: true, render: (r) => `${formatCredit(r.cost)}${r.source === "estimated" ? " (est.)" : ""}`, sortValue: (r) => r.cost },
              { label: "Duration", numeric: true, detail: true, render: (r) => formatMs(r.duration_ms), sortValue: (r) => r.duration_ms },
              { label: "TTFB", numeric: true, detail: true, render: (r) => formatMs(r.ttfb_ms), sortValue: (r) => r.ttfb_ms },
            ]}
          />
          <Pager label="Model calls" page={page} pages={log.pages} total={log.total} onPage={setPage} />
        </>
      )}
      {opened && <RequestDrawer requestId={opened} onClose={close} />}
    </div>
  );
}

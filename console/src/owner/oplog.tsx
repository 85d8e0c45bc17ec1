import { useState } from "preact/hooks";
import { api, query } from "../lib/api.ts";
import { formatTime } from "../lib/format.ts";
import type { LogPage, LogRow, ProviderKeyRow } from "../lib/types.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { TextField } from "../ui/field.tsx";
import { ResultStatus } from "../ui/result-status.tsx";
import { DataTable, Pager } from "../ui/table.tsx";
import { useLoad } from "../ui/use-load.ts";
import { useConsole } from "../shell/context.ts";

const SIZE = 24;

/** A log row's details as words: `email a@x.com · credit 5 · fields Name, RPM`. */
export function readableDetails(details: unknown): string {
  if (details === null || details === undefined) return "—";
  if (typeof details !== "object") return String(details);
  const parts: string[] = [];
  for (const [name, value] of Object.entries(details as Record<string, unknown>)) {
    if (value === null || value === undefined) continue;
    const shown = Array.isArray(value) ? value.join(", ") : typeof value === "object" ? readableDetails(value) : String(value);
    parts.push(`${name.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase()} ${shown}`);
  }
  return parts.length > 0 ? parts.join(" · ") : "—";
}

/** Account names by ID, looked up once per page of the log (the log stores IDs); `self` is the caller. */
async function namesOf(ids: number[], self: { id: number; name: string; email: string }): Promise<Map<number, string>> {
  const names = new Map<number, string>([[self.id, `${self.name} (${self.email})`]]);
  await Promise.all(
    [...new Set(ids)].filter((id) => id !== self.id).map(async (id) => {
      try {
        const { data } = await api.get<{ Name: string; Email: string }>(`/x-dna/${id}`);
        names.set(id, `${data.Name} (${data.Email})`);
      } catch {
        // Deleted or outside the caller's subtree: the ID alone.
      }
    }),
  );
  return names;
}

/** The provider key a `key.*` row is about (its details' `key`), if any. */
const keyIdOf = (row: LogRow): number | undefined => {
  const key = (row.details as { key?: unknown } | null)?.key;
  return row.action.startsWith("key.") && typeof key === "number" ? key : undefined;
};

/**
 * Key names by ID, from the keys list in its overview form (no secret travels), read
 * only when the page of the log has key rows; a deleted key keeps its ID alone.
 */
async function keyNamesOf(ids: number[]): Promise<Map<number, string>> {
  const names = new Map<number, string>();
  if (ids.length === 0) return names;
  const wanted = new Set(ids);
  try {
    for (let page = 1, pages = 1; page <= pages && page <= 10 && names.size < wanted.size; page++) {
      const { data, headers } = await api.get<ProviderKeyRow[]>(`/x-keys${query({ fields: "overview", page, size: 100 })}`);
      pages = Number(headers.get("x-total-pages") ?? 1);
      for (const key of data) if (wanted.has(key.ID)) names.set(key.ID, key.Name || "(no name)");
    }
  } catch {
    // The IDs alone.
  }
  return names;
}

/** Actions the router takes on its own (automatic sleep and wake, Level switch-over): no operator. */
const SYSTEM_ACTION = /^(key\.auto_|level\.switch_)/;

/** The operation log, newest first, 24 rows a page, filtered by action, target account and dates; names where IDs are stored. */
export function OplogPanel() {
  const { status } = useConsole();
  const [action, setAction] = useState("");
  const [target, setTarget] = useState("");
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const [page, setPage] = useState(1);
  const targetError = target && !/^\d+$/.test(target) ? "An account ID" : undefined;
  const rangeError = since && until && since > until ? "Since is after until" : undefined;
  const filters = { action: action.trim(), target: targetError ? "" : target, since, until: rangeError ? "" : until };
  const logs = useLoad(
    async () => {
      const { data } = await api.get<LogPage>(`/dashboard/logs${query({ ...filters, page, size: SIZE })}`);
      const ids = data.logs.flatMap((r) => [r.operator_id, r.target_id]).filter((id): id is number => typeof id === "number");
      const [names, keyNames] = await Promise.all([namesOf(ids, status), keyNamesOf(data.logs.map(keyIdOf).filter((id): id is number => id !== undefined))]);
      return { ...data, names, keyNames };
    },
    [filters.action, filters.target, filters.since, filters.until, page],
  );
  const reset = (set: (v: string) => void) => (v: string) => (set(v), setPage(1));
  const named = (id: number) => {
    const name = logs.data?.names.get(id);
    return name ? `${name} #${id}` : `#${id}`;
  };
  /** What a row is about: an account, a provider key (by name), a Level, or nothing. */
  const about = (r: LogRow) => {
    if (r.target_id !== null) return named(r.target_id);
    const key = keyIdOf(r);
    if (key !== undefined) {
      const name = logs.data?.keyNames.get(key);
      return name ? `Key ${name} #${key}` : `Key #${key}`;
    }
    const level = (r.details as { level?: unknown } | null)?.level;
    return r.action.startsWith("level.") && typeof level === "number" ? `Level ${level}` : "—";
  };
  return (
    <div>
      <div class="toolbar" role="search" aria-label="Filter the operation log">
        <TextField label="Action" value={action} onInput={reset(setAction)} placeholder="account.* or key.delete" />
        <TextField label="Target account ID" inputMode="numeric" value={target} onInput={reset(setTarget)} error={targetError} />
        <TextField label="Since" type="date" value={since} onInput={reset(setSince)} />
        <TextField label="Until" type="date" value={until} onInput={reset(setUntil)} error={rangeError} />
      </div>
      <ErrorNote error={logs.error} />
      <ResultStatus
        query={JSON.stringify([action, target, since, until])}
        loading={logs.loading}
        text={logs.data ? `${logs.data.total} ${logs.data.total === 1 ? "entry matches" : "entries match"}.` : ""}
      />
      {logs.loading && !logs.data && <Loading />}
      {logs.data && (
        <>
          {/* The log stores IDs; names are shown where the account can still be read. */}
          <DataTable
            caption="Operation log"
            rows={logs.data.logs}
            rowKey={(r) => r.id}
            empty="No operations match these filters."
            columns={[
              { label: "Time", render: (r) => formatTime(r.time) },
              { label: "Action", render: (r) => <span class="mono">{r.action}</span> },
              { label: "By", render: (r) => (r.operator_id !== null ? named(r.operator_id) : SYSTEM_ACTION.test(r.action) ? "System" : "CLI") },
              { label: "Target", detail: true, render: about },
              { label: "Details", detail: true, render: (r) => readableDetails(r.details) },
              { label: "IP", detail: true, render: (r) => r.ip ?? "—" },
            ]}
          />
          <Pager label="Operation log" page={page} pages={Math.ceil(logs.data.total / SIZE)} total={logs.data.total} hasMore={logs.data.has_more} onPage={setPage} />
        </>
      )}
    </div>
  );
}

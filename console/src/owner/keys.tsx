import { useState } from "preact/hooks";
import { api, pagination, query } from "../lib/api.ts";
import { formatCredit, formatInt, formatMs, formatTime } from "../lib/format.ts";
import type { ProviderKey, ProviderKeyRow } from "../lib/types.ts";
import { ErrorNote, Loading, Success } from "../ui/feedback.tsx";
import { TextField } from "../ui/field.tsx";
import { ResultStatus } from "../ui/result-status.tsx";
import { DataTable, Pager } from "../ui/table.tsx";
import { useLoad } from "../ui/use-load.ts";
import { KeyActions } from "./key-actions.tsx";
import { KeyForm } from "./key-form.tsx";
import { healthBadge, healthOf } from "./key-health.ts";

const SIZE = 20;

/**
 * The list in its overview form: the summary with the provider type, a Vertex key's
 * service account and why a key sleeps, and never a secret (this page shows none).
 */
async function loadKeys(level: string, provider: string, page: number) {
  const { data, headers } = await api.get<ProviderKeyRow[]>(`/x-keys${query({ fields: "overview", level, provider, page, size: SIZE })}`);
  return { rows: data, ...pagination(headers) };
}

const TYPE_NAMES: Record<ProviderKeyRow["ProviderType"], string> = { standard: "Standard", azure: "Azure OpenAI", vertex: "Vertex AI" };

function sleepText(row: ProviderKey): string {
  if (!row.Sleeping) return "Awake";
  const reason = row.SleepReason ?? "unknown";
  return row.SleepUntil ? `Asleep (${reason}) until ${formatTime(row.SleepUntil)}` : `Asleep (${reason}) until woken`;
}

/** A figure of today's health, or a dash when the server sent none (an older router). */
const today = (row: ProviderKeyRow, pick: (t: NonNullable<ReturnType<typeof healthOf>>["Today"]) => string) => {
  const health = healthOf(row);
  return health ? pick(health.Today) : "—";
};

/** The last error: when and which status, its (redacted) message behind a disclosure. */
function LastError({ row }: { row: ProviderKeyRow }) {
  const error = healthOf(row)?.LastError;
  if (!error) return <>—</>;
  return (
    <>
      {formatTime(error.At)} · {error.Status ? `status ${error.Status}` : "no answer"}
      {error.Message && (
        <details class="why">
          <summary>Message</summary>
          <span class="message">{error.Message}</span>
        </details>
      )}
    </>
  );
}

function HealthBadge({ row }: { row: ProviderKeyRow }) {
  const badge = healthBadge({ ...row, Health: healthOf(row) });
  return <span class={`badge ${badge.kind}`}>{badge.label}</span>;
}

export function KeysPanel() {
  const [level, setLevel] = useState("");
  const [provider, setProvider] = useState("");
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<ProviderKey | "new" | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const levelFilter = /^\d+$/.test(level) ? level : "";
  const keys = useLoad(() => loadKeys(levelFilter, provider.trim(), page), [levelFilter, provider, page]);
  const changed = (text: string) => {
    setMessage(text);
    setError(null);
    setEditing(null);
    void keys.reload();
  };
  // The form reads the key's record without its secret (fields=edit): it shows the settings
  // and the PartialKey, and takes a new secret only to rotate it.
  const edit = async (row: ProviderKey) => {
    try {
      setEditing((await api.get<ProviderKey>(`/x-keys/${row.ID}${query({ fields: "edit" })}`)).data);
    } catch (e) {
      setError(e);
    }
  };
  return (
    <div>
      {editing ? (
        <KeyForm record={editing === "new" ? undefined : editing} onDone={changed} onCancel={() => setEditing(null)} />
      ) : (
        <div class="toolbar">
          <button type="button" class="primary" onClick={() => (setMessage(null), setEditing("new"))}>
            + Add provider key
          </button>
        </div>
      )}
      {message && <Success>{message}</Success>}
      <ErrorNote error={error} />
      <div class="toolbar" role="search" aria-label="Filter keys">
        <TextField label="Level" inputMode="numeric" value={level} onInput={(v) => (setLevel(v), setPage(1))} error={level && !levelFilter ? "A Level is a positive integer" : undefined} />
        <TextField label="Provider contains" value={provider} onInput={(v) => (setProvider(v), setPage(1))} placeholder="openai.com" />
      </div>
      <ErrorNote error={keys.error} />
      <ResultStatus
        query={JSON.stringify([levelFilter, provider.trim()])}
        loading={keys.loading}
        text={keys.data ? `${keys.data.total} ${keys.data.total === 1 ? "key matches" : "keys match"}.` : ""}
      />
      {keys.loading && !keys.data && <Loading />}
      {keys.data && (
        <>
          <DataTable
            caption="Provider keys"
            rows={keys.data.rows}
            rowKey={(r) => r.ID}
            empty="No provider keys match. Add one to start serving models."
            columns={[
              { label: "ID", detail: true, numeric: true, render: (r) => r.ID },
              { label: "Name", render: (r) => r.Name || "—" },
              { label: "Level", detail: true, numeric: true, render: (r) => r.Level },
              { label: "Type", detail: true, render: (r) => TYPE_NAMES[r.ProviderType], sortValue: (r) => TYPE_NAMES[r.ProviderType] },
              { label: "Provider", detail: true, render: (r) => <span class="mono">{r.Provider}</span> },
              // A Vertex key file's tail says nothing; its service account says which key it is.
              { label: "Key", detail: true, render: (r) => <span class="mono">{r.ClientEmail ?? r.PartialKey}</span>, sortValue: (r) => r.ClientEmail ?? r.PartialKey },
              { label: "Health", render: (r) => <HealthBadge row={r} />, sortValue: (r) => healthBadge({ ...r, Health: healthOf(r) }).label },
              {
                label: "State",
                detail: true,
                render: (r) => (
                  <span class="states">
                    <span class={`badge ${r.Status ? "on" : "off"}`}>{r.Status ? "Enabled" : "Disabled"}</span>{" "}
                    <span class={r.Sleeping ? "badge sleep" : undefined}>{sleepText(r)}</span>
                    {r.NoSleep && <span class="hint">never sleeps on its own</span>}
                  </span>
                ),
              },
              { label: "Calls today", detail: true, numeric: true, render: (r) => today(r, (t) => formatInt(t.Requests)) },
              { label: "Errors today", detail: true, numeric: true, render: (r) => today(r, (t) => formatInt(t.Errors)) },
              { label: "Spend today", detail: true, numeric: true, render: (r) => today(r, (t) => formatCredit(t.Spend)) },
              { label: "Avg latency", detail: true, numeric: true, render: (r) => today(r, (t) => formatMs(t.AvgLatencyMs)) },
              { label: "Last error", detail: true, render: (r) => <LastError row={r} />, sortValue: (r) => healthOf(r)?.LastError?.At ?? "" },
              { label: "Created", detail: true, render: (r) => formatTime(r.CreatedAt) },
              { label: "Actions", render: (r) => <KeyActions row={r} onEdit={() => void edit(r)} onChanged={changed} onError={setError} /> },
            ]}
          />
          <Pager label="Provider keys" page={page} pages={keys.data.pages} total={keys.data.total} onPage={setPage} />
        </>
      )}
    </div>
  );
}

import { useState } from "preact/hooks";
import { api, ApiError, pagination, query } from "../lib/api.ts";
import { formatCredit, formatCredits, formatLimit } from "../lib/format.ts";
import type { AccountRecord } from "../lib/types.ts";
import { ConfirmDialog } from "../ui/confirm.tsx";
import { ErrorNote, Loading, Success } from "../ui/feedback.tsx";
import { SelectField, TextField } from "../ui/field.tsx";
import { SecretOnce } from "../ui/secret-once.tsx";
import { ResultStatus } from "../ui/result-status.tsx";
import { DataTable, Pager } from "../ui/table.tsx";
import { useLoad } from "../ui/use-load.ts";
import { AccountForm } from "./account-form.tsx";
import { toggleSelected, useSelection } from "./selection.ts";

const ORDERS: Array<[string, string]> = [
  ["id", "ID ↑"], ["-id", "ID ↓"], ["name", "Name A–Z"], ["-name", "Name Z–A"], ["email", "Email A–Z"], ["-email", "Email Z–A"],
  ["created", "Oldest first"], ["-created", "Newest first"], ["level", "Level ↑"], ["-level", "Level ↓"],
];

/** Direct accounts or all descendants: search, level filter, order, pages; create, edit, delete. */
export function AccountsPanel(props: { bounds: AccountRecord }) {
  const [scope, setScope] = useState<"x-users" | "x-dna">("x-users");
  const [field, setField] = useState<"name" | "email">("name");
  const [search, setSearch] = useState("");
  const [level, setLevel] = useState("");
  const [order, setOrder] = useState("id");
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<AccountRecord | "new" | null>(null);
  const [deleting, setDeleting] = useState<AccountRecord | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [newKey, setNewKey] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const selected = useSelection();
  const levelOk = level === "" || /^\d+$/.test(level);
  const list = useLoad(async () => {
    const q = query({ [field]: search.trim(), level: levelOk ? level : "", order, page, size: 20 });
    const { data, headers } = await api.get<AccountRecord[]>(`/${scope}${q}`);
    return { rows: data, ...pagination(headers) };
  }, [scope, field, search, level, order, page]);
  const reset = <T,>(set: (v: T) => void) => (v: T) => (set(v), setPage(1));
  const done = (text: string, key?: string) => {
    setEditing(null);
    setMessage(text);
    setNewKey(key ?? null);
    setError(null);
    void list.reload();
  };
  const remove = async () => {
    const account = deleting!;
    setDeleting(null);
    try {
      const { data } = await api.del<{ CreditReturned: number }>(`/x-users/${account.ID}`);
      done(`Account ${account.Name} deleted; ${formatCredits(data.CreditReturned)} returned to its parent.`);
    } catch (e) {
      setError(e instanceof ApiError && e.code === "has_descendants" ? new Error(`${account.Name} still has accounts under it: delete or move those first. (${e.message})`) : e);
    }
  };
  return (
    <div>
      {editing ? (
        <AccountForm record={editing === "new" ? undefined : editing} bounds={props.bounds} onDone={done} onCancel={() => setEditing(null)} />
      ) : (
        <div class="toolbar">
          <button type="button" class="primary" onClick={() => (setMessage(null), setNewKey(null), setEditing("new"))}>
            + Create account
          </button>
        </div>
      )}
      {message && <Success>{message}</Success>}
      {newKey && <SecretOnce label="The new account's API key." value={newKey} onDismiss={() => setNewKey(null)} />}
      <ErrorNote error={error} />
      <div class="toolbar" role="search" aria-label="Find accounts">
        <SelectField label="Show" value={scope} onChange={(v) => reset(setScope)(v as typeof scope)} options={[["x-users", "Direct accounts"], ["x-dna", "All descendants"]]} />
        <SelectField label="Search in" value={field} onChange={(v) => reset(setField)(v as typeof field)} options={[["name", "Name"], ["email", "Email"]]} />
        <TextField label="Search" type="search" value={search} onInput={reset(setSearch)} />
        <TextField label="Level" inputMode="numeric" value={level} onInput={reset(setLevel)} error={levelOk ? undefined : "A whole number"} />
        <SelectField label="Order" value={order} onChange={reset(setOrder)} options={ORDERS} />
      </div>
      <ErrorNote error={list.error} />
      <ResultStatus
        query={JSON.stringify([scope, field, search, level, order])}
        loading={list.loading}
        text={list.data ? `${list.data.total} ${list.data.total === 1 ? "account matches" : "accounts match"}.` : ""}
      />
      {list.loading && !list.data && <Loading />}
      {list.data && (
        <>
          <DataTable
            caption="Accounts"
            rows={list.data.rows}
            rowKey={(a) => a.ID}
            empty={search || level ? "No account matches." : "No accounts yet. Create one above."}
            columns={[
              { label: "Select", sortable: false, render: (a) => <input type="checkbox" aria-label={`Select ${a.Name} for batch credit`} checked={selected.includes(a.ID)} onChange={(e) => toggleSelected(a.ID, (e.currentTarget as HTMLInputElement).checked)} /> },
              { label: "ID", numeric: true, render: (a) => a.ID },
              { label: "Name", render: (a) => a.Name },
              { label: "Email", render: (a) => a.Email },
              { label: "Alias", detail: true, render: (a) => a.Alias ?? "—" },
              { label: "Level", detail: true, numeric: true, render: (a) => a.Level },
              { label: "Balance", numeric: true, render: (a) => formatCredit(a.Balance) },
              { label: "RPM", detail: true, numeric: true, render: (a) => formatLimit(a.RPM) },
              { label: "Monthly limit", detail: true, numeric: true, render: (a) => (a.HardLimit === null ? "unlimited" : formatCredit(a.HardLimit)) },
              {
                label: "Actions",
                render: (a) => (
                  <div class="cell-actions">
                    <button type="button" aria-label={`Edit ${a.Name}`} onClick={() => (setMessage(null), setEditing(a))}>Edit</button>
                    <button type="button" class="danger" aria-label={`Delete ${a.Name}`} onClick={() => setDeleting(a)}>Delete</button>
                  </div>
                ),
              },
            ]}
          />
          <Pager label="Accounts" page={page} pages={list.data.pages} total={list.data.total} onPage={setPage} />
          {selected.length > 0 && <p class="hint">{selected.length} selected for batch credit: IDs {selected.join(", ")}. Open “Batch credit” to continue.</p>}
        </>
      )}
      <ConfirmDialog open={deleting !== null} title={`Delete ${deleting?.Name}?`} confirmLabel="Delete account" danger onConfirm={() => void remove()} onCancel={() => setDeleting(null)}>
        <p>Its key stops working at once and its unexpired credit returns to its parent. Its usage stays in the bills. This cannot be undone.</p>
      </ConfirmDialog>
    </div>
  );
}

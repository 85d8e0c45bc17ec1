import { useState } from "preact/hooks";
import { api, ApiError } from "../lib/api.ts";
import type { ProviderKey } from "../lib/types.ts";
import { ConfirmDialog } from "../ui/confirm.tsx";
import { KeyTest } from "./key-test.tsx";

/**
 * Sleep / wake, enable / disable (PUT Status), edit, test and delete of one key. Delete
 * asks first; when the router answers 409 (the last enabled key of a routed Level)
 * its explanation is shown and the owner may repeat with ?force=true.
 */
export function KeyActions(props: { row: ProviderKey; onEdit: () => void; onChanged: (message: string) => void; onError: (e: unknown) => void }) {
  const { row } = props;
  const [confirm, setConfirm] = useState<"delete" | "force" | null>(null);
  const [conflict, setConflict] = useState("");
  const act = async (work: () => Promise<unknown>, message: string) => {
    try {
      await work();
      props.onChanged(message);
    } catch (e) {
      props.onError(e);
    }
  };
  const remove = async (force: boolean) => {
    setConfirm(null);
    try {
      await api.del(`/x-keys/${row.ID}${force ? "?force=true" : ""}`);
      props.onChanged(`Key ${row.ID} deleted.`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 409 && !force) {
        setConflict(e.message);
        setConfirm("force");
      } else props.onError(e);
    }
  };
  const label = `key ${row.ID}${row.Name ? ` (${row.Name})` : ""}`;
  return (
    <div class="cell-actions">
      <button type="button" onClick={props.onEdit} aria-label={`Edit ${label}`}>
        Edit
      </button>
      {row.Sleeping ? (
        <button type="button" aria-label={`Wake ${label}`} onClick={() => act(() => api.post(`/x-keys/${row.ID}/wake?fields=summary`), `Key ${row.ID} woken.`)}>
          Wake
        </button>
      ) : (
        <button type="button" aria-label={`Sleep ${label}`} onClick={() => act(() => api.post(`/x-keys/${row.ID}/sleep?fields=summary`), `Key ${row.ID} put to sleep.`)}>
          Sleep
        </button>
      )}
      <button
        type="button"
        aria-label={`${row.Status ? "Disable" : "Enable"} ${label}`}
        onClick={() => act(() => api.put(`/x-keys/${row.ID}?fields=summary`, { Status: !row.Status }), `Key ${row.ID} ${row.Status ? "disabled" : "enabled"}.`)}
      >
        {row.Status ? "Disable" : "Enable"}
      </button>
      <button type="button" class="danger" aria-label={`Delete ${label}`} onClick={() => setConfirm("delete")}>
        Delete
      </button>
      <KeyTest id={row.ID} label={label} />
      <ConfirmDialog open={confirm === "delete"} title={`Delete ${label}?`} confirmLabel="Delete key" danger onConfirm={() => void remove(false)} onCancel={() => setConfirm(null)}>
        <p>
          The key is removed from Level {row.Level} for good. Another usable key should remain in this Level. This cannot be undone.
        </p>
      </ConfirmDialog>
      <ConfirmDialog open={confirm === "force"} title={`Delete ${label} anyway?`} confirmLabel="Delete anyway" danger onConfirm={() => void remove(true)} onCancel={() => setConfirm(null)}>
        <p class="note warn">{conflict}</p>
        <p>Requests for the models of Level {row.Level} will fail with 503 until another key is added there.</p>
      </ConfirmDialog>
    </div>
  );
}

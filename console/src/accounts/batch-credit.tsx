import { useEffect, useState } from "preact/hooks";
import { api } from "../lib/api.ts";
import type { BatchEntryResult, BatchResult as ServerBatchResult } from "../lib/types.ts";
import { formatCredit, formatCredits } from "../lib/format.ts";
import { useConsole } from "../shell/context.ts";
import { ErrorNote, Success } from "../ui/feedback.tsx";
import { TextField } from "../ui/field.tsx";
import { DataTable } from "../ui/table.tsx";
import { useAction } from "../ui/use-load.ts";
import { useSelection } from "./selection.ts";

/** The server's answer, its applied entries named for the preview (looked up below). */
type BatchResult = Omit<ServerBatchResult, "results"> & { results: Array<BatchEntryResult & { Name?: string; Email?: string }> };

const parseIds = (text: string) => text.split(/[\s,]+/).filter(Boolean);

/**
 * The names and emails of the accounts a batch changes, so a preview can be read before
 * it is applied: one look-up per applied entry (skipped ones may be unknown, and stay bare).
 */
async function withNames(result: BatchResult): Promise<BatchResult> {
  const named = await Promise.all(
    result.results.map(async (entry) => {
      if (entry.status !== "applied") return entry;
      try {
        const { data } = await api.get<{ Name: string; Email: string }>(`/x-dna/${entry.ID}`);
        return { ...entry, Name: data.Name, Email: data.Email };
      } catch {
        return entry;
      }
    }),
  );
  return { ...result, results: named };
}

function Results({ result }: { result: BatchResult }) {
  return (
    <section class="card" aria-labelledby="batch-res-h" data-testid={result.DryRun ? "batch-preview" : "batch-applied"}>
      <h3 id="batch-res-h">{result.DryRun ? "Preview (nothing changed yet)" : "Applied"}</h3>
      <p>
        {result.summary.applied} {result.DryRun ? "would be applied" : "applied"}, {result.summary.skipped} skipped. Your credit change:{" "}
        {formatCredits(result.summary.ParentCreditChange)}; accounts' change: {formatCredits(result.summary.ChildrenCreditChange)}.
      </p>
      <DataTable
        caption={result.DryRun ? "Batch credit preview" : "Batch credit results"}
        rows={result.results}
        rowKey={(r) => r.ID}
        empty="No accounts."
        columns={[
          { label: "Account ID", numeric: true, render: (r) => r.ID },
          { label: "Name", render: (r) => r.Name ?? "—" },
          { label: "Email", render: (r) => r.Email ?? "—" },
          { label: "Result", render: (r) => <span class={`badge ${r.status === "applied" ? "on" : "off"}`}>{result.DryRun && r.status === "applied" ? "would apply" : r.status}</span> },
          { label: "Balance before", numeric: true, render: (r) => formatCredit(r.BalanceBefore) },
          { label: "Balance after", numeric: true, render: (r) => formatCredit(r.BalanceAfter) },
          { label: "Reason", render: (r) => r.reason ?? "" },
        ]}
      />
    </section>
  );
}

/** Credit for many accounts: always a dry run first; Apply sends exactly what was previewed. */
export function BatchCreditPanel() {
  const { refreshStatus } = useConsole();
  const selection = useSelection();
  const [ids, setIds] = useState(selection.join(", "));
  const [credit, setCredit] = useState("");
  const [days, setDays] = useState("");
  const [preview, setPreview] = useState<{ input: string; result: BatchResult } | null>(null);
  const [applied, setApplied] = useState<BatchResult | null>(null);
  const action = useAction();
  useEffect(() => setIds(selection.join(", ")), [selection.join(",")]);
  const idList = parseIds(ids);
  const errors = {
    ids: idList.some((id) => !/^\d+$/.test(id)) ? "Account IDs are whole numbers" : undefined,
    credit: credit.trim() && (!Number.isFinite(Number(credit)) || Number(credit) === 0 || Math.abs(Number(credit)) > 1e6) ? "A non-zero number up to 1,000,000" : undefined,
    days: days.trim() && !(/^\d+$/.test(days) && Number(days) >= 1) ? "A whole number ≥ 1" : undefined,
  };
  const ready = idList.length > 0 && credit.trim() !== "" && !Object.values(errors).some(Boolean);
  const body = (dryRun: boolean) => ({ IDs: idList.map(Number), CreditGranted: Number(credit), ...(days.trim() ? { Days: Number(days) } : {}), DryRun: dryRun });
  const inputKey = JSON.stringify(body(true));
  const previewCurrent = preview !== null && preview.input === inputKey;
  const runPreview = () =>
    action.run(async () => {
      setApplied(null);
      const { data } = await api.post<BatchResult>("/x-users/batch-credit", body(true));
      setPreview({ input: inputKey, result: await withNames(data) });
    });
  const apply = () =>
    action.run(async () => {
      const { data } = await api.post<BatchResult>("/x-users/batch-credit", body(false));
      setApplied(await withNames(data));
      setPreview(null);
      await refreshStatus();
      return `Batch credit applied: ${data.summary.applied} accounts changed, ${data.summary.skipped} skipped.`;
    });
  return (
    <div>
      <form class="card" onSubmit={(e) => (e.preventDefault(), ready && void runPreview())} aria-labelledby="batch-h" noValidate>
        <h3 id="batch-h">Add or deduct credit</h3>
        <TextField label="Account IDs" value={ids} onInput={setIds} placeholder="7, 8, 12" hint="Comma-separated; tick accounts in the Accounts list to fill this in." error={errors.ids} />
        <div class="grid">
          <TextField label="Credit per account" inputMode="decimal" value={credit} onInput={setCredit} hint="Positive adds (from your balance unless you are an owner), negative deducts" error={errors.credit} />
          <TextField label="Valid for (days)" inputMode="numeric" value={days} onInput={setDays} hint="Optional expiry of the added credit" error={errors.days} />
        </div>
        <ErrorNote error={action.error} />
        <div class="actions">
          <button type="submit" disabled={!ready || action.busy}>
            Preview (dry run)
          </button>
          <button type="button" class="primary" disabled={!previewCurrent || action.busy} onClick={() => void apply()}>
            Apply
          </button>
          {!previewCurrent && ready && <span class="hint">Preview first; Apply sends exactly what was previewed.</span>}
        </div>
      </form>
      {action.done && <Success>{action.done}</Success>}
      {preview && previewCurrent && <Results result={preview.result} />}
      {applied && <Results result={applied} />}
    </div>
  );
}

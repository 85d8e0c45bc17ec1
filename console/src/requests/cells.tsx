import type { RequestRecord } from "../lib/types.ts";

/** A call's status as a badge: success green, 4xx (the client's) neutral, 5xx and refusals warning. */
export function StatusBadge({ status }: { status: number }) {
  const kind = status < 400 ? "on" : status >= 500 || status === 429 ? "sleep" : "off";
  return <span class={`badge ${kind}`}>{status}</span>;
}

export const accountName = (r: RequestRecord) => `${r.account.name ?? "(deleted)"} #${r.account.id}`;

/** The model asked for, and where MODEL_MAPPER sent it when that differs. */
export function ModelCell({ record }: { record: RequestRecord }) {
  const asked = record.requested_model ?? "—";
  const served = record.effective_model;
  return (
    <span class="mono">
      {asked}
      {served && served !== asked ? ` → ${served}` : ""}
    </span>
  );
}
